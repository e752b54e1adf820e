"""Cases for the linalg group: the dot_general, convolution, reduce_window,
max_pool2d_with_indices and adaptive pooling primitives, and matmul, mm, bmm,
addmm, baddbmm, linear, dot, vdot, outer, einsum, tensordot, conv*,
max/avg pooling built on them."""
import itertools
import math

import torch
import torch.nn.functional as F
import golden
from golden import T, S, FLOATS, INTS

G = "linalg"
NUMERIC = INTS + FLOATS
HALF = (torch.float16, torch.bfloat16)


def up(fn):
    """Reference for narrow floats: PyTorch 1.13's CPU lacks f16 matmul and
    convolution (and its bf16 paths accumulate in f32): compute on f32 copies
    and round once, which is gotpu's contract (f32 accumulation, one rounding)."""
    if fn is None:
        return None

    def f(*args):
        half = [a.dtype for a in args if isinstance(a, torch.Tensor) and a.dtype in HALF]
        if not half:
            return fn(*args)
        ins = [a.float() if isinstance(a, torch.Tensor) and a.dtype in HALF else a for a in args]
        res = fn(*ins)
        one = not isinstance(res, tuple)
        res = (res,) if one else res
        res = tuple(r.to(half[0]) if r.dtype == torch.float32 else r for r in res)
        return res[0] if one else res
    return f


def case(op, fn, inputs, attrs=None, **kw):
    golden.case(G, op, up(fn), inputs, attrs, **kw)


def kind(dt):
    return "randn" if dt in FLOATS else "int"


def tol(dt, k):
    """Tolerance for a K-term f32-accumulated sum compared with PyTorch's own
    (differently ordered) accumulation."""
    if dt == "f32":
        return dict(rtol=1e-5, atol=2e-6 * k)
    if dt in ("bf16", "f16"):
        return dict(rtol=1.6e-2 if dt == "bf16" else 2e-3, atol=1e-2 if dt == "bf16" else 2e-3)
    return {}


def dg(lb, rb, lc, rc, prec=""):
    return {"lhs_batch": lb, "rhs_batch": rb, "lhs_contract": lc, "rhs_contract": rc, "precision": prec}


# ---------------------------------------------------------------- dot_general

for dt in NUMERIC:
    case("dot_general", lambda a, b: a @ b, [T([3, 5], dt, kind(dt)), T([5, 4], dt, kind(dt))], dg([], [], [1], [0]), **tol(dt, 5))
    case("dot_general", lambda a, b: torch.einsum("bij,bjk->bik", a, b), [T([2, 3, 4], dt, kind(dt)), T([2, 4, 5], dt, kind(dt))],
         dg([0], [0], [2], [1]), **tol(dt, 4))
for dt in ["u8", "i8", "i16", "i32", "i64"]:
    case("dot_general", lambda a, b: a @ b, [T([3, 4], dt, "big"), T([4, 2], dt, "big")], dg([], [], [1], [0]), id=f"dot_general/wrap.{dt}")
for dt in ["f32", "f64", "bf16"]:
    case("dot_general", lambda a, b: a @ b, [T([7, 17], dt, layout="transposed"), T([17, 3], dt, layout="strided")], dg([], [], [1], [0]), **tol(dt, 17))
    case("dot_general", lambda a, b: (a @ b), [T([1, 17], dt), T([17, 1], dt, layout="transposed")], dg([], [], [1], [0]), **tol(dt, 17))
# Several contracting and free axes, batch axis in the middle, no contraction.
case("dot_general", lambda a, b: torch.tensordot(a, b, dims=([1, 2], [1, 0])), [T([2, 3, 4], "f64"), T([4, 3, 5], "f64")], dg([], [], [1, 2], [1, 0]))
case("dot_general", lambda a, b: torch.einsum("ibk,kbj->bij", a, b), [T([3, 2, 4], "f32"), T([4, 2, 5], "f32")], dg([1], [1], [2], [0]), **tol("f32", 4))
case("dot_general", lambda a, b: torch.einsum("bik,bjk->bij", a, b), [T([2, 3, 4], "f64"), T([2, 5, 4], "f64", layout="transposed")], dg([0], [0], [-1], [-1]))
case("dot_general", lambda a, b: torch.outer(a, b), [T([3], "f32"), T([4], "f32")], dg([], [], [], []))
case("dot_general", lambda a, b: torch.dot(a, b), [T([7], "i32", "int"), T([7], "i32", "int")], dg([], [], [0], [0]))
case("dot_general", lambda a, b: a * b, [T([], "f64"), T([], "f64")], dg([], [], [], []))
case("dot_general", lambda a, b: a @ b, [T([3, 0], "f32"), T([0, 4], "f32")], dg([], [], [1], [0]))
case("dot_general", lambda a, b: a @ b, [T([0, 5], "f32"), T([5, 4], "f32")], dg([], [], [1], [0]))
case("dot_general", lambda a, b: a @ b, [T([2, 5], "f32", "edge"), T([5, 3], "f32")], dg([], [], [1], [0]))
# A larger product crossing the 4x4 micro-tile and odd sizes on every side.
case("dot_general", lambda a, b: a @ b, [T([9, 7], "f64"), T([7, 6], "f64")], dg([], [], [1], [0]))


# Precision variants: references are exact emulations in f64, rounded to f32.
def bf(x):
    return x.to(torch.bfloat16).double()


def medium(a, b):
    return (bf(a) @ bf(b)).float()


