"""Cases for the reduce group: the reduce / argmax / argmin / cumulative / sort
primitives and the reductions, scans, norms, softmaxes and selections built
from them."""
import math

import torch
import golden
from golden import T, ALL, FLOATS, INTS

G = "reduce"


def _half_fallback(fn):
    """PyTorch 1.13's CPU lacks some f16/bf16 kernels (prod, cumsum, topk,
    softmax on f16, ...). Newer releases compute those in float32 and round
    once; where 1.13 refuses, the reference does the same."""
    if fn is None:
        return None

    def f(*args):
        try:
            return fn(*args)
        except RuntimeError as e:
            if "not implemented for" not in str(e):
                raise
            half = [a.dtype for a in args if isinstance(a, torch.Tensor) and a.dtype in (torch.float16, torch.bfloat16)]
            if not half:
                raise
            up = [a.float() if isinstance(a, torch.Tensor) and a.dtype in (torch.float16, torch.bfloat16) else a for a in args]
            res = fn(*up)
            one = not isinstance(res, tuple)
            res = (res,) if one else res
            res = tuple(r.to(half[0]) if r.dtype == torch.float32 else r for r in res)
            return res[0] if one else res
    return f


def case(group, op, fn, inputs, attrs=None, **kw):
    golden.case(group, op, _half_fallback(fn), inputs, attrs, **kw)

NUMERIC = INTS + FLOATS
INF, NAN = math.inf, math.nan


def kind_for(dt, float_kind="randn"):
    if dt == "bool":
        return "bool"
    if dt in FLOATS:
        return float_kind
    return "int"


def norm_dims(dims, r):
    if not dims:
        return list(range(r))
    return sorted(d % max(r, 1) for d in dims) if r else []


# ---------------------------------------------------------------- reduce primitive

IDENT = {"max": lambda dt: -INF if dt.is_floating_point else (False if dt == torch.bool else torch.iinfo(dt).min),
         "min": lambda dt: INF if dt.is_floating_point else (True if dt == torch.bool else torch.iinfo(dt).max)}


def ref_reduce(kind, dims, keepdim):
    """The reduce primitive: keeps the dtype; bool sum/prod are or/and; an
    empty reduction gives the identity."""
    def f(x):
        r = x.dim()
        if r == 0:
            return x.clone()
        ds = norm_dims(dims, r)
        kept = [d for d in range(r) if d not in ds]
        n = 1
        for d in ds:
            n *= x.shape[d]
        y = x.permute(kept + ds).reshape([x.shape[d] for d in kept] + [n])
        if kind == "sum":
            out = y.any(-1) if x.dtype == torch.bool else y.sum(-1, dtype=x.dtype)
        elif kind == "prod":
            out = y.all(-1) if x.dtype == torch.bool else y.prod(-1, dtype=x.dtype)
        elif n == 0:
            out = torch.full([x.shape[d] for d in kept], IDENT[kind](x.dtype), dtype=x.dtype)
        else:
            out = y.amax(-1) if kind == "max" else y.amin(-1)
        if keepdim:
            out = out.reshape([1 if d in ds else x.shape[d] for d in range(r)])
        return out
    return f


for kind in ["sum", "prod", "max", "min"]:
    for dt in ALL:
        fk = "unit" if kind == "prod" else "randn"
        k = kind_for(dt, fk)
        case(G, "reduce", ref_reduce(kind, [1], False), [T([3, 4], dt, k)], {"kind": kind, "dims": [1]})
        case(G, "reduce", ref_reduce(kind, [], False), [T([2, 3], dt, k, layout="transposed")], {"kind": kind})
    case(G, "reduce", ref_reduce(kind, [0, 2], True), [T([2, 3, 4], "f32", "unit", layout="strided")],
         {"kind": kind, "dims": [0, 2], "keepdim": True})
    # Rows of 4 edge values: their sums cancel to the same result in every
    # summation order (rows of 5 mix 1e30, -1e30 and 1, whose sum PyTorch
    # itself gives as 0 or 1 depending on the kernel).
    case(G, "reduce", ref_reduce(kind, [-1], False), [T([3, 4], "f64", "edge")], {"kind": kind, "dims": [-1]})
    for dt in ["f32", "i32", "bool"]:
        case(G, "reduce", ref_reduce(kind, [0], False), [T([0, 3], dt, kind_for(dt))], {"kind": kind, "dims": [0]})
    case(G, "reduce", ref_reduce(kind, [0], False), [T([], "i16", "int")], {"kind": kind, "dims": [0]})
    case(G, "reduce", ref_reduce(kind, [1], False), [T([3, 4], "i8", "big")], {"kind": kind, "dims": [1]})
case(G, "reduce", None, [T([2, 3], "f32")], {"kind": "mean"}, error="unknown kind")
case(G, "reduce", None, [T([2, 3], "f32")], {"kind": "sum", "dims": [2]}, error="out of range")
case(G, "reduce", None, [T([2, 3], "f32")], {"kind": "sum", "dims": [1, -1]}, error="multiple times")

