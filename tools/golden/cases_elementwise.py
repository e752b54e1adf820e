"""Cases for the elementwise group: unary math, activations, predicates,
binary arithmetic, comparisons, logical/bitwise ops, where, clamp, lerp,
addcmul and addcdiv.

PyTorch 1.13's CPU lacks many f16 (and a few bf16) kernels; H() computes
those in f32 and rounds the result once to the input dtype, which is what
later PyTorch releases do on CPU.
"""
import math

import torch
from golden import case, T, S, ALL, FLOATS, INTS, DT, NAME

G = "elementwise"
F = torch.nn.functional
HALF = (torch.float16, torch.bfloat16)


def H(fn):
    def g(*args):
        try:
            return fn(*args)
        except RuntimeError as e:
            if "Half" not in str(e) and "BFloat16" not in str(e):
                raise
        dts = [a.dtype for a in args if isinstance(a, torch.Tensor) and a.dtype in HALF]
        up = [a.float() if isinstance(a, torch.Tensor) and a.dtype in HALF else a for a in args]
        r = fn(*up)
        return r.to(dts[0]) if r.is_floating_point() else r
    return g


def F32(fn):
    """Computes half-precision inputs in f32 and rounds once: PyTorch 2's CPU
    semantics, used where 1.13 computes in bf16 and loses accuracy (gelu's
    bf16 kernel returns -0 for gelu(-3.16), the true value being -0.0025)."""
    def g(*args):
        dts = [a.dtype for a in args if isinstance(a, torch.Tensor) and a.dtype in HALF]
        if not dts:
            return fn(*args)
        up = [a.float() if isinstance(a, torch.Tensor) and a.dtype in HALF else a for a in args]
        return fn(*up).to(dts[0])
    return g


def round_half(d):
    """torch.round(x, decimals=d) for f16 as PyTorch's kernel computes it for
    a 16-bit scalar_t (1.13 has it for bf16 only): 10**|d| and the scaled
    value are rounded to the dtype before rounding to an integer."""
    def g(x):
        p = torch.tensor(10.0 ** abs(d), dtype=x.dtype).float()
        xf = x.float()
        if d > 0:
            return (torch.round((xf * p).to(x.dtype).float()) / p).to(x.dtype)
        return (torch.round((xf / p).to(x.dtype).float()) * p).to(x.dtype)
    return g


def C(op, fn, inputs, attrs=None, **kw):
    case(G, op, None if fn is None else H(fn), inputs, attrs, **kw)


def E(op, inputs, error, attrs=None):
    case(G, op, None, inputs, attrs, error=error)


_g = torch.Generator().manual_seed(20261130)


def R(shape, dt, scale=3.0, layout="contiguous"):
    """A normal tensor scaled by scale (explicit data, so the Go op sees
    exactly what PyTorch does)."""
    return T(shape, dt, torch.randn(shape, generator=_g, dtype=torch.float64) * scale, layout=layout)


def val(dt):
    """A value kind suitable for dtype dt."""
    if dt == "bool":
        return "bool"
    return "randn" if dt in FLOATS else "int"


ROUNDING = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 3.7, -3.7, 1e20, -0.0, 0.0]
ACOSH = torch.linspace(1.0, 30.0, 12)

# ---------------------------------------------------------------- unary float
UNARY_FLOAT = [
    ("exp", torch.exp, "randn"), ("exp2", torch.exp2, "randn"), ("expm1", torch.expm1, "randn"),
    ("log", torch.log, "pos"), ("log2", torch.log2, "pos"), ("log10", torch.log10, "pos"),
    ("log1p", torch.log1p, "pos"), ("sqrt", torch.sqrt, "pos"), ("rsqrt", torch.rsqrt, "pos"),
    ("reciprocal", torch.reciprocal, "randn"), ("sin", torch.sin, "randn"), ("cos", torch.cos, "randn"),
    ("tan", torch.tan, "unit"), ("asin", torch.asin, "unit"), ("acos", torch.acos, "unit"),
    ("atan", torch.atan, "randn"), ("sinh", torch.sinh, "randn"), ("cosh", torch.cosh, "randn"),
    ("tanh", torch.tanh, "randn"), ("asinh", torch.asinh, "randn"), ("acosh", torch.acosh, ACOSH),
    ("atanh", torch.atanh, "unit"), ("sigmoid", torch.sigmoid, "randn"), ("logit", torch.logit, "rand"),
    ("erf", torch.erf, "randn"), ("erfc", torch.erfc, "randn"), ("erfinv", torch.erfinv, "unit"),
]
for name, fn, kind in UNARY_FLOAT:
    for dt in FLOATS:
        C(name, fn, [T([3, 4], dt, kind)])
        C(name, fn, [T([12], dt, "edge")])
    C(name, fn, [T([4, 3], "f32", kind, layout="transposed")])
    ks = kind if isinstance(kind, str) else "pos"
    C(name, fn, [T([2, 3], "f64", ks, layout="strided")])
    C(name, fn, [T([], "f32", ks)])
    C(name, fn, [T([0, 3], "f32", ks)])
    # Integers and bool promote to the default float.
    C(name, fn, [T([2, 3], "i64", "int")])
    C(name, fn, [T([2, 3], "u8", "int")])
    C(name, fn, [T([4], "bool", "bool")])