def high(a, b):
    ah, bh = bf(a), bf(b)
    al, bl = bf(a.double() - ah), bf(b.double() - bh)
    return (ah @ bh + ah @ bl + al @ bh).float()


for k in [5, 17, 32]:
    case("dot_general", medium, [T([2, k], "f32"), T([k, 2], "f32")], dg([], [], [1], [0], "medium"), rtol=1e-6 * k, atol=1e-6 * k,
         id=f"dot_general/medium.k{k}")
    case("dot_general", high, [T([2, k], "f32"), T([k, 2], "f32")], dg([], [], [1], [0], "high"), rtol=1e-6 * k, atol=1e-6 * k,
         id=f"dot_general/high.k{k}")
    case("dot_general", lambda a, b: (a.double() @ b.double()).float(), [T([2, k], "f32"), T([k, 2], "f32")], dg([], [], [1], [0], "highest"),
         rtol=1e-6 * k, atol=1e-6 * k, id=f"dot_general/highest.k{k}")
# "medium" is visibly coarser than "highest": 1 + 2^-10 rounds to 1 in bf16.
case("dot_general", medium, [T([1, 2], "f32", [[1 + 2 ** -10, 1.0]]), T([2, 1], "f32", [[1.0], [1.0]])], dg([], [], [1], [0], "medium"),
     rtol=0, atol=0, id="dot_general/medium.rounds")
case("dot_general", lambda a, b: a @ b, [T([1, 2], "f32", [[1 + 2 ** -10, 1.0]]), T([2, 1], "f32", [[1.0], [1.0]])], dg([], [], [1], [0], "highest"),
     rtol=0, atol=0, id="dot_general/highest.exact")
case("dot_general", lambda a, b: a @ b, [T([2, 3], "f64"), T([3, 2], "f64")], dg([], [], [1], [0], "medium"), id="dot_general/medium.f64")
case("dot_general", None, [T([2, 3], "f32"), T([4, 2], "f32")], dg([], [], [1], [0]), error="contracting dimension sizes differ")
case("dot_general", None, [T([2, 3], "f32"), T([3, 2], "f64")], dg([], [], [1], [0]), error="expected scalar type Float but found Double")
case("dot_general", None, [T([2, 3], "f32"), T([3, 2], "f32")], dg([], [], [1], [0], "bogus"), error="unknown precision")
case("dot_general", None, [T([2, 3], "f32"), T([3, 2], "f32")], dg([], [], [2], [0]), error="out of range")
case("dot_general", None, [T([2, 3], "bool", "bool"), T([3, 2], "bool", "bool")], dg([], [], [1], [0]), error="not implemented for dtype bool")

# ---------------------------------------------------------------- matmul family

P = {"precision": ""}
for sa, sb in [([3], [3]), ([2, 3], [3]), ([3], [3, 4]), ([2, 3], [3, 4]), ([2, 2, 3], [3, 4]), ([2, 2, 3], [3]), ([3], [2, 3, 4]),
               ([2, 3], [2, 3, 4]), ([2, 1, 2, 3], [3, 3, 2]), ([1, 2, 3], [2, 3, 4]), ([2, 3, 4], [4]), ([7, 17], [17, 1]), ([1, 17], [17, 7])]:
    case("matmul", torch.matmul, [T(sa, "f32"), T(sb, "f32")], P, **tol("f32", sa[-1]))
for dt in NUMERIC:
    case("matmul", torch.matmul, [T([2, 2, 3], dt, kind(dt)), T([2, 3, 5], dt, kind(dt), layout="transposed")], P, **tol(dt, 3))
case("matmul", torch.matmul, [T([2, 4, 3], "f64", layout="transposed"), T([3, 2], "f64", layout="strided")], P)
case("matmul", torch.matmul, [T([0, 3], "f32"), T([3, 4], "f32")], P)
case("matmul", torch.matmul, [T([2, 0, 3], "f32"), T([3], "f32")], P)
case("matmul", medium, [T([3, 17], "f32"), T([17, 2], "f32")], {"precision": "medium"}, rtol=2e-5, atol=2e-5, id="matmul/medium")
case("matmul", None, [T([2, 3], "f32"), T([4, 5], "f32")], P, error="mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)")
case("matmul", None, [T([3], "f32"), T([4], "f32")], P, error="inconsistent tensor size")
case("matmul", None, [T([2, 2, 3], "f32"), T([2, 4, 5], "f32")], P, error="Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]")
case("matmul", None, [T([2, 2, 3], "f32"), T([3, 3, 5], "f32")], P, error="must match the size of tensor b")
case("matmul", None, [T([], "f32"), T([3], "f32")], P, error="at least 1D")
case("matmul", None, [T([2, 3], "f32"), T([3, 5], "f64")], P, error="expected scalar type Float but found Double")

for dt in ["f32", "f64", "bf16", "f16", "i64", "u8"]:
    case("mm", torch.mm, [T([3, 4], dt, kind(dt)), T([4, 5], dt, kind(dt))], P, **tol(dt, 4))
case("mm", torch.mm, [T([7, 1], "f32", layout="transposed"), T([1, 17], "f32", layout="strided")], P)
case("mm", None, [T([2, 3], "f32"), T([4, 5], "f32")], P, error="mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)")
case("mm", None, [T([3], "f32"), T([3, 2], "f32")], P, error="self must be a matrix")
for dt in ["f32", "f64", "bf16", "i32"]:
    case("bmm", torch.bmm, [T([3, 2, 4], dt, kind(dt)), T([3, 4, 5], dt, kind(dt), layout="transposed")], P, **tol(dt, 4))