# ---------------------------------------------------------------- sum, prod, mean

for dt in ALL:
    case(G, "sum", lambda x: x.sum(), [T([3, 4], dt, kind_for(dt))])
    case(G, "sum", lambda x: x.sum(0, keepdim=True), [T([3, 4], dt, kind_for(dt), layout="transposed")],
         {"dims": [0], "keepdim": True})
    case(G, "prod", lambda x: x.prod(1), [T([3, 4], dt, kind_for(dt, "unit"))], {"dims": [1]})
    case(G, "prod", lambda x: x.prod(), [T([2, 3], dt, kind_for(dt, "pos"), layout="strided")])
case(G, "sum", lambda x: x.sum([0, 2]), [T([2, 3, 4], "f32", layout="strided")], {"dims": [0, 2]})
case(G, "sum", lambda x: x.sum([-1, 0], keepdim=True), [T([2, 3, 4], "bf16")], {"dims": [-1, 0], "keepdim": True})
case(G, "sum", lambda x: x.sum(1), [T([2, 64], "f32", "rand")], {"dims": [1]})
case(G, "sum", lambda x: x.sum(1), [T([2, 64], "f16", "rand")], {"dims": [1]}, rtol=2e-3)
case(G, "sum", lambda x: x.sum(1), [T([2, 64], "bf16", "rand")], {"dims": [1]})
case(G, "sum", lambda x: x.sum(), [T([4, 4], "i64", "big")])
case(G, "sum", lambda x: x.sum(), [T([4, 4], "i32", "big")])
case(G, "sum", lambda x: x.sum(1), [T([3, 4], "f32", "edge")], {"dims": [1]})
case(G, "sum", lambda x: x.sum(0), [T([0, 3], "f32")], {"dims": [0]})
case(G, "sum", lambda x: x.sum(), [T([0], "i32", "int")])
case(G, "sum", lambda x: x.sum(), [T([], "f64")])
case(G, "sum", lambda x: x.sum(-1), [T([], "u8", "int")], {"dims": [-1]})
case(G, "sum", lambda x: x.sum(1, dtype=torch.float64), [T([3, 4], "f32")], {"dims": [1], "dtype": "f64"})
case(G, "sum", lambda x: x.sum(dtype=torch.int8), [T([3, 4], "i8", "big")], {"dtype": "i8"})
case(G, "sum", lambda x: x.sum(dtype=torch.float32), [T([3, 4], "i64", "int")], {"dtype": "f32"})
case(G, "sum", lambda x: x.sum(dtype=torch.int32), [T([3, 4], "f32", "randn")], {"dtype": "i32"})
case(G, "sum", None, [T([2, 3], "f32")], {"dims": [3]}, error="out of range")
case(G, "prod", lambda x: x.prod(0), [T([0, 3], "f32")], {"dims": [0]})
case(G, "prod", lambda x: x.prod(), [T([], "i32", "int")])
case(G, "prod", lambda x: x.prod(1), [T([3, 4], "f64", "edge")], {"dims": [1]})
case(G, "prod", lambda x: x.prod(1), [T([3, 6], "i32", "big")], {"dims": [1]})
case(G, "prod", lambda x: x.prod(1, dtype=torch.float64), [T([3, 4], "i16", "int")], {"dims": [1], "dtype": "f64"})
case(G, "prod", lambda x: x.prod(0, keepdim=True, dtype=torch.int8), [T([4, 3], "i8", "int")],
     {"dims": [0], "keepdim": True, "dtype": "i8"})

for dt in FLOATS:
    case(G, "mean", lambda x: x.mean(), [T([3, 4], dt)])
    case(G, "mean", lambda x: x.mean(1, keepdim=True), [T([3, 4], dt, layout="transposed")], {"dims": [1], "keepdim": True})
case(G, "mean", lambda x: x.mean([0, 2]), [T([2, 3, 4], "f64", layout="strided")], {"dims": [0, 2]})
case(G, "mean", lambda x: x.mean(1), [T([2, 64], "f32", "rand")], {"dims": [1]})
case(G, "mean", lambda x: x.mean(1), [T([3, 4], "f32", "edge")], {"dims": [1]})
case(G, "mean", lambda x: x.mean(0), [T([0, 3], "f32")], {"dims": [0]})
case(G, "mean", lambda x: x.mean(), [T([], "f32")])
case(G, "mean", lambda x: x.mean(1, dtype=torch.float64), [T([3, 4], "i32", "int")], {"dims": [1], "dtype": "f64"})
case(G, "mean", lambda x: x.mean(dtype=torch.float32), [T([3, 4], "bf16")], {"dtype": "f32"})
case(G, "mean", None, [T([3, 4], "i64", "int")], {}, error="could not infer output dtype")
case(G, "mean", None, [T([3, 4], "f32")], {"dtype": "i32"}, error="could not infer output dtype")