# Wider ranges where the decompositions switch formulas.
C("asinh", torch.asinh, [T([6], "f32", [1e9, -1e9, 3e30, 1e-3, -1e-20, 50.0])])
C("asinh", torch.asinh, [T([6], "f64", [1e9, -1e9, 3e300, 1e-3, -1e-20, 50.0])])
C("acosh", torch.acosh, [T([6], "f32", [1e9, 3e30, 1.0, 1.0001, 0.5, -2.0])])
C("acosh", torch.acosh, [T([6], "f64", [1e9, 3e300, 1.0, 1.0001, 0.5, -2.0])])
C("atanh", torch.atanh, [T([6], "f32", [-0.999, 0.999, 1.0, -1.0, 1e-8, -0.5])])
C("sinh", torch.sinh, [T([6], "f32", [1e-6, -1e-6, 20.0, -20.0, 80.0, -80.0])])
C("cosh", torch.cosh, [T([4], "f64", [1e-6, 20.0, -300.0, 700.0])])
C("exp2", torch.exp2, [T([5], "f32", [100.0, -100.0, 0.5, 127.0, -149.0])])
C("erfc", torch.erfc, [T([5], "f64", [5.0, 10.0, 26.0, -3.0, 0.0])])
C("logit", lambda x: torch.logit(x, 0.1), [T([3, 4], "f32", "rand")], {"eps": 0.1})
C("logit", lambda x: torch.logit(x, 0.25), [T([2, 3], "i64", "int")], {"eps": 0.25})
C("logit", lambda x: torch.logit(x, -1.0), [T([4], "f32", [0.0, 1.0, 0.5, 0.25])], {"eps": -1.0})
C("logit", lambda x: torch.logit(x, 0.2), [T([3, 4], "bf16", "rand")], {"eps": 0.2})

# ---------------------------------------------------------------- unary numeric
NUMERIC = FLOATS + INTS
for name, fn, dts in [("neg", torch.neg, NUMERIC), ("abs", torch.abs, NUMERIC), ("sign", torch.sign, ALL),
                      ("floor", torch.floor, NUMERIC), ("ceil", torch.ceil, NUMERIC),
                      ("round_nearest_even", torch.round, NUMERIC), ("round", torch.round, NUMERIC),
                      ("trunc", torch.trunc, NUMERIC), ("frac", torch.frac, FLOATS)]:
    for dt in dts:
        if dt in FLOATS:
            C(name, fn, [R([3, 4], dt)])
            C(name, fn, [T([12], dt, "edge")])
            C(name, fn, [T([12], dt, ROUNDING)])
        else:
            C(name, fn, [T([3, 4], dt, val(dt))])
            if dt != "bool":
                C(name, fn, [T([8], dt, "big")])
    C(name, fn, [T([4, 3], "f32", layout="transposed")])
    C(name, fn, [T([2, 3], "i32", "int", layout="strided")] if name != "frac" else [T([2, 3], "f64", layout="strided")])
    C(name, fn, [T([], "f64")])
    C(name, fn, [T([0, 2], "i64", "int")] if name != "frac" else [T([0, 2], "f32")])
E("neg", [T([3], "bool", "bool")], "on a bool tensor is not supported")
for name in ["abs", "floor", "ceil", "round", "trunc", "round_nearest_even"]:
    E(name, [T([3], "bool", "bool")], "not implemented for dtype bool")
E("frac", [T([3], "i64", "int")], "not implemented for dtype i64")
C("neg", torch.neg, [T([4], "i8", [-128, 127, 0, 1])])
C("abs", torch.abs, [T([4], "i8", [-128, 127, 0, -1])])
for d in [1, 2, 3, -1, -2]:
    for dt in FLOATS:
        fn = round_half(d) if dt == "f16" else (lambda x, d=d: torch.round(x, decimals=d))
        C("round", fn, [R([3, 4], dt, 100.0)], {"decimals": d})
C("round", lambda x: torch.round(x, decimals=1), [T([12], "f32", "edge")], {"decimals": 1})
C("round", torch.round, [T([3], "i32", "int")], {"decimals": 0})
E("round", [T([3], "i64", "int")], "decimals is not supported", {"decimals": 1})

C("square", torch.square, [T([3, 4], "f32")])
for dt in ALL:
    C("square", torch.square, [T([2, 3], dt, val(dt))])
C("square", torch.square, [T([8], "i16", "big")])
C("square", torch.square, [T([3, 2], "f64", layout="transposed")])
C("square", torch.square, [T([12], "f32", "edge")])

# ---------------------------------------------------------------- activations
for dt in NUMERIC:
    C("relu", torch.relu, [T([3, 4], dt, val(dt))])
    C("relu6", F.relu6, [T([3, 4], dt, "randn" if dt in FLOATS else "int", hi=10)] if dt in FLOATS else
      [T([3, 4], dt, "int", hi=10)])
for dt in FLOATS:
    C("relu", torch.relu, [T([12], dt, "edge")])
    C("relu6", F.relu6, [R([3, 4], dt, 5.0)])
    C("relu6", F.relu6, [T([12], dt, "edge")])