case("bmm", torch.bmm, [T([0, 2, 4], "f32"), T([0, 4, 5], "f32")], P)
case("bmm", None, [T([2, 2, 3], "f32"), T([2, 4, 5], "f32")], P, error="Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]")
case("bmm", None, [T([2, 3], "f32"), T([3, 3, 5], "f32")], P, error="batch1 must be a 3D tensor")


def ab(beta, alpha):
    return {"beta": beta, "alpha": alpha, "precision": ""}


for (beta, alpha) in [(1, 1), (0.5, 2.0), (2, -1)]:
    for ishape in [[3, 5], [5], [1, 5], []]:
        case("addmm", lambda i, a, b, beta=beta, alpha=alpha: torch.addmm(i, a, b, beta=beta, alpha=alpha),
             [T(ishape, "f32"), T([3, 4], "f32"), T([4, 5], "f32")], ab(beta, alpha), **tol("f32", 4))
case("addmm", lambda i, a, b: torch.addmm(i, a, b, beta=0), [T([3, 5], "f32", "edge"), T([3, 4], "f32"), T([4, 5], "f32")], ab(0, 1),
     id="addmm/beta0.ignores_nan", **tol("f32", 4))
case("addmm", lambda i, a, b: torch.addmm(i, a, b, beta=2, alpha=3), [T([3, 5], "i64", "int"), T([3, 4], "i64", "int"), T([4, 5], "i64", "int")], ab(2, 3))
# Integer tensors take float alpha/beta truncated toward zero, as PyTorch does.
case("addmm", lambda i, a, b: torch.addmm(i, a, b, beta=2.7, alpha=1.5), [T([3, 5], "i32", "int"), T([3, 4], "i32", "int"), T([4, 5], "i32", "int")],
     ab(2.7, 1.5), id="addmm/int.float_scalars")
case("addmm", lambda i, a, b: torch.addmm(i, a, b), [T([3, 5], "bf16"), T([3, 4], "bf16"), T([4, 5], "bf16", layout="transposed")], ab(1, 1), **tol("bf16", 4))
case("addmm", lambda i, a, b: torch.addmm(i, a, b, beta=0.5), [T([3, 5], "f64"), T([3, 4], "f64", layout="transposed"), T([4, 5], "f64")], ab(0.5, 1))
case("addmm", None, [T([3, 5], "f32"), T([3, 4], "f32"), T([5, 5], "f32")], ab(1, 1), error="mat1 and mat2 shapes cannot be multiplied (3x4 and 5x5)")
case("addmm", None, [T([2, 5], "f32"), T([3, 4], "f32"), T([4, 5], "f32")], ab(1, 1), error="expanded size")
for (beta, alpha) in [(1, 1), (0.5, 2.0), (0, 1)]:
    case("baddbmm", lambda i, a, b, beta=beta, alpha=alpha: torch.baddbmm(i, a, b, beta=beta, alpha=alpha),
         [T([2, 3, 5], "f32"), T([2, 3, 4], "f32"), T([2, 4, 5], "f32")], ab(beta, alpha), **tol("f32", 4))
case("baddbmm", lambda i, a, b: torch.baddbmm(i, a, b), [T([3, 1], "f64"), T([2, 3, 4], "f64"), T([2, 4, 5], "f64", layout="transposed")], ab(1, 1))
case("baddbmm", None, [T([2, 3, 5], "f32"), T([2, 3, 4], "f32"), T([3, 4, 5], "f32")], ab(1, 1), error="Expected size for first two dimensions")

for dt in ["f32", "f64", "bf16", "f16", "i64"]:
    case("linear", F.linear, [T([2, 3], dt, kind(dt)), T([4, 3], dt, kind(dt)), T([4], dt, kind(dt))], P, **tol(dt, 3))
case("linear", F.linear, [T([2, 3, 5], "f32"), T([4, 5], "f32", layout="transposed"), None], P, **tol("f32", 5))
case("linear", F.linear, [T([5], "f32"), T([4, 5], "f32"), T([4], "f32")], P, **tol("f32", 5))
# PyTorch 1.13's linear rejects a 1-d weight for 2-d input; newer releases
# compute input @ weight (+ bias), which is the reference here.
case("linear", lambda x, w, b: x @ w, [T([3, 5], "f32"), T([5], "f32"), None], P, **tol("f32", 5))
case("linear", lambda x, w, b: x @ w + b, [T([3, 5], "f64"), T([5], "f64"), T([], "f64")], P)
case("linear", F.linear, [T([7, 17], "f32", layout="strided"), T([1, 17], "f32"), T([1], "f32")], P, **tol("f32", 17))
case("linear", None, [T([2, 3], "f32"), T([4, 5], "f32"), None], P, error="mat1 and mat2 shapes cannot be multiplied (2x3 and 5x4)")
case("linear", None, [T([2, 3], "f32"), T([4, 3], "f32"), T([5], "f32")], P, error="expanded size")

for dt in NUMERIC:
    case("dot", torch.dot if dt not in ("bf16", "f16") else lambda a, b: (a.double() @ b.double()).float(),
         [T([7], dt, kind(dt)), T([7], dt, kind(dt), layout="strided")], P, **tol(dt, 7))