# ---------------------------------------------------------------- amax, amin, max, min, argmax, argmin

for name, fn in [("amax", torch.amax), ("amin", torch.amin)]:
    for dt in ALL:
        case(G, name, lambda x, fn=fn: fn(x, 1), [T([3, 4], dt, kind_for(dt))], {"dims": [1]})
        case(G, name, lambda x, fn=fn: fn(x, [0, 1], keepdim=True), [T([3, 4], dt, kind_for(dt), layout="transposed")],
             {"dims": [0, 1], "keepdim": True})
    case(G, name, lambda x, fn=fn: fn(x, [0, 2]), [T([2, 3, 4], "f32", layout="strided")], {"dims": [0, 2]})
    for dt in FLOATS:
        case(G, name, lambda x, fn=fn: fn(x, -1), [T([3, 5], dt, "edge")], {"dims": [-1]})
    case(G, name, lambda x, fn=fn: fn(x, []), [T([2, 3], "f32", [[1.0, NAN, 2.0], [NAN, -INF, INF]])], {})
    case(G, name, lambda x, fn=fn: fn(x, 1), [T([3, 4], "i64", "big")], {"dims": [1]})
    case(G, name, lambda x, fn=fn: fn(x, 1), [T([0, 3], "f32")], {"dims": [1]})
    case(G, name, lambda x, fn=fn: fn(x, 0), [T([], "f32")], {"dims": [0]})
    case(G, name, None, [T([0, 3], "f32")], {"dims": [0]}, error="Expected reduction dim 0 to have non-zero size")
    case(G, name, None, [T([0, 3], "f32")], {}, error="to have non-zero size")

for name in ["max", "min"]:
    fn = getattr(torch, name)
    for dt in ALL:
        case(G, name, lambda x, fn=fn: fn(x), [T([3, 4], dt, kind_for(dt))])
    case(G, name, lambda x, fn=fn: fn(x), [T([3, 4], "f32", "edge", layout="transposed")])
    case(G, name, lambda x, fn=fn: fn(x), [T([], "i32", "int")])
    case(G, name, None, [T([0, 3], "f32")], error="Expected reduction dim to be specified for input.numel() == 0")
    for dt in ALL:
        case(G, name + "_dim", lambda x, fn=fn: tuple(fn(x, 1)), [T([3, 5], dt, kind_for(dt))], {"dim": 1})
    case(G, name + "_dim", lambda x, fn=fn: tuple(fn(x, 0, keepdim=True)), [T([4, 3], "i32", "int", hi=2, lo=0)],
         {"dim": 0, "keepdim": True})
    case(G, name + "_dim", lambda x, fn=fn: tuple(fn(x, -1)), [T([3, 5], "f32", "edge", layout="transposed")], {"dim": -1})
    case(G, name + "_dim", lambda x, fn=fn: tuple(fn(x, 1)),
         [T([3, 4], "f64", [[1.0, NAN, 3.0, NAN], [2.0, 2.0, -INF, 1.0], [INF, 0.0, INF, -0.0]])], {"dim": 1})
    case(G, name + "_dim", lambda x, fn=fn: tuple(fn(x, 1)), [T([2, 3, 4], "bf16", layout="strided")], {"dim": 1})
    case(G, name + "_dim", lambda x, fn=fn: tuple(fn(x, 0)), [T([], "f32")], {"dim": 0})
    case(G, name + "_dim", lambda x, fn=fn: tuple(fn(x, 0)), [T([2, 0], "f32")], {"dim": 0})
    case(G, name + "_dim", None, [T([3, 0], "f32")], {"dim": 1}, error="Expected reduction dim 1 to have non-zero size")