C("relu", torch.relu, [T([4, 3], "f32", layout="transposed")])
C("relu", torch.relu, [T([], "f32")])
C("relu", torch.relu, [T([0, 4], "f32")])
C("relu6", F.relu6, [T([3, 2], "i32", "int", layout="strided")])
E("relu", [T([3], "bool", "bool")], "not implemented for dtype bool")
E("relu6", [T([3], "bool", "bool")], "not implemented for dtype bool")

for (lo, hi) in [(-1.0, 1.0), (-0.5, 2.0), (0.0, 6.0), (2.0, 1.0)]:
    for dt in FLOATS:
        C("hardtanh", lambda x, lo=lo, hi=hi: F.hardtanh(x, lo, hi), [R([3, 4], dt, 2.0)], {"min_val": lo, "max_val": hi})
    C("hardtanh", lambda x, lo=lo, hi=hi: F.hardtanh(x, lo, hi), [T([3, 4], "i64", "int")], {"min_val": lo, "max_val": hi})
C("hardtanh", lambda x: F.hardtanh(x, -1.5, 1.5), [T([3, 4], "i32", "int")], {"min_val": -1.5, "max_val": 1.5})
C("hardtanh", lambda x: F.hardtanh(x, 0.5, 2.5), [T([3, 4], "i16", "int")], {"min_val": 0.5, "max_val": 2.5})
C("hardtanh", F.hardtanh, [T([12], "f32", "edge")])
C("hardtanh", F.hardtanh, [T([4, 3], "f64", layout="transposed")])
C("hardtanh", lambda x: F.hardtanh(x, 1.0, 5.0), [T([3, 4], "u8", "int")], {"min_val": 1.0, "max_val": 5.0})
E("hardtanh", [T([3], "u8", "int")], "unsigned type with negative limits")
E("hardtanh", [T([3], "bool", "bool")], "not implemented for dtype bool")

ACTS = [
    ("gelu", F32(F.gelu), {}),
    ("gelu", F32(lambda x: F.gelu(x, approximate="tanh")), {"approximate": "tanh"}),
    ("silu", F.silu, {}),
    ("mish", F.mish, {}),
    ("softplus", F.softplus, {}),
    ("softplus", lambda x: F.softplus(x, beta=2, threshold=1), {"beta": 2.0, "threshold": 1.0}),
    ("softplus", lambda x: F.softplus(x, beta=0.5, threshold=3), {"beta": 0.5, "threshold": 3.0}),
    ("elu", F.elu, {}),
    ("elu", lambda x: F.elu(x, alpha=0.5), {"alpha": 0.5}),
    ("elu", lambda x: torch.ops.aten.elu(x, 1.5, 2.0, 3.0), {"alpha": 1.5, "scale": 2.0, "input_scale": 3.0}),
    ("selu", F.selu, {}),
    ("leaky_relu", F.leaky_relu, {}),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), {"negative_slope": 0.2}),
    ("hardsigmoid", F.hardsigmoid, {}),
    ("hardswish", F.hardswish, {}),
]
for name, fn, attrs in ACTS:
    for dt in FLOATS:
        C(name, fn, [R([3, 4], dt)], attrs)
        C(name, fn, [T([12], dt, "edge")], attrs)
    C(name, fn, [T([4, 3], "f32", layout="transposed")], attrs)
    C(name, fn, [T([2, 3], "f64", layout="strided")], attrs)
    C(name, fn, [T([], "f32")], attrs)
    C(name, fn, [T([0, 3], "f32")], attrs)
for name in ["gelu", "silu", "mish", "softplus", "elu", "selu", "leaky_relu", "hardsigmoid", "hardswish"]:
    E(name, [T([3], "i64", "int")], "not implemented for dtype i64")
E("gelu", [T([3], "f32")], "approximate argument must be either none or tanh", {"approximate": "foo"})

# ---------------------------------------------------------------- predicates
for name, fn in [("isnan", torch.isnan), ("isinf", torch.isinf), ("isfinite", torch.isfinite),
                 ("isposinf", torch.isposinf), ("isneginf", torch.isneginf), ("signbit", torch.signbit),
                 ("logical_not", torch.logical_not)]:
    for dt in FLOATS:
        C(name, fn, [T([12], dt, "edge")])
    for dt in ALL:
        C(name, fn, [T([2, 3], dt, val(dt))])
    C(name, fn, [T([4, 3], "f32", "edge", layout="transposed")])
    C(name, fn, [T([], "f64", "edge")])
    C(name, fn, [T([0], "f32")])
C("signbit", torch.signbit, [T([4], "f32", [float("nan"), -float("nan"), -0.0, 0.0])])
C("signbit", torch.signbit, [T([4], "i8", [-128, 127, 0, -1])])

for dt in FLOATS:
    C("nan_to_num", torch.nan_to_num, [T([12], dt, "edge")])
    C("nan_to_num", lambda x: torch.nan_to_num(x, nan=1.5, posinf=2.0), [T([12], dt, "edge")],
      {"nan": 1.5, "posinf": 2.0})
    C("nan_to_num", lambda x: torch.nan_to_num(x, nan=-1.0, posinf=100.0, neginf=-100.0), [T([12], dt, "edge")],
      {"nan": -1.0, "posinf": 100.0, "neginf": -100.0})
