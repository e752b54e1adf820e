"""Cases for the creation and random groups: full, iota, zeros/ones/empty and
the *_like ops, arange, linspace, eye, tril/triu, and the random ops (whose
values cannot match torch's mt19937: compare="shape" checks dtype and shape;
tensor/creation_test.go checks reproducibility and statistics)."""
import torch
from golden import case, T, S, ALL, FLOATS, INTS, DT

G = "creation"


def kind(dt):
    return "bool" if dt == "bool" else ("int" if dt in INTS else "randn")


# ---------------------------------------------------------------- full
for dt in ALL:
    for v in [0, 3, -2, 2.5, -0.0, True]:
        if dt == "bool" and v not in (0, True):
            continue
        case(G, "full", lambda v=v, dt=dt: torch.full([2, 3], v, dtype=DT[dt]), [], {"shape": [2, 3], "value": v, "dtype": dt})
for dt in FLOATS:
    for v in [float("inf"), float("-inf"), float("nan"), 1e-40] + ([] if dt == "f16" else [70000.0]):
        case(G, "full", lambda v=v, dt=dt: torch.full([3], v, dtype=DT[dt]), [], {"shape": [3], "value": v, "dtype": dt})
case(G, "full", lambda: torch.full([2], 2), [], {"shape": [2], "value": 2}, id="full/infer-int")
case(G, "full", lambda: torch.full([2], 2.5), [], {"shape": [2], "value": 2.5}, id="full/infer-float")
case(G, "full", lambda: torch.full([2], True), [], {"shape": [2], "value": True}, id="full/infer-bool")
case(G, "full", lambda: torch.full([], 7, dtype=torch.int32), [], {"shape": [], "value": 7, "dtype": "i32"}, id="full/0d")
case(G, "full", lambda: torch.full([0, 3], 7.0), [], {"shape": [0, 3], "value": 7.0, "dtype": "f32"}, id="full/empty")
case(G, "full", lambda: torch.full([2], -200, dtype=torch.uint8), [], {"shape": [2], "value": -200, "dtype": "u8"}, id="full/u8-wrap")
case(G, "full", None, [], {"shape": [2], "value": 300, "dtype": "u8"}, error="without overflow")
case(G, "full", None, [], {"shape": [2], "value": 7e4, "dtype": "f16"}, error="without overflow")
case(G, "full", None, [], {"shape": [2], "value": float("nan"), "dtype": "i32"}, error="without overflow")
case(G, "full", None, [], {"shape": [2, -1], "value": 1}, error="negative dimension")


# ---------------------------------------------------------------- iota
def iota(shape, dim, dt):
    n = shape[dim]
    view = [1] * len(shape)
    view[dim] = n
    return torch.arange(n).reshape(view).expand(shape).to(DT[dt]).clone()


for dt in ["i64", "i32", "f32", "f64", "bf16", "u8", "i16"]:
    for shape, dim in [([5], 0), ([2, 3], 0), ([2, 3], 1), ([2, 3, 4], -1), ([3, 0], 0)]:
        case(G, "iota", lambda s=shape, d=dim, dt=dt: iota(s, d, dt), [], {"shape": shape, "dim": dim, "dtype": dt})
case(G, "iota", lambda: torch.tensor([False, True, True]), [], {"shape": [3], "dim": 0, "dtype": "bool"}, id="iota/bool")
case(G, "iota", lambda: torch.tensor(0), [], {"shape": [], "dim": 0, "dtype": "i64"}, id="iota/0d")
case(G, "iota", None, [], {"shape": [2, 3], "dim": 2}, error="dimension out of range")

# ---------------------------------------------------------------- zeros/ones/empty and *_like
for name, fn in [("zeros", torch.zeros), ("ones", torch.ones), ("empty", torch.zeros)]:
    for dt in ALL:
        case(G, name, lambda fn=fn, dt=dt: fn([2, 3], dtype=DT[dt]), [], {"shape": [2, 3], "dtype": dt})
    case(G, name, lambda fn=fn: fn([]), [], {"shape": []}, id=name + "/0d-default")
    case(G, name, lambda fn=fn: fn([0, 4]), [], {"shape": [0, 4]}, id=name + "/empty")
    case(G, name, None, [], {"shape": [-3]}, error="negative dimension")
for name, fn in [("zeros_like", torch.zeros_like), ("ones_like", torch.ones_like), ("empty_like", torch.zeros_like)]:
    for dt in ALL:
        case(G, name, lambda x, fn=fn: fn(x), [T([3, 2], dt, kind(dt), layout="transposed")])
    case(G, name, lambda x, fn=fn: fn(x, dtype=torch.int32), [T([2, 2], "f32", layout="strided")], {"dtype": "i32"})
    case(G, name, lambda x, fn=fn: fn(x), [T([], "f64")])
    case(G, name, lambda x, fn=fn: fn(x), [T([0, 2], "bf16")])