case("dot", torch.dot, [T([0], "f32"), T([0], "f32")], P)
case("dot", None, [T([3], "f32"), T([4], "f32")], P, error="inconsistent tensor size, expected tensor [3] and src [4]")
case("dot", None, [T([3, 1], "f32"), T([3], "f32")], P, error="1D tensors expected, but got 2D and 1D tensors")
case("dot", None, [T([3], "f32"), T([3], "f64")], P, error="expected scalar type Float but found Double")
for dt in ["f32", "f64", "i32"]:
    case("vdot", torch.vdot, [T([5], dt, kind(dt)), T([5], dt, kind(dt))], P, **tol(dt, 5))
case("vdot", None, [T([3], "f32"), T([4], "f32")], P, error="inconsistent tensor size")
for dt in ["f32", "f64", "bf16", "f16", "i64", "u8", "bool"]:
    case("outer", torch.outer, [T([3], dt, "bool" if dt == "bool" else kind(dt)), T([4], dt, "bool" if dt == "bool" else kind(dt), layout="strided")])
case("outer", torch.outer, [T([3], "i32", "int"), T([2], "f32")])
case("outer", torch.outer, [T([3], "f32"), T([0], "f32")])
case("outer", None, [T([3, 1], "f32"), T([3], "f32")], error="Expected 1-D argument self, but got 2-D")

for dims_a, dims_b, sa, sb in [([1], [0], [2, 3], [3, 4]), ([1, 2], [0, 1], [2, 3, 4], [3, 4, 5]), ([0], [2], [3, 2], [4, 5, 3]), ([], [], [2], [3])]:
    case("tensordot", lambda a, b, da=dims_a, db=dims_b: torch.tensordot(a, b, dims=(da, db)), [T(sa, "f64"), T(sb, "f64")],
         {"dims_a": dims_a, "dims_b": dims_b, "precision": ""})
case("tensordot", None, [T([2, 3], "f32"), T([4, 4], "f32")], {"dims_a": [1], "dims_b": [0], "precision": ""}, error="contracted dimensions need to match")

# ---------------------------------------------------------------- einsum


def es(eq, *shapes, dt="f64", layouts=None, error=None, **kw):
    ins = [T(s, dt, kind(dt), layout=(layouts[i] if layouts else "contiguous")) for i, s in enumerate(shapes)]
    fn = None if error else (lambda *xs, eq=eq: torch.einsum(eq, *xs))
    if dt in ("bf16", "f16") and not error:
        fn = lambda *xs, eq=eq: torch.einsum(eq, *[x.double() for x in xs]).float()  # noqa: E731
    case("einsum", fn, ins, {"equation": eq, "precision": ""}, id=f"einsum/{eq}/{dt}" if not error else None, error=error, **kw)


es("ij,jk->ik", [2, 3], [3, 4])
es("ij,jk", [2, 3], [3, 4])
es("ij,jk->ik", [2, 3], [3, 4], dt="f32", layouts=["transposed", "strided"], **tol("f32", 3))
es("ij,jk->ik", [2, 3], [3, 4], dt="i64")
es("ij,jk->ik", [2, 3], [3, 4], dt="bf16", **tol("bf16", 3))
es("ii->i", [4, 4])
es("ii->", [4, 4])
es("ii", [4, 4])
es("iji->j", [3, 2, 3])
es("ij->ji", [2, 3])
es("ij->", [2, 3])
es("ij->j", [2, 3])
es("i,j->ij", [3], [4])
es("i,i->", [5], [5])
es("i,i->i", [1], [3])
es("bij,bjk->bik", [2, 3, 4], [2, 4, 5])
es("bij,bkj->bik", [2, 3, 4], [2, 5, 4])
es("...ij,...jk->...ik", [2, 1, 2, 3], [3, 3, 4])
es("...ij,jk", [2, 2, 3], [3, 4])
es("i...->...", [3, 2, 2])
es("...,...", [2, 3], [3])
es("ij,jk,kl->il", [2, 3], [3, 4], [4, 2])
es("ab,cb,ca->a", [2, 3], [4, 3], [4, 2])
es("bhqd,bhkd->bhqk", [1, 2, 3, 4], [1, 2, 5, 4])
es("ijk,ik->j", [2, 3, 4], [2, 4])
es("Aa,aB->AB", [2, 3], [3, 2])
es("i,j,k->ijk", [2], [3], [2])
es("ij,ij->ij", [2, 3], [2, 3])
es("ij,ij->", [0, 3], [0, 3])
es("ijk,ikl->ijl", [2, 3, 4], [2, 4, 5], dt="f32", **tol("f32", 4))
es("ijk,jk", [2, 3], [4, 5], error="does not match the number of dimensions")
es("ij,jk->ik", [2, 3], [4, 5], error="subscript j has size 4 for operand 1 which does not broadcast with previously seen size 3")
es("ij->k", [1, 2], error="output subscript k does not appear in the equation for any input operand")
es("ij->ii", [2, 2], error="appears more than once in the output")
es("ij,jk->ik", [2, 3], error="fewer operands were provided than specified in the equation")
es("i2->i", [2, 2], error="invalid subscript")
es("ii->i", [2, 3], error="is repeated for operand 0 but the sizes don't match")

# ---------------------------------------------------------------- convolution


def conv_attrs(stride=(1,), padding=(0,), dilation=(1,), transposed=False, output_padding=(0,), groups=1, padding_high=None, prec=""):
    a = {"stride": list(stride), "padding": list(padding), "dilation": list(dilation), "transposed": transposed,
         "output_padding": list(output_padding), "groups": groups, "precision": prec}
    if padding_high is not None:
        a["padding_high"] = list(padding_high)
    return a