for dt in ALL:
    C("nan_to_num", torch.nan_to_num, [T([2, 3], dt, val(dt))])
C("nan_to_num", torch.nan_to_num, [T([4, 3], "f32", "edge", layout="transposed")])
C("nan_to_num", lambda x: torch.nan_to_num(x, nan=1.5), [T([3], "i64", "int")], {"nan": 1.5})

for dt in INTS + ["bool"]:
    C("bitwise_not", torch.bitwise_not, [T([3, 4], dt, val(dt))])
    if dt != "bool":
        C("bitwise_not", torch.bitwise_not, [T([8], dt, "big")])
C("bitwise_not", torch.bitwise_not, [T([4, 3], "i32", "int", layout="transposed")])
C("bitwise_not", torch.bitwise_not, [T([], "u8", "int")])
E("bitwise_not", [T([3], "f32")], "not implemented for dtype f32")

# ---------------------------------------------------------------- binary


def mk(shape, dt, kind, layout="contiguous"):
    """An input of dtype dt with values of kind; "pos" is never zero (also
    for integers and bool), so integer division cases do not divide by zero."""
    if kind == "pos" and dt == "bool":
        n = 1
        for d in shape:
            n *= d
        return T(shape, dt, [True] * n, layout=layout)
    if dt == "bool":
        return T(shape, dt, "bool", layout=layout)
    if dt not in FLOATS:
        if kind == "pos":
            return T(shape, dt, "index", lo=1, hi=6, layout=layout)
        if kind in ("randn", "unit", "rand"):
            return T(shape, dt, "int", layout=layout)
    return T(shape, dt, kind, layout=layout)


def binary_cases(name, fn, dts, kinds=("randn", "randn"), scalars=(), attrs=None, big=False, edge=True, nobool=False):
    """The standard set for a binary op: every dtype, broadcasting, layouts,
    0-d, empty, mixed dtypes, edge values and Go scalars."""
    a = attrs or {}
    kx, ky = kinds
    for dt in dts:
        C(name, fn, [mk([3, 4], dt, kx), mk([3, 4], dt, ky)], a)
        if big and dt in INTS:
            C(name, fn, [T([8], dt, "big"), T([8], dt, "big")], a)
    f = dts[0] if "f32" not in dts else "f32"
    C(name, fn, [mk([3, 1], f, kx), mk([4], f, ky)], a)
    C(name, fn, [mk([2, 3, 4], f, kx, layout="transposed"), mk([3, 4], f, ky, layout="strided")], a)
    C(name, fn, [mk([], f, kx), mk([2, 3], f, ky)], a)
    C(name, fn, [mk([0, 3], f, kx), mk([3], f, ky)], a)
    if edge and any(d in FLOATS for d in dts):
        for d in [x for x in FLOATS if x in dts]:
            C(name, fn, [T([12], d, "edge"), T([12], d, "edge")], a)
            if d == "f32":
                C(name, fn, [T([12, 1], d, "edge"), T([12], d, "edge")], a)
    # Mixed dtypes promote.
    pairs = [("i32", "f16"), ("u8", "i8"), ("bool", "f32"), ("i64", "f64"), ("bf16", "f16"), ("i16", "bool")]
    for x, y in pairs:
        if promote_ok(x, y, dts) and not (nobool and "bool" in (x, y)):
            C(name, fn, [mk([2, 3], x, kx), mk([2, 3], y, ky)], a)
    # Go scalars.
    for s in scalars:
        for dt in ["i64", "f32", "u8", "bf16", "bool", "i32"]:
            if nobool and (dt == "bool" or isinstance(s, bool)):
                continue
            if promote_ok(dt, "bool" if isinstance(s, bool) else ("i64" if isinstance(s, int) else "f32"), dts, scalar=True):
                C(name, fn, [mk([2, 3], dt, kx), S(s)], a)
    zd = "f64" if "f64" in dts else "i64"
    C(name, fn, [mk([2, 3], f, kx), mk([], zd, ky)], a)  # 0-d tensors do not win promotion
    E(name, [mk([2, 3], f, kx), mk([4], f, ky)], "not broadcastable", a)


def promote_ok(x, y, dts, scalar=False):
    t = torch.result_type(torch.zeros(1, dtype=DT[x]), torch.zeros((), dtype=DT[y]).item() if scalar else torch.zeros(1, dtype=DT[y]))
    return NAME[t] in dts

binary_cases("add", torch.add, ALL, scalars=(2, 2.5, True, -1, 300), big=True)
binary_cases("add", lambda x, y: torch.add(x, y, alpha=2), INTS + FLOATS, attrs={"alpha": 2}, edge=False)
binary_cases("add", lambda x, y: torch.add(x, y, alpha=-0.5), FLOATS, attrs={"alpha": -0.5}, edge=False)
C("add", lambda x, y: torch.add(x, y, alpha=True), [T([4], "bool", "bool"), T([4], "bool", "bool")], {"alpha": True})
C("add", lambda x, y: torch.add(x, y, alpha=3), [T([8], "u8", "big"), T([8], "u8", "big")], {"alpha": 3})
E("add", [T([3], "i64", "int"), T([3], "i64", "int")], "alpha must not be a floating point number", {"alpha": 2.5})
E("add", [T([3], "f32"), T([3], "f32")], "boolean alpha only supported", {"alpha": True})