for dt in ALL:
    for v in [2, -1.5, True]:
        if dt == "u8" and v == -1.5:
            case(G, "full_like", None, [T([2, 3], dt, kind(dt))], {"value": v}, error="without overflow")
            continue
        case(G, "full_like", lambda x, v=v: torch.full_like(x, v), [T([2, 3], dt, kind(dt))], {"value": v})
case(G, "full_like", lambda x: torch.full_like(x, 2.5, dtype=torch.float64), [T([2, 2], "i32", "int", layout="transposed")],
     {"value": 2.5, "dtype": "f64"})
case(G, "full_like", lambda x: torch.full_like(x, 4), [T([], "u8", "int")], {"value": 4})

# ---------------------------------------------------------------- arange
for (s, e, st) in [(0, 10, 1), (1, 10, 3), (10, 0, -3), (0, 1, 0.1), (-1.5, 2.5, 0.5), (0, 5.5, 1), (2, 2, 1),
                   (0.0, 1.0, 0.3), (1, -1, -0.25), (0, 64, 1)]:
    case(G, "arange", lambda s=s, e=e, st=st: torch.arange(s, e, st), [], {"start": s, "end": e, "step": st})
for dt in ["f32", "f64", "i32", "i64", "bf16", "f16", "i16", "u8"]:
    case(G, "arange", lambda dt=dt: torch.arange(0, 12, 2, dtype=DT[dt]), [], {"start": 0, "end": 12, "step": 2, "dtype": dt})
    if dt in FLOATS:
        case(G, "arange", lambda dt=dt: torch.arange(-1, 1, 0.125, dtype=DT[dt]), [], {"start": -1, "end": 1, "step": 0.125, "dtype": dt})
case(G, "arange", lambda: torch.arange(5), [], {"end": 5}, id="arange/end-only")
case(G, "arange", None, [], {"start": 0, "end": 1, "step": 0}, error="step must be nonzero")
case(G, "arange", None, [], {"start": 0, "end": 5, "step": -1}, error="inconsistent with step sign")

# ---------------------------------------------------------------- linspace
for steps in [0, 1, 2, 3, 5, 7, 10, 17, 33, 50, 64]:
    for (s, e) in [(0, 1), (-3.5, 2.25), (10, -10), (0.1, 0.7), (-3.3, 7.9), (1e-3, 123.456)]:
        # The direct kernel is bit-exact (TestLinspaceBitExact); the
        # decomposition has no fused multiply-add and cancels near 0.
        case(G, "linspace", lambda s=s, e=e, n=steps: torch.linspace(s, e, n), [], {"start": s, "end": e, "steps": steps, "dtype": "f32"},
             rtol=1e-6, atol=1e-6)
for dt in ["f64", "bf16", "f16"]:
    for (s, e, n) in [(0, 1, 7), (-2.5, 4, 11)]:
        case(G, "linspace", lambda s=s, e=e, n=n, dt=dt: torch.linspace(s, e, n, dtype=DT[dt]), [], {"start": s, "end": e, "steps": n, "dtype": dt})
for dt in ["i64", "i32", "u8", "i16"]:
    for (s, e, n) in [(0, 10, 4), (3, 100, 7), (0, 1, 5)]:
        case(G, "linspace", lambda s=s, e=e, n=n, dt=dt: torch.linspace(s, e, n, dtype=DT[dt]), [], {"start": s, "end": e, "steps": n, "dtype": dt})
case(G, "linspace", lambda: torch.linspace(-5, 5, 4, dtype=torch.int64), [], {"start": -5, "end": 5, "steps": 4, "dtype": "i64"})
case(G, "linspace", None, [], {"start": 0, "end": 1, "steps": -1}, error="non-negative")

# ---------------------------------------------------------------- eye
for (n, m) in [(3, 3), (2, 4), (4, 2), (0, 3), (1, 1)]:
    for dt in ["f32", "i64", "bool", "bf16"]:
        case(G, "eye", lambda n=n, m=m, dt=dt: torch.eye(n, m).to(DT[dt]), [], {"n": n, "m": m, "dtype": dt})
case(G, "eye", lambda: torch.eye(3), [], {"n": 3}, id="eye/default")
case(G, "eye", None, [], {"n": -1}, error="greater or equal to 0")

# ---------------------------------------------------------------- tril / triu
for name, fn in [("tril", torch.tril), ("triu", torch.triu)]:
    for d in [-2, -1, 0, 1, 3, 10]:
        case(G, name, lambda x, fn=fn, d=d: fn(x, d), [T([4, 5], "f32")], {"diagonal": d})
    for dt in ALL:
        case(G, name, lambda x, fn=fn: fn(x), [T([3, 3], dt, kind(dt), layout="transposed")])
    case(G, name, lambda x, fn=fn: fn(x, 1), [T([2, 3, 4], "f64", layout="strided")], {"diagonal": 1})
    case(G, name, lambda x, fn=fn: fn(x, -1), [T([2, 1, 3, 2], "i32", "int")], {"diagonal": -1})
    case(G, name, lambda x, fn=fn: fn(x), [T([0, 3], "f32")])
    case(G, name, lambda x, fn=fn: fn(x), [T([3, 3], "f32", "edge")])
    case(G, name, None, [T([4], "f32")], error="at least 2 dimensions")