def conv_ref(stride, padding, dilation, transposed, output_padding, groups, padding_high=None):
    def f(x, w, b):
        n = x.dim() - 2
        pad = list(padding) * (n if len(padding) == 1 else 1)
        if padding_high is not None and not transposed:
            ph = list(padding_high) * (n if len(padding_high) == 1 else 1)
            p = []
            for i in reversed(range(n)):
                p += [pad[i], ph[i]]
            x = F.pad(x, p)
            pad = [0] * n
        return torch.ops.aten.convolution(x, w, b, list(stride) * (n if len(stride) == 1 else 1), pad,
                                          list(dilation) * (n if len(dilation) == 1 else 1), transposed,
                                          list(output_padding) * (n if len(output_padding) == 1 else 1), groups)
    return f


conv_prims = [
    # input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, padding_high
    ([2, 3, 7], [4, 3, 3], [4], (1,), (0,), (1,), False, (0,), 1, None),
    ([1, 4, 9], [4, 2, 2], None, (2,), (1,), (2,), False, (0,), 2, None),
    ([1, 2, 5, 6], [3, 2, 3, 2], [3], (1, 2), (1, 0), (1, 1), False, (0,), 1, None),
    ([1, 2, 4, 5], [2, 1, 2, 3], [2], (1,), (0, 1), (2, 1), False, (0,), 2, None),
    ([1, 2, 3, 3, 3], [2, 2, 2, 2, 2], [2], (1,), (1,), (1,), False, (0,), 1, None),
    ([1, 2, 5, 5], [3, 2, 2, 2], [3], (1,), (0,), (1,), False, (0,), 1, (1, 0)),
    ([1, 2, 5, 5], [3, 2, 3, 3], None, (1,), (1,), (1,), False, (0,), 1, (2, 1)),
    ([2, 3, 4], [3, 2, 3], [2], (2,), (1,), (1,), True, (1,), 1, None),
    ([1, 4, 3, 4], [4, 1, 3, 2], [2], (2, 1), (1, 0), (1, 2), True, (1, 0), 2, None),
    ([1, 2, 3, 3], [2, 3, 2, 2], None, (1,), (0,), (1,), True, (0,), 1, None),
    ([1, 2, 3, 3, 2], [2, 2, 2, 2, 2], [2], (2,), (0,), (1,), True, (0,), 1, None),
    ([0, 2, 5], [3, 2, 2], [3], (1,), (0,), (1,), False, (0,), 1, None),
    ([1, 1, 1, 1], [1, 1, 1, 1], [1], (1,), (0,), (1,), False, (0,), 1, None),
]
for (xs, ws, bs, st, pd, dl, tr, op_, g, ph) in conv_prims:
    for dt in (["f32", "f64", "bf16", "f16"] if xs == [1, 2, 5, 6] else ["f32"]):
        case("convolution", conv_ref(st, pd, dl, tr, op_, g, ph), [T(xs, dt), T(ws, dt), T(bs, dt) if bs else None],
             conv_attrs(st, pd, dl, tr, op_, g, ph), **tol(dt, ws[1] * math.prod(ws[2:])))
case("convolution", conv_ref((1,), (0,), (1,), False, (0,), 1), [T([1, 2, 5, 5], "f64", layout="transposed"), T([3, 2, 2, 2], "f64", layout="strided"), None],
     conv_attrs())
case("convolution", lambda x, w, b: torch.ops.aten.convolution(x.to(torch.bfloat16).double(), w.to(torch.bfloat16).double(), None, [1, 1], [0, 0], [1, 1],
                                                                 False, [0, 0], 1).float(),
     [T([1, 3, 4, 4], "f32"), T([2, 3, 3, 3], "f32"), None], conv_attrs(prec="medium"), rtol=3e-5, atol=3e-5, id="convolution/medium")
case("convolution", None, [T([1, 2, 5, 5], "f32"), T([3, 3, 2, 2], "f32"), None], conv_attrs(),
     error="Given groups=1, weight of size [3, 3, 2, 2], expected input[1, 2, 5, 5] to have 3 channels, but got 2 channels instead")
case("convolution", None, [T([1, 2, 5, 5], "f32"), T([3, 2, 7, 2], "f32"), None], conv_attrs(),
     error="Kernel size can't be greater than actual input size")
case("convolution", None, [T([1, 2, 5, 5], "f32"), T([3, 2, 2, 2], "f32"), T([4], "f32")], conv_attrs(), error="expected bias to be 1-dimensional with 3 elements")
case("convolution", None, [T([1, 2, 5, 5], "f32"), T([2, 3, 2, 2], "f32"), None], conv_attrs(stride=(2,), transposed=True, output_padding=(2,)),
     error="output padding must be smaller than either stride or dilation")
case("convolution", None, [T([1, 2, 5, 5], "f32"), T([3, 1, 2, 2], "f32"), None], conv_attrs(groups=2), error="expected weight to be divisible by 2")


def c2(stride=(1,), padding=(0,), dilation=(1,), groups=1, padding_str="", prec=""):
    return {"stride": list(stride), "padding": list(padding), "dilation": list(dilation), "groups": groups, "padding_str": padding_str, "precision": prec}