binary_cases("sub", torch.sub, NUMERIC, scalars=(2, 2.5, -1), big=True, nobool=True)
binary_cases("sub", lambda x, y: torch.sub(x, y, alpha=3), INTS + FLOATS, attrs={"alpha": 3}, edge=False, nobool=True)
E("sub", [T([3], "bool", "bool"), T([3], "bool", "bool")], "with a bool tensor is not supported")

binary_cases("mul", torch.mul, ALL, scalars=(2, 2.5, True, -3), big=True)
binary_cases("div", torch.div, ALL, scalars=(2, 2.5, True), big=True)
for mode in ["trunc", "floor"]:
    binary_cases("div", lambda x, y, m=mode: torch.div(x, y, rounding_mode=m), NUMERIC, kinds=("randn", "pos"),
                 scalars=(2, 2.5, -3), attrs={"rounding_mode": mode})
    for dt in INTS:
        divisors = [1, 2, 3, 4, 5, 7, 9, 1, 2, 3, 6, 8] if dt == "u8" else [-5, -3, -2, -1, 1, 2, 3, 4, 5, -4, 7, -7]
        C("div", lambda x, y, m=mode: torch.div(x, y, rounding_mode=m), [T([3, 4], dt, "int", lo=-20 if dt != "u8" else 0, hi=20),
                                                                         T([3, 4], dt, divisors)],
          {"rounding_mode": mode}, id=f"div/{mode}/{dt}-signs")
    C("div", lambda x, y, m=mode: torch.div(x, y, rounding_mode=m),
      [T([8], "f32", [-7.0, 7.0, -0.0, 1.0, 5.0, -5.0, math.inf, 0.3]), T([8], "f32", [2.0, -2.0, 3.0, 0.0, math.inf, math.inf, 2.0, 0.1])],
      {"rounding_mode": mode}, id=f"div/{mode}/specials")
    E("div", [T([3], "i64", [1, 2, 3]), T([3], "i64", [1, 0, 2])], "ZeroDivisionError", {"rounding_mode": mode})
    E("div", [T([3], "bool", "bool"), T([3], "bool", "bool")], "not implemented for dtype bool", {"rounding_mode": mode})
E("div", [T([3], "f32"), T([3], "f32")], "expected rounding_mode to be one of", {"rounding_mode": "foo"})
C("div", torch.div, [T([3], "i64", [1, -1, 0]), T([3], "i64", [0, 0, 0])], id="div/int-by-zero-true")

binary_cases("floor_divide", torch.floor_divide, NUMERIC, kinds=("randn", "pos"), scalars=(2, -3, 2.5))
E("floor_divide", [T([3], "i32", [1, 2, 3]), T([3], "i32", [1, 0, 2])], "ZeroDivisionError")
for name, fn in [("remainder", torch.remainder), ("fmod", torch.fmod)]:
    binary_cases(name, fn, NUMERIC, kinds=("randn", "pos"), scalars=(2, -3, 2.5, -1.5))
    for dt in ["i8", "i16", "i32", "i64", "f32", "f64"]:
        C(name, fn, [T([6], dt, [-3, 3, -4, 4, -7, 7]), T([6], dt, [2, -2, -3, 3, 3, -3])], id=f"{name}/{dt}-signs")
    C(name, fn, [T([6], "f32", [5.0, -5.0, math.inf, -0.0, 3.0, 1.0]), T([6], "f32", [-math.inf, math.inf, 2.0, 2.0, 0.0, -0.0])],
      id=f"{name}/specials")
    E(name, [T([3], "i64", [1, 2, 3]), T([3], "i64", [1, 0, 2])], "ZeroDivisionError")
    E(name, [T([3], "bool", "bool"), T([3], "bool", "bool")], "not implemented for dtype bool")

binary_cases("pow", torch.pow, NUMERIC, kinds=("pos", "randn"), scalars=(2, 0.5, 3, -2.0))
for dt in INTS:
    C("pow", torch.pow, [T([3, 4], dt, "int", hi=6), T([3, 4], dt, "index", hi=5)], id=f"pow/{dt}-small")
    C("pow", torch.pow, [T([3, 4], dt, "int"), T([3, 4], dt, "index", hi=12)], id=f"pow/{dt}-wrap")
C("pow", torch.pow, [T([4], "i64", [1, -1, 2, 0]), T([4], "i64", [-1, -3, -1, -2])], id="pow/neg-exp-tensor")
C("pow", torch.pow, [T([4], "i8", [-2, 3, 2, -1]), T([4], "i8", [7, 5, 9, 4])], id="pow/i8-wrap")
C("pow", torch.pow, [T([6], "f32", [-8.0, 0.0, -0.0, 1.0, -1.0, 2.0]), T([6], "f32", [1 / 3, -1.0, -1.0, math.nan, math.inf, -1074.0])],
  id="pow/specials")