# ---------------------------------------------------------------- random (shape and dtype only)
R = dict(compare="shape")
for dt in FLOATS:
    case(G, "rand", lambda dt=dt: torch.rand([3, 4], dtype=DT[dt]), [], {"shape": [3, 4], "dtype": dt}, **R)
    case(G, "randn", lambda dt=dt: torch.randn([5], dtype=DT[dt]), [], {"shape": [5], "dtype": dt}, **R)
    case(G, "uniform", lambda dt=dt: torch.empty([2, 2], dtype=DT[dt]).uniform_(-1, 2), [], {"shape": [2, 2], "low": -1.0, "high": 2.0, "dtype": dt}, **R)
    case(G, "normal", lambda dt=dt: torch.empty([6], dtype=DT[dt]).normal_(2, 3), [], {"shape": [6], "mean": 2.0, "std": 3.0, "dtype": dt}, **R)
case(G, "rand", lambda: torch.rand([]), [], {"shape": []}, id="rand/0d", **R)
case(G, "rand", lambda: torch.rand([0, 2]), [], {"shape": [0, 2]}, id="rand/empty", **R)
case(G, "randn", lambda: torch.randn([2, 0]), [], {"shape": [2, 0]}, id="randn/empty", **R)
case(G, "rand", None, [], {"shape": [2], "dtype": "i64"}, error="not implemented for 'i64'")
case(G, "normal", None, [], {"shape": [2], "std": -1.0}, error="std >= 0.0")
for dt in ["i64", "i32", "u8", "i16", "f32"]:
    case(G, "randint", lambda dt=dt: torch.randint(0, 10, [3, 3], dtype=DT[dt]), [], {"shape": [3, 3], "low": 0, "high": 10, "dtype": dt}, **R)
case(G, "randint", lambda: torch.randint(-5, 5, [4]), [], {"shape": [4], "low": -5, "high": 5}, id="randint/default", **R)
case(G, "randint", None, [], {"shape": [4], "low": 5, "high": 5}, error="from=5 >= to=5")
for dt in FLOATS:
    case(G, "bernoulli", lambda x: torch.zeros_like(x), [T([3, 4], dt, "rand", layout="transposed")], **R)
    case(G, "bernoulli", lambda x: torch.zeros_like(x), [T([5], dt, "rand")], {"p": 0.3}, **R)
case(G, "bernoulli", lambda x: torch.bernoulli(x), [T([], "f32", "rand")], **R)
case(G, "bernoulli", None, [T([2], "f32", "rand")], {"p": 1.5}, error="bernoulli_ expects p to be in [0, 1]")
for dt in ["f32", "f64", "bf16"]:
    case(G, "multinomial", lambda x: torch.multinomial(x, 3, True), [T([2, 5], dt, "rand")], {"num_samples": 3, "replacement": True}, **R)
    case(G, "multinomial", lambda x: torch.multinomial(x, 4), [T([6], dt, "pos", layout="strided")], {"num_samples": 4}, **R)
case(G, "multinomial", lambda x: torch.multinomial(x, 10, True), [T([3], "f32", "pos")], {"num_samples": 10, "replacement": True}, **R)
case(G, "multinomial", None, [T([3], "f32", "pos")], {"num_samples": 4}, error="without replacement")
case(G, "multinomial", None, [T([2, 2, 2], "f32", "pos")], {"num_samples": 1}, error="1 or 2 dim")
# Value-dependent errors of bernoulli (p outside [0, 1]) and multinomial
# (negative, non-finite or all-zero weights) come from the direct kernels
# only; tensor/creation_test.go checks them.
for n in [0, 1, 7, 40]:
    case(G, "randperm", lambda n=n: torch.randperm(n), [], {"n": n}, **R)
case(G, "randperm", lambda: torch.randperm(5, dtype=torch.int32), [], {"n": 5, "dtype": "i32"}, **R)
case(G, "randperm", lambda: torch.randperm(5, dtype=torch.float32), [], {"n": 5, "dtype": "f32"}, **R)
case(G, "randperm", None, [], {"n": -1}, error="non-negative")
for dt, lane in [("i64", 0), ("i64", 1), ("i32", 3)]:
    case(G, "random_bits", lambda dt=dt: torch.zeros([2, 3], dtype=DT[dt]), [], {"shape": [2, 3], "dtype": dt, "lane": lane}, **R)
case(G, "random_bits", lambda: torch.zeros([2, 5], dtype=torch.int64), [], {"shape": [2, 5], "period": 2, "stream": 1}, **R)
case(G, "random_bits", None, [], {"shape": [2], "dtype": "f32"}, error="must be i32 or i64")
case(G, "random_bits", None, [], {"shape": [2], "dtype": "i64", "lane": 2}, error="lane 2 out of range")