for name in ["argmax", "argmin"]:
    fn = getattr(torch, name)
    for dt in NUMERIC:
        case(G, name, lambda x, fn=fn: fn(x, 1), [T([3, 5], dt, kind_for(dt))], {"dim": 1})
        case(G, name, lambda x, fn=fn: fn(x), [T([3, 4], dt, kind_for(dt), layout="transposed")])
    case(G, name, lambda x, fn=fn: fn(x, 0, keepdim=True), [T([5, 3], "i8", "int", hi=2, lo=0)], {"dim": 0, "keepdim": True})
    case(G, name, lambda x, fn=fn: fn(x, keepdim=True), [T([2, 3], "f32")], {"keepdim": True})
    case(G, name, lambda x, fn=fn: fn(x, 1), [T([2, 3, 4], "f32", layout="strided")], {"dim": 1})
    case(G, name, lambda x, fn=fn: fn(x, -1), [T([3, 5], "f32", "edge")], {"dim": -1})
    case(G, name, lambda x, fn=fn: fn(x), [T([2, 3], "f64", [[1.0, 5.0, NAN], [NAN, 9.0, -1.0]])])
    case(G, name, lambda x, fn=fn: fn(x, 1),
         [T([3, 4], "f32", [[1.0, NAN, 3.0, NAN], [2.0, 2.0, -INF, 1.0], [INF, -0.0, INF, 0.0]])], {"dim": 1})
    case(G, name, lambda x, fn=fn: fn(x, 1), [T([3, 4], "i64", "big")], {"dim": 1})
    case(G, name, lambda x, fn=fn: fn(x), [T([], "f32")])
    case(G, name, lambda x, fn=fn: fn(x, 0), [T([], "i32", "int")], {"dim": 0})
    case(G, name, lambda x, fn=fn: fn(x, 1), [T([0, 3], "f32")], {"dim": 1})
    case(G, name, None, [T([0, 3], "f32")], {}, error="Expected reduction dim to be specified for input.numel() == 0")
    case(G, name, None, [T([3, 0], "f32")], {"dim": 1}, error="to have non-zero size")
    case(G, name, None, [T([3], "bool", "bool")], {}, error="not implemented for dtype bool")

for dt in ["f32", "i32", "bool", "bf16"]:
    case(G, "aminmax", lambda x: tuple(torch.aminmax(x)), [T([3, 4], dt, kind_for(dt))])
    case(G, "aminmax", lambda x: tuple(torch.aminmax(x, dim=0, keepdim=True)), [T([3, 4], dt, kind_for(dt), layout="transposed")],
         {"dim": 0, "keepdim": True})
case(G, "aminmax", lambda x: tuple(torch.aminmax(x, dim=-1)), [T([3, 5], "f64", "edge")], {"dim": -1})
case(G, "aminmax", None, [T([0, 3], "f32")], {}, error="non-zero size")

# ---------------------------------------------------------------- all, any, count_nonzero

for name in ["all", "any"]:
    for dt in ALL:
        k = "bool" if dt == "bool" else ("int" if dt in INTS else "edge")
        case(G, name, lambda x, n=name: getattr(torch, n)(x), [T([3, 4], dt, k)])
        case(G, name, lambda x, n=name: getattr(torch, n)(x, 1, keepdim=True), [T([3, 4], dt, k, layout="transposed")],
             {"dims": [1], "keepdim": True})
    case(G, name, lambda x, n=name: getattr(torch, n)(x, 1), [T([4, 3], "i32", "int", hi=2, lo=0)], {"dims": [1]})
    case(G, name, lambda x, n=name: getattr(torch, n)(x, 1), [T([4, 3], "bool", [[True] * 3, [False] * 3, [True, False, True], [False, False, True]])],
         {"dims": [1]})
    case(G, name, lambda x, n=name: getattr(torch, n)(x, 0), [T([0, 3], "f32")], {"dims": [0]})
    case(G, name, lambda x, n=name: getattr(torch, n)(x), [T([0], "u8", "int")])
    case(G, name, lambda x, n=name: getattr(torch, n)(x), [T([], "f32", [NAN])])
    case(G, name, lambda x, n=name: getattr(torch, n)(getattr(torch, n)(x, 2), 0), [T([2, 3, 4], "bool", "bool", layout="strided")],
         {"dims": [0, 2]})

for dt in ALL:
    case(G, "count_nonzero", lambda x: torch.count_nonzero(x), [T([3, 4], dt, "edge" if dt in FLOATS else kind_for(dt))])
case(G, "count_nonzero", lambda x: torch.count_nonzero(x, 1), [T([3, 4], "i32", "int", layout="transposed")], {"dims": [1]})
case(G, "count_nonzero", lambda x: torch.count_nonzero(x, [0, 2]), [T([2, 3, 4], "f32", [float(i % 3) for i in range(24)])],
     {"dims": [0, 2]})
case(G, "count_nonzero", lambda x: torch.count_nonzero(x), [T([0, 3], "f32")])

# ---------------------------------------------------------------- var, std, var_mean, std_mean

for name in ["var", "std", "var_mean", "std_mean"]:
    fn = getattr(torch, name)
    for dt in FLOATS:
        case(G, name, lambda x, fn=fn: fn(x), [T([3, 4], dt)])
    case(G, name, lambda x, fn=fn: fn(x, 1, keepdim=True), [T([3, 5], "f32", layout="transposed")], {"dims": [1], "keepdim": True})
    case(G, name, lambda x, fn=fn: fn(x, [0, 2], correction=0), [T([2, 3, 4], "f64", layout="strided")],
         {"dims": [0, 2], "correction": 0})
    case(G, name, lambda x, fn=fn: fn(x, 1, correction=2), [T([3, 4], "f32")], {"dims": [1], "correction": 2})
    case(G, name, lambda x, fn=fn: fn(x, 0), [T([1, 3], "f32")], {"dims": [0]})
    case(G, name, lambda x, fn=fn: fn(x, 1), [T([2, 64], "f32", "rand")], {"dims": [1]})
    case(G, name, lambda x, fn=fn: fn(x, 1), [T([3, 4], "f32", [[1e4 + i * 0.25 for i in range(4)], [1, 2, 3, 4], [0, 0, 0, 0]])],
         {"dims": [1]})
    case(G, name, lambda x, fn=fn: fn(x, 1), [T([3, 5], "f64", "edge")], {"dims": [1]})
    case(G, name, lambda x, fn=fn: fn(x, None, correction=0), [T([], "f32")], {"correction": 0})
    case(G, name, None, [T([3, 4], "i32", "int")], {}, error="std and var only support floating point")