for st in [(1,), (2,), (2, 1)]:
    for pd in [(0,), (1,), (1, 2)]:
        for dl in [(1,), (2,)]:
            for g in [1, 2]:
                bias = T([4], "f32") if (st[0] + pd[0] + g) % 2 == 0 else None
                case("conv2d", lambda x, w, b, st=st, pd=pd, dl=dl, g=g: F.conv2d(x, w, b, st, pd, dl, g),
                     [T([1, 2, 5, 6], "f32"), T([4, 2 // g, 3, 2], "f32"), bias], c2(st, pd, dl, g), **tol("f32", 12))
for dt in ["f64", "bf16", "f16"]:
    case("conv2d", lambda x, w, b: F.conv2d(x, w, b, 1, 1), [T([2, 2, 4, 4], dt), T([3, 2, 3, 3], dt), T([3], dt)], c2(padding=(1,)), **tol(dt, 18))
case("conv2d", lambda x, w, b: F.conv2d(x, w, b, padding="same"), [T([1, 2, 5, 6], "f32"), T([3, 2, 3, 2], "f32"), T([3], "f32")], c2(padding_str="same"), **tol("f32", 12))
case("conv2d", lambda x, w, b: F.conv2d(x, w, b, padding="same", dilation=2), [T([1, 2, 5, 6], "f64"), T([3, 2, 2, 2], "f64"), None], c2(dilation=(2,), padding_str="same"))
case("conv2d", lambda x, w, b: F.conv2d(x, w, b, padding="valid"), [T([1, 2, 5, 6], "f64"), T([3, 2, 3, 2], "f64"), None], c2(padding_str="valid"))
case("conv2d", lambda x, w, b: F.conv2d(x, w, b, padding=1), [T([2, 5, 5], "f64"), T([3, 2, 3, 3], "f64"), T([3], "f64")], c2(padding=(1,)))
case("conv2d", lambda x, w, b: F.conv2d(x, w, b), [T([1, 2, 4, 4], "f64", layout="transposed"), T([3, 2, 2, 2], "f64", layout="strided"), None], c2())
case("conv2d", None, [T([1, 2, 5, 6], "f32"), T([3, 2, 3, 2], "f32"), None], c2(stride=(2,), padding_str="same"),
     error="padding='same' is not supported for strided convolutions")
case("conv2d", None, [T([2, 5], "f32"), T([3, 2, 3, 3], "f32"), None], c2(), error="Expected 3D (unbatched) or 4D (batched) input to conv2d")
case("conv2d", None, [T([1, 2, 5, 5], "f32"), T([3, 3, 2, 2], "f32"), None], c2(), error="expected input[1, 2, 5, 5] to have 3 channels, but got 2 channels instead")
case("conv2d", None, [T([1, 2, 5, 5], "f32"), T([3, 2, 2, 2], "f64"), None], c2(), error="expected scalar type Float but found Double")
for st, pd, dl, g in [((1,), (0,), (1,), 1), ((2,), (1,), (1,), 2), ((1,), (2,), (2,), 1), ((3,), (0,), (1,), 4)]:
    case("conv1d", lambda x, w, b, st=st, pd=pd, dl=dl, g=g: F.conv1d(x, w, b, st, pd, dl, g), [T([2, 4, 9], "f32"), T([4, 4 // g, 3], "f32"), T([4], "f32")],
         c2(st, pd, dl, g), **tol("f32", 12))
case("conv1d", lambda x, w, b: F.conv1d(x, w, b, padding="same"), [T([3, 8], "f64"), T([2, 3, 4], "f64"), None], c2(padding_str="same"))
case("conv1d", lambda x, w, b: F.conv1d(x, w, b), [T([1, 2, 6], "bf16"), T([2, 2, 3], "bf16"), T([2], "bf16")], c2(), **tol("bf16", 6))


def ct(stride=(1,), padding=(0,), output_padding=(0,), groups=1, dilation=(1,), prec=""):
    return {"stride": list(stride), "padding": list(padding), "output_padding": list(output_padding), "groups": groups,
            "dilation": list(dilation), "precision": prec}


for st, pd, opd, g, dl in [((1,), (0,), (0,), 1, (1,)), ((2,), (1,), (1,), 1, (1,)), ((2, 3), (0, 1), (1, 2), 2, (1,)), ((1,), (1,), (0,), 2, (2,)),
                           ((3,), (2,), (1,), 1, (2,))]:
    case("conv_transpose2d", lambda x, w, b, st=st, pd=pd, opd=opd, g=g, dl=dl: F.conv_transpose2d(x, w, b, st, pd, opd, g, dl),
         [T([1, 4, 3, 4], "f32"), T([4, 6 // g, 3, 2], "f32"), T([6], "f32") if g == 1 else None], ct(st, pd, opd, g, dl), **tol("f32", 24))
for dt in ["f64", "bf16", "f16"]:
    case("conv_transpose2d", lambda x, w, b: F.conv_transpose2d(x, w, b, 2), [T([1, 2, 3, 3], dt), T([2, 3, 2, 2], dt), T([3], dt)], ct(stride=(2,)), **tol(dt, 8))
case("conv_transpose2d", lambda x, w, b: F.conv_transpose2d(x, w, b, 2, 1), [T([2, 3, 3], "f64"), T([2, 3, 3, 3], "f64"), None], ct(stride=(2,), padding=(1,)))
case("conv_transpose2d", None, [T([1, 2, 5, 5], "f32"), T([2, 3, 2, 2], "f32"), None], ct(stride=(2,), output_padding=(2,)),
     error="output padding must be smaller than either stride or dilation")
case("conv_transpose2d", None, [T([1, 3, 5, 5], "f32"), T([2, 3, 2, 2], "f32"), None], ct(), error="expected input[1, 3, 5, 5] to have 2 channels")
for st, pd, opd, g in [((1,), (0,), (0,), 1), ((2,), (1,), (1,), 2)]:
    case("conv_transpose1d", lambda x, w, b, st=st, pd=pd, opd=opd, g=g: F.conv_transpose1d(x, w, b, st, pd, opd, g),
         [T([2, 4, 5], "f32"), T([4, 3, 3], "f32"), T([3 * g], "f32")], ct(st, pd, opd, g), **tol("f32", 12))

# ---------------------------------------------------------------- pooling


def rw(kind_, window, strides=(), dilation=(), lo=(), hi=()):
    return {"kind": kind_, "window": list(window), "strides": list(strides), "dilation": list(dilation),
            "padding_low": list(lo), "padding_high": list(hi)}


def rw_ref(kind_, window, strides=(), dilation=(), lo=(), hi=()):
    """reduce_window by brute force: pad with the identity, then reduce every
    (strided, dilated) window."""
    def f(x):
        r = x.dim()
        st = list(strides) or [1] * r
        dl = list(dilation) or [1] * r
        pl, ph = list(lo) or [0] * r, list(hi) or [0] * r
        if x.dtype.is_floating_point:
            ident = -math.inf if kind_ == "max" else 0.0
            acc_dt = torch.float64
        else:
            ident = torch.iinfo(x.dtype).min if kind_ == "max" else 0
            acc_dt = torch.int64
        xp = torch.full([x.shape[i] + pl[i] + ph[i] for i in range(r)], ident, dtype=acc_dt)
        xp[tuple(slice(pl[i], pl[i] + x.shape[i]) for i in range(r))] = x.to(acc_dt)
        out_shape = [max(0, (xp.shape[i] - (dl[i] * (window[i] - 1) + 1)) // st[i] + 1) for i in range(r)]
        out = torch.empty(out_shape, dtype=acc_dt)
        for idx in itertools.product(*[range(n) for n in out_shape]):
            sl = tuple(slice(idx[i] * st[i], idx[i] * st[i] + dl[i] * (window[i] - 1) + 1, dl[i]) for i in range(r))
            win = xp[sl]
            if kind_ == "max":
                v = win.max() if not (x.dtype.is_floating_point and win.isnan().any()) else torch.tensor(math.nan, dtype=acc_dt)
            else:
                v = win.sum()
            out[tuple(idx)] = v
        return out.to(x.dtype)
    return f


for args in [("max", [1, 2, 3]), ("sum", [1, 2, 3]), ("max", [2, 2, 2], [1, 2, 2], [1, 1, 2], [0, 1, 1], [1, 1, 0]), ("sum", [1, 3, 2], [1, 2, 1], [], [0, 1, 0], [0, 2, 1])]:
    for dt in ["f32", "f64", "bf16", "f16", "i64", "i32", "u8", "i8"]:
        kd = kind(dt)
        case("reduce_window", rw_ref(*args), [T([2, 5, 6], dt, kd)], rw(*args))
case("reduce_window", rw_ref("max", [2, 2]), [T([4, 4], "f32", "edge")], rw("max", [2, 2]))
case("reduce_window", rw_ref("sum", [2, 3], [2, 1]), [T([4, 5], "f32", layout="transposed")], rw("sum", [2, 3], [2, 1]))
case("reduce_window", rw_ref("sum", [3]), [T([2], "f32")], rw("sum", [3]))
case("reduce_window", rw_ref("sum", [3], [], [], [1], [1]), [T([1], "i16", "int")], rw("sum", [3], [], [], [1], [1]))
case("reduce_window", rw_ref("max", []), [T([], "f64")], rw("max", []))
case("reduce_window", None, [T([4, 4], "f32")], rw("mean", [2, 2]), error="unknown kind")
case("reduce_window", None, [T([4, 4], "f32")], rw("max", [2]), error="one entry per input dimension")


def mp(k, s=(), p=(0,), d=(1,), ceil=False):
    return {"kernel_size": list(k), "stride": list(s), "padding": list(p), "dilation": list(d), "ceil_mode": ceil}


pool_cfgs = [((2,), (), (0,), (1,), False), ((3,), (2,), (1,), (1,), False), ((3,), (2,), (1,), (1,), True), ((2, 3), (1, 2), (1, 1), (1,), True),
             ((2,), (2,), (1,), (2,), False), ((3, 2), (2,), (0, 1), (2, 1), True), ((2,), (3,), (0,), (1,), True)]
for k, s, p, d, ceil in pool_cfgs:
    case("max_pool2d", lambda x, k=k, s=s, p=p, d=d, ceil=ceil: F.max_pool2d(x, k, s or None, p, d, ceil), [T([1, 2, 7, 6], "f32")], mp(k, s, p, d, ceil))
    case("max_pool2d_with_indices", lambda x, k=k, s=s, p=p, d=d, ceil=ceil: F.max_pool2d(x, k, s or None, p, d, ceil, return_indices=True),
         [T([1, 2, 7, 6], "f64")], mp(k, s, p, d, ceil))
for dt in ["f64", "bf16", "f16"]:
    case("max_pool2d", lambda x: F.max_pool2d(x, 2, 1, 1), [T([2, 4, 5], dt)], mp((2,), (1,), (1,)))
case("max_pool2d", lambda x: F.max_pool2d(x, 2), [T([1, 2, 4, 4], "f32", "edge")], mp((2,)))
case("max_pool2d", lambda x: F.max_pool2d(x, 2), [T([1, 2, 4, 6], "f32", layout="transposed")], mp((2,)))
case("max_pool2d", lambda x: F.max_pool2d(x, 2), [T([0, 2, 4, 4], "f32")], mp((2,)))
case("max_pool2d", None, [T([1, 2, 5, 5], "f32")], mp((2,), (), (2,)), error="pad should be at most half of kernel size, but got pad=2 and kernel_size=2")
case("max_pool2d", None, [T([1, 2, 5, 5], "f32")], mp((7,)), error="Output size is too small")
case("max_pool2d", None, [T([2, 5], "f32")], mp((2,)), error="3D or 4D")
case("max_pool2d", None, [T([1, 2, 5, 5], "i64", "int")], mp((2,)), error="not implemented for dtype i64")
case("max_pool2d_with_indices", lambda x: F.max_pool2d(x, 2, 2, 1, return_indices=True), [T([2, 4, 5], "f32", "edge")], mp((2,), (2,), (1,)))
case("max_pool2d_with_indices", lambda x: F.max_pool2d(x, 3, 1, 1, return_indices=True), [T([1, 1, 4, 4], "bf16")], mp((3,), (1,), (1,)))
case("max_pool2d_with_indices", lambda x: F.max_pool2d(x, 2, return_indices=True),
     [T([1, 1, 2, 4], "f32", [[[[-math.inf, -math.inf, 1.0, 1.0], [-math.inf, -math.inf, 1.0, 2.0]]]])], mp((2,)))


def ap(k, s=(), p=(0,), ceil=False, cip=True, dov=None):
    a = {"kernel_size": list(k), "stride": list(s), "padding": list(p), "ceil_mode": ceil, "count_include_pad": cip}
    if dov is not None:
        a["divisor_override"] = dov
    return a


for k, s, p, ceil, cip, dov in [((2,), (), (0,), False, True, None), ((3,), (2,), (1,), False, True, None), ((3,), (2,), (1,), True, True, None),
                                ((3,), (2,), (1,), True, False, None), ((2, 3), (1, 2), (1, 1), False, False, None), ((2,), (2,), (1,), True, True, 3),
                                ((3, 2), (2,), (1, 0), True, True, None), ((2,), (3,), (0,), True, False, None)]:
    case("avg_pool2d", lambda x, k=k, s=s, p=p, ceil=ceil, cip=cip, dov=dov: F.avg_pool2d(x, k, s or None, p, ceil, cip, dov), [T([1, 2, 7, 6], "f32")],
         ap(k, s, p, ceil, cip, dov))
for dt in ["f64", "bf16", "f16"]:
    case("avg_pool2d", lambda x: F.avg_pool2d(x, 3, 2, 1, True, False), [T([2, 5, 6], dt)], ap((3,), (2,), (1,), True, False))
case("avg_pool2d", lambda x: F.avg_pool2d(x, 2), [T([1, 2, 4, 6], "f32", layout="strided")], ap((2,)))
case("avg_pool2d", None, [T([1, 2, 5, 5], "f32")], ap((2,), (), (2,)), error="pad should be at most half of kernel size")
case("avg_pool2d", None, [T([1, 2, 5, 5], "f32")], ap((2,), dov=0), error="divisor must be not zero")

for k, s, p, d, ceil in [((2,), (), (0,), (1,), False), ((3,), (2,), (1,), (1,), True), ((2,), (1,), (1,), (2,), False)]:
    case("max_pool1d", lambda x, k=k, s=s, p=p, d=d, ceil=ceil: F.max_pool1d(x, k, s or None, p, d, ceil), [T([2, 3, 9], "f32")], mp(k, s, p, d, ceil))
case("max_pool1d", lambda x: F.max_pool1d(x, 2), [T([3, 8], "f64")], mp((2,)))
for k, s, p, ceil, cip in [((2,), (), (0,), False, True), ((3,), (2,), (1,), True, False), ((3,), (2,), (1,), True, True)]:
    case("avg_pool1d", lambda x, k=k, s=s, p=p, ceil=ceil, cip=cip: F.avg_pool1d(x, k, s or None, p, ceil, cip), [T([2, 3, 9], "f32")],
         {"kernel_size": list(k), "stride": list(s), "padding": list(p), "ceil_mode": ceil, "count_include_pad": cip})
case("avg_pool1d", None, [T([2, 3, 9], "f32")], {"kernel_size": [2, 2]}, error="must be a single int")

for ins, outs in [([1, 2, 5, 7], [2, 3]), ([1, 3, 4, 4], [1, 1]), ([1, 2, 5, 7], [5, 7]), ([2, 6, 4], [4, 3]), ([1, 1, 3, 5], [7, 2]), ([1, 1, 4, 4], [0, 2])]:
    for dt in (["f32", "f64", "bf16", "f16"] if outs == [2, 3] else ["f32"]):
        case("adaptive_avg_pool2d", lambda x, o=outs: F.adaptive_avg_pool2d(x, o), [T(ins, dt)], {"output_size": outs})
        case("adaptive_max_pool2d", lambda x, o=outs: F.adaptive_max_pool2d(x, o, return_indices=True), [T(ins, dt)], {"output_size": outs})
case("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, 2), [T([1, 2, 4, 6], "f64", layout="transposed")], {"output_size": [2]})
case("adaptive_max_pool2d", lambda x: F.adaptive_max_pool2d(x, 2, return_indices=True), [T([1, 2, 4, 4], "f32", "edge")], {"output_size": [2]})
case("adaptive_avg_pool2d", None, [T([4, 4], "f32")], {"output_size": [2, 2]}, error="Expected 3D or 4D tensor")
case("adaptive_max_pool2d", None, [T([1, 0, 4], "f32")], {"output_size": [2, 2]}, error="non-zero size for non-batch dimensions")