C("pow", lambda x, y: torch.pow(x, y), [S(2), T([3, 4], "i64", "index", hi=10)], id="pow/scalar-base-int")
C("pow", lambda x, y: torch.pow(x, y), [S(2.5), T([3, 4], "f32")], id="pow/scalar-base-float")
C("pow", lambda x, y: torch.pow(x, y), [S(2.0), T([3, 4], "i32", "int")], id="pow/scalar-float-base-int")
E("pow", [T([3], "bool", "bool"), T([3], "bool", "bool")], "not implemented for dtype bool")

binary_cases("atan2", torch.atan2, ALL)
C("atan2", torch.atan2, [T([4], "f32", [0.0, -0.0, 0.0, -0.0]), T([4], "f32", [0.0, 0.0, -0.0, -0.0])], id="atan2/zeros")
for name, fn in [("maximum", torch.maximum), ("minimum", torch.minimum), ("fmax", torch.fmax), ("fmin", torch.fmin)]:
    binary_cases(name, fn, ALL, big=True)
    C(name, fn, [T([4], "f32", [math.nan, 1.0, math.nan, -0.0]), T([4], "f32", [1.0, math.nan, math.nan, 0.0])], id=f"{name}/nan")
binary_cases("hypot", torch.hypot, FLOATS)
C("hypot", torch.hypot, [T([6], "f32", [1e30, 3.0, 0.0, math.inf, math.nan, 1e-30]),
                         T([6], "f32", [1e30, 4.0, 0.0, math.nan, math.inf, 1e-30])], id="hypot/range")
E("hypot", [T([3], "i64", "int"), T([3], "i64", "int")], "not implemented for dtype i64")
binary_cases("copysign", torch.copysign, ALL, scalars=(-1, 2.5, -0.0, True))
C("copysign", torch.copysign, [T([4], "f32", [1.0, 1.0, 2.0, -3.0]), T([4], "f32", [math.nan, -math.nan, -0.0, 0.0])], id="copysign/specials")

for name, fn in [("eq", torch.eq), ("ne", torch.ne), ("lt", torch.lt), ("le", torch.le), ("gt", torch.gt), ("ge", torch.ge)]:
    binary_cases(name, fn, ALL, kinds=("int", "int"), scalars=(2, 2.5, True, -1, 256), big=True)
    for dt in FLOATS:
        C(name, fn, [T([3, 4], dt), T([3, 4], dt)])

for name, fn in [("logical_and", torch.logical_and), ("logical_or", torch.logical_or), ("logical_xor", torch.logical_xor)]:
    for dt in ALL:
        C(name, fn, [T([3, 4], dt, "int" if dt not in ("bool",) else "bool", lo=-1, hi=2), T([3, 4], dt, "bool" if dt == "bool" else "int", lo=-1, hi=2)])
    C(name, fn, [T([3, 1], "f32", [0.0, math.nan, -0.0]), T([4], "i64", [0, 1, 2, 0])])
    C(name, fn, [T([2, 3], "u8", "int", layout="transposed"), T([2, 3], "bf16", "int", layout="strided")])
    C(name, fn, [T([], "bool", "bool"), T([0, 2], "f64")])
    C(name, fn, [T([12], "f32", "edge"), T([12], "f16", "edge")])
    E(name, [T([2], "bool", "bool"), T([3], "bool", "bool")], "not broadcastable")

for name, fn in [("bitwise_and", torch.bitwise_and), ("bitwise_or", torch.bitwise_or), ("bitwise_xor", torch.bitwise_xor)]:
    binary_cases(name, fn, INTS + ["bool"], kinds=("int", "int"), scalars=(2, True, -1), big=True, edge=False)
    E(name, [T([3], "f32"), T([3], "f32")], "not implemented for dtype f32")
for name, fn in [("bitwise_left_shift", torch.bitwise_left_shift), ("bitwise_right_shift", torch.bitwise_right_shift)]:
    for dt in INTS:
        bits = 8 * torch.tensor([], dtype=DT[dt]).element_size()
        C(name, fn, [T([3, 4], dt, "int"), T([3, 4], dt, "index", hi=bits)])
        C(name, fn, [T([8], dt, "big"), T([8], dt, "index", hi=bits)])
    # Counts at or past the width of the narrow types are defined (int promotion in C).
    C(name, fn, [T([6], "i8", [-128, 64, 1, -1, 100, -7]), T([6], "i8", [8, 9, 7, 20, 31, 3])], id=f"{name}/i8-wide")
    C(name, fn, [T([6], "u8", [200, 1, 255, 128, 7, 0]), T([6], "u8", [8, 9, 7, 20, 31, 3])], id=f"{name}/u8-wide")
    C(name, fn, [T([6], "i16", [-300, 300, 1, -1, 77, 5]), T([6], "i16", [16, 17, 15, 30, 2, 3])], id=f"{name}/i16-wide")
    C(name, fn, [T([3, 1], "i32", "int"), T([4], "i32", "index", hi=31)])
    C(name, fn, [T([2, 3], "i64", "int", layout="transposed"), T([2, 3], "i64", "index", hi=63, layout="strided")])
    C(name, fn, [T([2, 3], "i64", "int"), S(3)])
    C(name, fn, [S(2), T([2, 3], "i64", "index", hi=10)], id=f"{name}/scalar-base")
    C(name, fn, [T([2, 3], "u8", "int"), T([2, 3], "i8", "index", hi=5)])
    C(name, fn, [T([], "i32", "int"), T([0], "i32", "int")])
    E(name, [T([3], "bool", "bool"), T([3], "bool", "bool")], "not implemented for dtype bool")
    E(name, [T([3], "f32"), T([3], "f32")], "not implemented for dtype f32")