# ---------------------------------------------------------------- norm

for p in [2.0, 1.0, INF, -INF, 0.0, 3.0, 0.5, -1.0]:
    case(G, "norm", lambda x, p=p: torch.norm(x, p=p), [T([3, 4], "f32")], {"p": p})
    case(G, "norm", lambda x, p=p: torch.norm(x, p=p, dim=1, keepdim=True), [T([3, 4], "f64", layout="transposed")],
         {"p": p, "dims": [1], "keepdim": True})
    case(G, "norm", lambda x, p=p: torch.norm(x, p=p, dim=0), [T([0, 3], "f32")], {"p": p, "dims": [0]})
for dt in FLOATS:
    case(G, "norm", lambda x: torch.norm(x, dim=[0, 2]), [T([2, 3, 4], dt, layout="strided")], {"dims": [0, 2]})
    case(G, "norm", lambda x: torch.norm(x, p=1, dim=1), [T([3, 5], dt, "edge")], {"p": 1.0, "dims": [1]})
case(G, "norm", lambda x: torch.norm(x, p="fro"), [T([3, 4], "f32")], {"p": 2.0})
case(G, "norm", lambda x: torch.norm(x, p="fro", dim=[0, 1]), [T([3, 4], "bf16")], {"p": 2.0, "dims": [0, 1]})
case(G, "norm", lambda x: torch.norm(x, p=3, dim=1, dtype=torch.float64), [T([3, 4], "f32")],
     {"p": 3.0, "dims": [1], "dtype": "f64"})
case(G, "norm", lambda x: torch.norm(x, p=1, dtype=torch.float32), [T([3, 4], "f16")], {"p": 1.0, "dtype": "f32"})
case(G, "norm", lambda x: torch.norm(x), [T([2], "f32", [1e30, 2e30])])
case(G, "norm", lambda x: torch.norm(x), [T([], "f32")])
case(G, "norm", lambda x: torch.norm(x, p=INF), [T([0, 3], "f32")], {"p": INF})
case(G, "norm", None, [T([3, 4], "i32", "int")], {}, error="norm(): input dtype should be either floating point")
case(G, "norm", None, [T([3, 4], "f32")], {"dtype": "i64"}, error="floating point")

# ---------------------------------------------------------------- logsumexp

for dt in FLOATS:
    case(G, "logsumexp", lambda x: torch.logsumexp(x, 1), [T([3, 4], dt)], {"dims": [1]})
case(G, "logsumexp", lambda x: torch.logsumexp(x, [0, 1]), [T([3, 4], "f32", layout="transposed")], {"dims": [0, 1]})
case(G, "logsumexp", lambda x: torch.logsumexp(x, 1, keepdim=True), [T([2, 3, 4], "f64", layout="strided")],
     {"dims": [1], "keepdim": True})
case(G, "logsumexp", lambda x: torch.logsumexp(x, 1),
     [T([4, 3], "f32", [[-INF, -INF, -INF], [INF, 1.0, 2.0], [NAN, 1.0, 2.0], [1000.0, 1000.0, -1000.0]])], {"dims": [1]})
case(G, "logsumexp", lambda x: torch.logsumexp(x, 1), [T([3, 5], "f32", "edge")], {"dims": [1]})
case(G, "logsumexp", lambda x: torch.logsumexp(x, 1), [T([3, 4], "i64", "int")], {"dims": [1]})
case(G, "logsumexp", lambda x: torch.logsumexp(x, 0), [T([3, 4], "bool", "bool")], {"dims": [0]})
case(G, "logsumexp", lambda x: torch.logsumexp(x, 1), [T([2, 0], "f32")], {"dims": [1]})
case(G, "logsumexp", lambda x: torch.logsumexp(x, 0), [T([0, 3], "f32")], {"dims": [0]})
case(G, "logsumexp", lambda x: torch.logsumexp(x, 0), [T([], "f32")], {"dims": [0]})
case(G, "logsumexp", lambda x: torch.logsumexp(x, 1), [T([2, 64], "f32", "randn")], {"dims": [1]})

# ---------------------------------------------------------------- softmax, log_softmax