# ---------------------------------------------------------------- where
for dt in ALL:
    C("where", torch.where, [T([3, 4], "bool", "bool"), T([3, 4], dt, val(dt)), T([3, 4], dt, val(dt))])
C("where", torch.where, [T([3, 1], "bool", "bool"), T([4], "f32"), T([2, 1, 1], "f32")])
C("where", torch.where, [T([2, 3], "bool", "bool", layout="transposed"), T([2, 3], "i32", "int", layout="strided"), T([2, 3], "f16")])
C("where", torch.where, [T([4], "bool", "bool"), T([4], "u8", "int"), S(-1)])
C("where", torch.where, [T([4], "bool", "bool"), T([4], "bool", "bool"), S(2)])
C("where", torch.where, [T([4], "bool", "bool"), T([4], "i64", "int"), S(2.5)])
C("where", torch.where, [T([4], "bool", "bool"), S(1), S(2.5)])
C("where", torch.where, [T([2], "bool", "bool"), T([], "i32", "int"), T([2], "i8", "int")])
C("where", torch.where, [T([], "bool", "bool"), T([0, 3], "f32"), T([3], "f32")])
C("where", torch.where, [T([12], "bool", "bool"), T([12], "f32", "edge"), T([12], "f64", "edge")])
E("where", [T([3], "i64", "int"), T([3], "f32"), T([3], "f32")], "expected condition to be a boolean tensor")
E("where", [T([3], "bool", "bool"), T([2], "f32"), T([3], "f32")], "not broadcastable")

# ---------------------------------------------------------------- clamp


def clamp_fn(lo, hi):
    return lambda x: torch.clamp(x, lo, hi)


for lo, hi in [(-0.5, 0.5), (0, None), (None, 1), (0.5, None), (2, 1), (-1, 3)]:
    attrs = {}
    if lo is not None:
        attrs["min"] = lo
    if hi is not None:
        attrs["max"] = hi
    for dt in NUMERIC:
        if dt in INTS and ((lo is not None and isinstance(lo, float)) or (hi is not None and isinstance(hi, float))):
            C("clamp", clamp_fn(lo, hi), [T([3, 4], dt, "int")], attrs)  # promotes to the default float
            continue
        if dt == "f16" or dt == "bf16":
            C("clamp", clamp_fn(lo, hi), [T([3, 4], dt)], attrs)
            continue
        C("clamp", clamp_fn(lo, hi), [T([3, 4], dt, val(dt))], attrs)
C("clamp", clamp_fn(0.0, 1.0), [T([12], "f32", "edge")], {"min": 0.0, "max": 1.0})
C("clamp", clamp_fn(-1.0, 1.0), [T([12], "bf16", "edge")], {"min": -1.0, "max": 1.0})
C("clamp", clamp_fn(-1, None), [T([8], "u8", "big")], {"min": -1})
C("clamp", clamp_fn(0, None), [T([4], "bool", "bool")], {"min": 0})
C("clamp", clamp_fn(-0.5, 0.5), [T([4, 3], "f32", layout="transposed")], {"min": -0.5, "max": 0.5})
C("clamp", clamp_fn(-0.5, 0.5), [T([], "f64")], {"min": -0.5, "max": 0.5})
C("clamp", clamp_fn(-0.5, 0.5), [T([0, 2], "f32")], {"min": -0.5, "max": 0.5})
C("clamp", clamp_fn(100, 200), [T([8], "i64", "big")], {"min": 100, "max": 200})
E("clamp", [T([3], "f32")], "at least one of 'min' or 'max' must not be None")
E("clamp", [T([3], "bool", "bool")], "not implemented for dtype bool", {"min": True})

for dt in NUMERIC:
    C("clamp_tensor", lambda x, lo, hi: torch.clamp(x, lo, hi), [T([3, 4], dt, val(dt)), T([3, 4], dt, val(dt)), T([3, 4], dt, val(dt))])
C("clamp_tensor", lambda x, lo, hi: torch.clamp(x, lo, hi), [T([3, 4], "f32"), T([4], "f32"), T([3, 1], "f32")])
C("clamp_tensor", lambda x, lo, hi: torch.clamp(x, lo, hi), [T([3, 4], "i64", "int"), T([1], "f32"), None])
C("clamp_tensor", lambda x, lo, hi: torch.clamp(x, lo, hi), [T([3, 4], "f32"), None, T([4], "f64")])
C("clamp_tensor", lambda x, lo, hi: torch.clamp(x, lo, hi), [T([3, 4], "f32"), T([], "f64"), None])
C("clamp_tensor", lambda x, lo, hi: torch.clamp(x, lo, hi), [T([2, 3], "i32", "int", layout="transposed"), T([2, 3], "i32", "int", layout="strided"), T([3], "i32", "int")])
C("clamp_tensor", lambda x, lo, hi: torch.clamp(x, lo, hi), [T([4], "f32", [math.nan, 1.0, 2.0, -1.0]), T([4], "f32", [0.0, math.nan, 0.0, 0.0]), T([4], "f32", [1.0, 1.0, math.nan, 1.0])])
C("clamp_tensor", lambda x, lo, hi: torch.clamp(x, lo, hi), [T([0, 3], "f32"), T([3], "f32"), T([3], "f32")])
E("clamp_tensor", [T([3], "f32"), None, None], "at least one of 'min' or 'max' must not be None")
E("clamp_tensor", [T([3], "bool", "bool"), T([3], "bool", "bool"), None], "not implemented for dtype bool")