for name in ["softmax", "log_softmax"]:
    fn = getattr(torch, name)
    for dt in FLOATS:
        case(G, name, lambda x, fn=fn: fn(x, -1), [T([3, 5], dt)], {"dim": -1})
        case(G, name, lambda x, fn=fn: fn(x, 0), [T([3, 5], dt, layout="transposed")], {"dim": 0})
    case(G, name, lambda x, fn=fn: fn(x, 1), [T([2, 3, 4], "f32", layout="strided")], {"dim": 1})
    case(G, name, lambda x, fn=fn: fn(x, 1), [T([2, 64], "f32")], {"dim": 1})
    case(G, name, lambda x, fn=fn: fn(x, 1),
         [T([4, 3], "f32", [[-INF, -INF, -INF], [-INF, 1.0, 2.0], [NAN, 1.0, 2.0], [1000.0, 1000.0, -1000.0]])], {"dim": 1})
    case(G, name, lambda x, fn=fn: fn(x, 1), [T([3, 5], "f64", "edge")], {"dim": 1})
    case(G, name, lambda x, fn=fn: fn(x, -1, dtype=torch.float64), [T([3, 4], "f32")], {"dim": -1, "dtype": "f64"})
    case(G, name, lambda x, fn=fn: fn(x, -1, dtype=torch.float32), [T([3, 4], "bf16")], {"dim": -1, "dtype": "f32"})
    case(G, name, lambda x, fn=fn: fn(x, 0, dtype=torch.float32), [T([3, 4], "i64", "int")], {"dim": 0, "dtype": "f32"})
    case(G, name, lambda x, fn=fn: fn(x, 0), [T([], "f32")], {"dim": 0})
    case(G, name, lambda x, fn=fn: fn(x, 1), [T([2, 0], "f32")], {"dim": 1})
    case(G, name, lambda x, fn=fn: fn(x, 0), [T([0, 3], "f64")], {"dim": 0})
    case(G, name, None, [T([3, 4], "i32", "int")], {"dim": 0}, error="not implemented for 'Int'")
    case(G, name, None, [T([3, 4], "f32")], {"dim": 2}, error="out of range")

# ---------------------------------------------------------------- cumulative, cumsum, cumprod


def ref_cum(kind, dim):
    def f(x):
        if x.dtype == torch.bool:
            y = x.to(torch.int64)
            return (y.cumsum(dim) > 0) if kind == "sum" else (y.cumprod(dim) > 0)
        return x.cumsum(dim, dtype=x.dtype) if kind == "sum" else x.cumprod(dim, dtype=x.dtype)
    return f


for kind in ["sum", "prod"]:
    for dt in ALL:
        k = kind_for(dt, "unit" if kind == "prod" else "randn")
        case(G, "cumulative", ref_cum(kind, 1), [T([3, 5], dt, k)], {"kind": kind, "dim": 1})
    case(G, "cumulative", ref_cum(kind, 0), [T([4, 3], "f32", layout="transposed")], {"kind": kind, "dim": 0})
    case(G, "cumulative", ref_cum(kind, -1), [T([2, 3, 4], "i16", "big", layout="strided")], {"kind": kind, "dim": -1})
    case(G, "cumulative", ref_cum(kind, 0), [T([], "f32")], {"kind": kind, "dim": 0})
    case(G, "cumulative", ref_cum(kind, 1), [T([2, 0], "f32")], {"kind": kind, "dim": 1})
case(G, "cumulative", None, [T([2, 3], "f32")], {"kind": "max", "dim": 0}, error="unknown kind")

for name in ["cumsum", "cumprod"]:
    fn = getattr(torch, name)
    for dt in ALL:
        k = kind_for(dt, "unit" if name == "cumprod" else "randn")
        case(G, name, lambda x, fn=fn: fn(x, 1), [T([3, 5], dt, k)], {"dim": 1})
        case(G, name, lambda x, fn=fn: fn(x, 0), [T([4, 3], dt, k, layout="transposed")], {"dim": 0})
    case(G, name, lambda x, fn=fn: fn(x, 1), [T([2, 3, 4], "f64", layout="strided")], {"dim": 1})
    case(G, name, lambda x, fn=fn: fn(x, 1), [T([3, 5], "f32", "edge")], {"dim": 1})
    case(G, name, lambda x, fn=fn: fn(x, 1), [T([2, 32], "bf16", "rand" if name == "cumsum" else "unit")], {"dim": 1})
    case(G, name, lambda x, fn=fn: fn(x, 1), [T([2, 32], "f16", "rand" if name == "cumsum" else "unit")], {"dim": 1})
    case(G, name, lambda x, fn=fn: fn(x, -1, dtype=torch.float64), [T([3, 4], "i32", "int")], {"dim": -1, "dtype": "f64"})
    case(G, name, lambda x, fn=fn: fn(x, -1, dtype=torch.int32), [T([3, 4], "f32", "int")], {"dim": -1, "dtype": "i32"})
    case(G, name, lambda x, fn=fn: fn(x, 1), [T([3, 6], "i64", "big")], {"dim": 1})
    case(G, name, lambda x, fn=fn: fn(x, 0), [T([], "i8", "int")], {"dim": 0})
    case(G, name, lambda x, fn=fn: fn(x, 0), [T([0, 3], "f32")], {"dim": 0})
    case(G, name, None, [T([2, 3], "f32")], {"dim": 2}, error="out of range")

for name in ["cummax", "cummin"]:
    fn = getattr(torch, name)
    for dt in ALL:
        case(G, name, lambda x, fn=fn: tuple(fn(x, 1)), [T([3, 6], dt, kind_for(dt))], {"dim": 1})
    case(G, name, lambda x, fn=fn: tuple(fn(x, 0)), [T([6, 3], "i32", "int", hi=3, lo=0, layout="transposed")], {"dim": 0})
    case(G, name, lambda x, fn=fn: tuple(fn(x, -1)), [T([2, 3, 4], "f32", layout="strided")], {"dim": -1})
    case(G, name, lambda x, fn=fn: tuple(fn(x, 1)), [T([3, 5], "f64", "edge")], {"dim": 1})
    case(G, name, lambda x, fn=fn: tuple(fn(x, 1)),
         [T([2, 7], "f32", [[1.0, 3.0, 3.0, 2.0, NAN, 5.0, NAN], [3.0, 1.0, 1.0, 2.0, -INF, 0.0, INF]])], {"dim": 1})
    case(G, name, lambda x, fn=fn: tuple(fn(x, 1)), [T([3, 4], "i64", "big")], {"dim": 1})
    case(G, name, lambda x, fn=fn: tuple(fn(x, 0)), [T([], "f32")], {"dim": 0})
    case(G, name, lambda x, fn=fn: tuple(fn(x, 0)), [T([0, 3], "f32")], {"dim": 0})
    case(G, name, None, [T([2, 3], "f32")], {"dim": 2}, error="out of range")

# ---------------------------------------------------------------- sort, argsort, median, topk