# ---------------------------------------------------------------- lerp, addcmul, addcdiv
for dt in FLOATS:
    C("lerp", torch.lerp, [T([3, 4], dt), T([3, 4], dt), T([3, 4], dt, "rand")])
    for w in [0.3, 0.7, -0.25]:
        C("lerp", lambda x, e, _, w=w: torch.lerp(x, e, w), [T([3, 4], dt), T([3, 4], dt), None], {"weight": w})
C("lerp", torch.lerp, [T([3, 1], "f32"), T([4], "f32"), T([3, 4], "f32", "randn")])
C("lerp", lambda x, e, _: torch.lerp(x, e, 2.0), [T([2, 3], "f64", layout="transposed"), T([2, 3], "f64", layout="strided"), None], {"weight": 2.0})
C("lerp", lambda x, e, w: torch.lerp(x, e, torch.tensor(w, dtype=x.dtype)), [T([2, 3], "f32"), T([2, 3], "f32"), S(0.5)], id="lerp/wrapped-weight")
C("lerp", lambda x, e, _: torch.lerp(x, e, 0.5), [T([], "f32"), T([0], "f32"), None], {"weight": 0.5})
C("lerp", lambda x, e, _: torch.lerp(x, e, 0.25), [T([12], "f32", "edge"), T([12], "f32", "edge"), None], {"weight": 0.25})
C("lerp", torch.lerp, [T([12], "f64", "edge"), T([12], "f64", "edge"), T([12], "f64", "rand")])
E("lerp", [T([3], "f32"), T([3], "f32"), None], "exactly one of the weight tensor and the weight attribute")
E("lerp", [T([3], "f32"), T([3], "f32"), T([3], "f32")], "exactly one of the weight tensor and the weight attribute", {"weight": 0.5})
E("lerp", [T([3], "i64", "int"), T([3], "i64", "int"), T([3], "i64", "int")], "not implemented for dtype i64")

for v in [1, 2, 0.5, -1.5]:
    for dt in NUMERIC:
        if dt in INTS and isinstance(v, float):
            continue
        C("addcmul", lambda x, a, b, v=v: torch.addcmul(x, a, b, value=v), [T([3, 4], dt, val(dt)), T([3, 4], dt, val(dt)), T([3, 4], dt, val(dt))], {"value": v})
C("addcmul", lambda x, a, b: torch.addcmul(x, a, b, value=2.5), [T([2, 3], "i64", "int"), T([2, 3], "i64", "int"), T([2, 3], "i64", "int")], {"value": 2.5})
C("addcmul", lambda x, a, b: torch.addcmul(x, a, b, value=3), [T([8], "u8", "big"), T([8], "u8", "big"), T([8], "u8", "big")], {"value": 3})
C("addcmul", torch.addcmul, [T([3, 1], "f32"), T([4], "f32"), T([2, 1, 1], "f32")])
C("addcmul", torch.addcmul, [T([2, 3], "i32", "int"), T([2, 3], "f32"), T([2, 3], "i64", "int")])
C("addcmul", torch.addcmul, [T([2, 3], "f64", layout="transposed"), T([2, 3], "f64", layout="strided"), T([3], "f64")])
C("addcmul", torch.addcmul, [T([], "f32"), T([0], "f32"), T([0], "f32")])
C("addcmul", torch.addcmul, [T([12], "f32", "edge"), T([12], "f32", "edge"), T([12], "f32")])
E("addcmul", [T([3], "bool", "bool"), T([3], "bool", "bool"), T([3], "bool", "bool")], "not implemented for dtype bool")
for v in [1, 2, 0.5, -1.5]:
    for dt in FLOATS:
        C("addcdiv", lambda x, a, b, v=v: torch.addcdiv(x, a, b, value=v), [T([3, 4], dt), T([3, 4], dt), T([3, 4], dt, "pos")], {"value": v})
C("addcdiv", torch.addcdiv, [T([3, 1], "f32"), T([4], "f32"), T([2, 1, 1], "f32", "pos")])
C("addcdiv", torch.addcdiv, [T([2, 3], "i32", "int"), T([2, 3], "f32"), T([2, 3], "f32", "pos")])
C("addcdiv", torch.addcdiv, [T([2, 3], "f64", layout="transposed"), T([2, 3], "f64", layout="strided"), T([3], "f64", "pos")])
C("addcdiv", torch.addcdiv, [T([12], "f32", "edge"), T([12], "f32", "edge"), T([12], "f32", "edge")])
E("addcdiv", [T([3], "i64", "int"), T([3], "i64", "int"), T([3], "i64", "int")], "integer division with addcdiv is no longer supported")