def distinct(shape, dt, seed):
    """Tie-free integer data (PyTorch's topk orders ties unspecifiedly)."""
    n = 1
    for d in shape:
        n *= d
    g = torch.Generator().manual_seed(seed)
    return T(shape, dt, (torch.randperm(n, generator=g) - (0 if dt == "u8" else n // 2)).reshape(shape).tolist())



for dt in ALL:
    k = kind_for(dt)
    case(G, "sort", lambda x: tuple(torch.sort(x, dim=-1, stable=True)), [T([3, 6], dt, k)], {"stable": True})
    case(G, "sort", lambda x: tuple(torch.sort(x, dim=0, descending=True, stable=True)), [T([5, 3], dt, k, layout="transposed")],
         {"dim": 0, "descending": True, "stable": True})
for dt in FLOATS:
    # Tie-free data: PyTorch's unstable sort order is then the stable one.
    case(G, "sort", lambda x: tuple(torch.sort(x, dim=1)), [T([3, 6], dt)], {"dim": 1})
    case(G, "sort", lambda x: tuple(torch.sort(x, dim=1, descending=True, stable=True)), [T([3, 6], dt, "edge")],
         {"dim": 1, "descending": True, "stable": True})
    case(G, "sort", lambda x: tuple(torch.sort(x, dim=1, stable=True)), [T([3, 6], dt, "edge")], {"dim": 1, "stable": True})
case(G, "sort", lambda x: tuple(torch.sort(x, dim=1, stable=True)), [T([2, 3, 4], "f32", layout="strided")], {"dim": 1, "stable": True})
case(G, "sort", lambda x: tuple(torch.sort(x, stable=True)),
     [T([2, 6], "f64", [[NAN, 1.0, -0.0, 0.0, NAN, -INF], [2.0, 2.0, INF, 1.0, 2.0, NAN]])], {"stable": True})
case(G, "sort", lambda x: tuple(torch.sort(x, descending=True, stable=True)),
     [T([2, 6], "f64", [[NAN, 1.0, -0.0, 0.0, NAN, -INF], [2.0, 2.0, INF, 1.0, 2.0, NAN]])], {"descending": True, "stable": True})
case(G, "sort", lambda x: tuple(torch.sort(x, stable=True)), [T([3, 8], "i64", "big")], {"stable": True})
case(G, "sort", lambda x: tuple(torch.sort(x, stable=True)), [T([40], "i8", "int", hi=3, lo=0)], {"stable": True})
case(G, "sort", lambda x: tuple(torch.sort(x, 0)), [T([], "f32")], {"dim": 0})
case(G, "sort", lambda x: tuple(torch.sort(x, 1)), [T([3, 0], "f32")], {"dim": 1})
case(G, "sort", lambda x: tuple(torch.sort(x, 0)), [T([0, 3], "i32", "int")], {"dim": 0})
case(G, "sort", None, [T([2, 3], "f32")], {"dim": 2}, error="out of range")

for dt in NUMERIC:
    # Tie-free data: which of several equal medians PyTorch reports is unspecified.
    src = T([3, 5], dt) if dt in FLOATS else distinct([3, 5], dt, 3)
    case(G, "median_dim", lambda x: tuple(torch.median(x, 1)), [src], {"dim": 1})
    src = T([3, 5], dt) if dt in FLOATS else distinct([3, 5], dt, 4)
    case(G, "median", lambda x: torch.median(x), [src])
case(G, "median_dim", lambda x: tuple(torch.median(x, 0, keepdim=True)), [T([4, 3], "f32", layout="transposed")],
     {"dim": 0, "keepdim": True})
case(G, "median_dim", lambda x: tuple(torch.median(x, -1)), [T([2, 3, 4], "f64", layout="strided")], {"dim": -1})
case(G, "median_dim", lambda x: tuple(torch.median(x, 1)),
     [T([3, 4], "f32", [[1.0, NAN, 3.0, NAN], [4.0, 2.0, 3.0, 1.0], [INF, -INF, 0.0, 5.0]])], {"dim": 1})
case(G, "median_dim", lambda x: tuple(torch.median(x, 0)), [T([], "f32")], {"dim": 0})
case(G, "median_dim", lambda x: tuple(torch.median(x, 0)), [T([2, 0], "f32")], {"dim": 0})
case(G, "median_dim", None, [T([2, 0], "f32")], {"dim": 1}, error="Expected reduction dim 1 to have non-zero size")
case(G, "median_dim", None, [T([3], "bool", "bool")], {"dim": 0}, error="not implemented for dtype bool")
case(G, "median", lambda x: torch.median(x), [T([2, 3], "f32", [[1.0, 2.0, NAN], [0.0, 5.0, 3.0]])])
case(G, "median", lambda x: torch.median(x), [T([0], "f32")])
case(G, "median", lambda x: torch.median(x), [T([], "i32", "int")])
case(G, "median", lambda x: torch.median(x), [T([3, 4], "f32", layout="transposed")])


for dt in ["f32", "i32", "bool", "bf16"]:
    case(G, "argsort", lambda x: torch.argsort(x, dim=-1, stable=True), [T([3, 6], dt, kind_for(dt))], {"stable": True})
    case(G, "argsort", lambda x: torch.argsort(x, dim=0, descending=True, stable=True), [T([4, 3], dt, kind_for(dt), layout="transposed")],
         {"dim": 0, "descending": True, "stable": True})
case(G, "argsort", lambda x: torch.argsort(x), [T([3, 5], "f64", "edge")], {})
case(G, "argsort", lambda x: torch.argsort(x, 0), [T([], "f32")], {"dim": 0})


for dt in NUMERIC:
    src = T([3, 6], dt) if dt in FLOATS else distinct([3, 6], dt, 1)
    case(G, "topk", lambda x: tuple(torch.topk(x, 3)), [src], {"k": 3})
    src = T([6, 3], dt, layout="transposed") if dt in FLOATS else distinct([6, 3], dt, 2)
    case(G, "topk", lambda x: tuple(torch.topk(x, 2, dim=0, largest=False)), [src], {"k": 2, "dim": 0, "largest": False})
case(G, "topk", lambda x: tuple(torch.topk(x, 2, dim=1)), [T([2, 5, 3], "f32", layout="strided")], {"k": 2, "dim": 1})
case(G, "topk", lambda x: tuple(torch.topk(x, 6)), [T([2, 6], "f64", [[NAN, 1.0, -2.0, 3.0, -INF, INF], [5.0, 4.0, 3.0, 2.0, 1.0, 0.0]])], {"k": 6})
case(G, "topk", lambda x: tuple(torch.topk(x, 2, largest=False)), [T([2, 4], "f32", [[NAN, 1.0, -2.0, 3.0], [INF, 4.0, -INF, 2.0]])],
     {"k": 2, "largest": False})
case(G, "topk", lambda x: tuple(torch.topk(x, 0)), [T([3, 4], "f32")], {"k": 0})
case(G, "topk", lambda x: tuple(torch.topk(x, 1, 0)), [T([], "f32")], {"k": 1, "dim": 0})
case(G, "topk", lambda x: tuple(torch.topk(x, 2, 1)), [T([0, 4], "f32")], {"k": 2, "dim": 1})
case(G, "topk", lambda x: tuple(torch.topk(x, 2, sorted=True)), [T([3, 5], "f32")], {"k": 2, "sorted": True})
case(G, "topk", None, [T([3, 4], "f32")], {"k": 5}, error="selected index k out of range")
case(G, "topk", None, [T([3, 4], "bool", "bool")], {"k": 1}, error="not implemented for dtype bool")
