"""Cases for the index group: shape views, joins/splits, gathers/scatters,
advanced and masked indexing, padding, flips and repeats."""
import torch
import torch.nn.functional as F
from golden import case, T, S, ALL, FLOATS, INTS

G = "index"


def kind(dt):
    return "bool" if dt == "bool" else ("int" if dt in INTS else "randn")


# ---------------------------------------------------------------- views
def squeeze_dims(x, dims):
    r = x.dim()
    ax = {d % r if r else 0 for d in dims}
    shape = [s for i, s in enumerate(x.shape) if not (i in ax and s == 1)]
    return x.reshape(shape)


for dt in ["f32", "i64", "bool", "bf16"]:
    case(G, "transpose", lambda x: x.transpose(0, 2), [T([2, 3, 4], dt, kind(dt))], {"dim0": 0, "dim1": 2})
case(G, "transpose", lambda x: x.transpose(-1, 0), [T([3, 4], "f32", layout="transposed")], {"dim0": -1, "dim1": 0})
case(G, "transpose", lambda x: x.transpose(0, 0), [T([], "f32")], {"dim0": 0, "dim1": -1})
case(G, "transpose", None, [T([3, 4], "f32")], {"dim0": 0, "dim1": 2}, error="dimension out of range")
case(G, "t", lambda x: x.t(), [T([3, 4], "f64", layout="strided")])
case(G, "t", lambda x: x.t(), [T([4], "i32", "int")])
case(G, "t", lambda x: x.t(), [T([], "f32")])
case(G, "t", None, [T([2, 3, 4], "f32")], error="<= 2 dimensions")
for (d, s, l) in [(0, 1, 2), (1, -3, 2), (1, 0, 0), (-1, 4, 0)]:
    case(G, "narrow", lambda x, d=d, s=s, l=l: x.narrow(d, s, l), [T([3, 4], "f32")], {"dim": d, "start": s, "length": l})
case(G, "narrow", lambda x: x.narrow(0, 1, 2), [T([4, 3], "u8", "int", layout="transposed")], {"dim": 0, "start": 1, "length": 2})
case(G, "narrow", None, [T([3, 4], "f32")], {"dim": 1, "start": 2, "length": 3}, error="exceeds dimension size")
case(G, "narrow", None, [T([], "f32")], {"dim": 0, "start": 0, "length": 1}, error="0-dim")
for dims in [[], [1], [0, 2], [-1], [1, 3]]:
    case(G, "squeeze", lambda x, dims=dims: squeeze_dims(x, dims) if dims else x.squeeze(), [T([1, 3, 1, 1], "f32")], {"dims": dims})
case(G, "squeeze", lambda x: x.squeeze(), [T([1, 1], "i16", "int")], {"dims": []})
case(G, "squeeze", lambda x: x.squeeze(0), [T([], "f32")], {"dims": [0]})
case(G, "squeeze", lambda x: x.squeeze(1), [T([2, 1, 3], "f32", layout="strided")], {"dims": [1]})
case(G, "squeeze", None, [T([2, 3], "f32")], {"dims": [2]}, error="dimension out of range")
for d in [0, 1, 2, -1, -3]:
    case(G, "unsqueeze", lambda x, d=d: x.unsqueeze(d), [T([2, 3], "f32")], {"dim": d})
case(G, "unsqueeze", lambda x: x.unsqueeze(1), [T([3, 4], "i8", "int", layout="transposed")], {"dim": 1})
case(G, "unsqueeze", lambda x: x.unsqueeze(0), [T([], "bool", "bool")], {"dim": 0})
case(G, "unsqueeze", None, [T([2, 3], "f32")], {"dim": 3}, error="dimension out of range")
for (s, e) in [(0, -1), (1, 2), (0, 0), (-2, -1)]:
    case(G, "flatten", lambda x, s=s, e=e: x.flatten(s, e), [T([2, 3, 4], "f32")], {"start_dim": s, "end_dim": e})
case(G, "flatten", lambda x: x.flatten(), [T([3, 4], "f16", layout="transposed")], {})
case(G, "flatten", lambda x: x.flatten(), [T([], "f32")], {})
case(G, "flatten", lambda x: x.flatten(), [T([2, 0, 3], "f32")], {})
case(G, "flatten", None, [T([2, 3, 4], "f32")], {"start_dim": 2, "end_dim": 1}, error="start_dim cannot come after end_dim")
case(G, "unflatten", lambda x: x.unflatten(1, (2, 3)), [T([2, 6], "f32")], {"dim": 1, "sizes": [2, 3]})
case(G, "unflatten", lambda x: x.unflatten(-1, (-1, 2)), [T([3, 4], "i64", "int", layout="transposed")], {"dim": -1, "sizes": [-1, 2]})
case(G, "unflatten", lambda x: x.unflatten(0, (1, 2, 1)), [T([2], "f32")], {"dim": 0, "sizes": [1, 2, 1]})
case(G, "unflatten", None, [T([2, 6], "f32")], {"dim": 1, "sizes": [4, 2]}, error="don't multiply up")
case(G, "view", lambda x: x.view(3, -1), [T([2, 6], "f32")], {"shape": [3, -1]})
case(G, "view", lambda x: x.view([]), [T([1], "i32", "int")], {"shape": []})
case(G, "view", lambda x: x.view(4, 1, 3), [T([4, 3], "f32", layout="strided")], {"shape": [4, 1, 3]})
case(G, "view", None, [T([3, 4], "f32", layout="transposed")], {"shape": [12]}, error="view size is not compatible")
case(G, "view", None, [T([3, 4], "f32")], {"shape": [5, -1]}, error="invalid for input of size 12")
case(G, "movedim", lambda x: torch.movedim(x, 0, 2), [T([2, 3, 4], "f32")], {"source": [0], "destination": [2]})
case(G, "movedim", lambda x: torch.movedim(x, (0, 1), (-1, 0)), [T([2, 3, 4], "i32", "int")], {"source": [0, 1], "destination": [-1, 0]})
case(G, "movedim", lambda x: torch.movedim(x, 1, 0), [T([3, 4], "f64", layout="transposed")], {"source": [1], "destination": [0]})
case(G, "movedim", None, [T([2, 3, 4], "f32")], {"source": [0, 0], "destination": [1, 2]}, error="repeated dim")

# ---------------------------------------------------------------- joins
for dt in ALL:
    case(G, "cat", lambda *xs: torch.cat(xs, 1), [T([2, 3], dt, kind(dt)), T([2, 1], dt, kind(dt)), T([2, 2], dt, kind(dt), layout="strided")], {"dim": 1})
case(G, "cat", lambda *xs: torch.cat(xs, 0), [T([2, 3], "f32", layout="transposed"), T([1, 3], "f32")], {"dim": 0})
case(G, "cat", lambda *xs: torch.cat(xs, -1), [T([2, 2], "i32", "int"), T([2, 3], "f64")], {"dim": -1})
case(G, "cat", lambda *xs: torch.cat(xs, 0), [T([2], "u8", "int"), T([3], "i8", "int"), T([1], "bool", "bool")], {"dim": 0})
case(G, "cat", lambda *xs: torch.cat(xs, 0), [T([2], "bf16"), T([2], "f16")], {"dim": 0})
case(G, "cat", lambda *xs: torch.cat(xs, 1), [T([2, 3], "f32"), T([0], "f32"), T([2, 1], "f32")], {"dim": 1})
case(G, "cat", lambda *xs: torch.cat(xs, 0), [T([0], "f32"), T([0], "f32")], {"dim": 0})
case(G, "cat", lambda *xs: torch.cat(xs, 0), [T([0, 3], "f32"), T([2, 3], "f32")], {"dim": 0})
case(G, "cat", lambda *xs: torch.cat(xs, 2), [T([2, 3, 4], "f32", layout="transposed")], {"dim": 2})
case(G, "cat", None, [T([2, 3], "f32"), T([2, 4], "f32")], {"dim": 0}, error="Sizes of tensors must match except in dimension 0")
case(G, "cat", None, [T([2, 3], "f32"), T([3], "f32")], {"dim": 0}, error="same number of dimensions")
case(G, "cat", None, [T([], "f32"), T([], "f32")], {"dim": 0}, error="zero-dimensional")
case(G, "cat", None, [], {"dim": 0}, error="non-empty")
for d in [0, 1, 2, -1]:
    case(G, "stack", lambda *xs, d=d: torch.stack(xs, d), [T([2, 3], "f32"), T([2, 3], "f32", layout="transposed")], {"dim": d})
case(G, "stack", lambda *xs: torch.stack(xs, 0), [T([3], "i64", "int"), T([3], "f32"), T([3], "bool", "bool")], {"dim": 0})
case(G, "stack", lambda *xs: torch.stack(xs, 0), [T([], "f32"), T([], "f32")], {"dim": 0})
case(G, "stack", lambda *xs: torch.stack(xs, 1), [T([2, 0], "f32")], {"dim": 1})
case(G, "stack", None, [T([2, 3], "f32"), T([3, 2], "f32")], {"dim": 0}, error="equal size")
case(G, "split", lambda x: torch.split(x, 2, 0), [T([5, 3], "f32")], {"split_size": 2})
case(G, "split", lambda x: torch.split(x, 3, 1), [T([2, 6], "i32", "int", layout="transposed")], {"split_size": 3, "dim": 1})
case(G, "split", lambda x: torch.split(x, 10, 0), [T([4], "f32")], {"split_size": 10})
case(G, "split", lambda x: torch.split(x, [1, 0, 3], -1), [T([2, 4], "bf16")], {"sections": [1, 0, 3], "dim": -1})
case(G, "split", lambda x: torch.split(x, 2, 0), [T([0, 2], "f32")], {"split_size": 2})
case(G, "split", None, [T([5], "f32")], {"sections": [2, 2]}, error="sum exactly to 5")
for (n, d) in [(2, 0), (3, 1), (4, 1), (6, 1)]:
    case(G, "chunk", lambda x, n=n, d=d: torch.chunk(x, n, d), [T([3, 5], "f32")], {"chunks": n, "dim": d})
case(G, "chunk", lambda x: torch.chunk(x, 2, 0), [T([4, 2], "u8", "int", layout="strided")], {"chunks": 2})
case(G, "chunk", None, [T([4], "f32")], {"chunks": 0}, error="greater than 0")
case(G, "unbind", lambda x: torch.unbind(x, 0), [T([3, 2], "f32")], {"dim": 0})
case(G, "unbind", lambda x: torch.unbind(x, -1), [T([2, 3], "i16", "int", layout="transposed")], {"dim": -1})
case(G, "unbind", lambda x: torch.unbind(x, 1), [T([2, 0], "f32")], {"dim": 1})
case(G, "unbind", None, [T([], "f32")], {"dim": 0}, error="no dimensions")

# ---------------------------------------------------------------- gather / scatter
for dt in ALL:
    case(G, "gather", lambda x, i: torch.gather(x, 1, i), [T([3, 4], dt, kind(dt)), T([3, 5], "i64", "index", hi=4)], {"dim": 1})
case(G, "gather", lambda x, i: torch.gather(x, 0, i), [T([3, 4], "f32", layout="transposed"), T([2, 4], "i64", "index", hi=3, layout="strided")], {"dim": 0})
case(G, "gather", lambda x, i: torch.gather(x, -1, i), [T([2, 3, 4], "f64"), T([2, 2, 6], "i64", "index", hi=4)], {"dim": -1})
case(G, "gather", lambda x, i: torch.gather(x, 0, i), [T([], "f32"), T([], "i64", [0])], {"dim": 0})
case(G, "gather", lambda x, i: torch.gather(x, 1, i), [T([3, 4], "f32"), T([3, 0], "i64", "index", hi=4)], {"dim": 1})
case(G, "gather", None, [T([3, 4], "f32"), T([2, 2], "i64", [[0, 1], [4, 0]])], {"dim": 1}, error="index 4 is out of bounds for dimension 1 with size 4")
case(G, "gather", None, [T([3, 4], "f32"), T([2, 2], "i64", [[0, -1], [1, 0]])], {"dim": 1}, error="index -1 is out of bounds for dimension 1 with size 4")
case(G, "gather", None, [T([3, 4], "f32"), T([4, 2], "i64", "index", hi=3)], {"dim": 1}, error="Size does not match at dimension 0")
case(G, "gather", None, [T([3, 4], "f32"), T([3], "i64", "index", hi=3)], {"dim": 1}, error="same number of dimensions")

# Unique indices along dim make scatter deterministic (PyTorch leaves the
# winner of duplicates unspecified).
perm = [[2, 0, 3], [1, 3, 0]]
for dt in ALL:
    case(G, "scatter", lambda x, i, s: x.scatter(1, i, s), [T([2, 4], dt, kind(dt)), T([2, 3], "i64", perm), T([2, 5], dt, kind(dt))], {"dim": 1})
case(G, "scatter", lambda x, i, s: x.scatter(0, i, s), [T([3, 2], "f32", layout="transposed"), T([2, 2], "i64", [[2, 0], [0, 1]]), T([2, 3], "f32", layout="strided")], {"dim": 0})
case(G, "scatter", lambda x, i, _: x.scatter(1, i, 2.5), [T([2, 4], "f32"), T([2, 3], "i64", perm), None], {"dim": 1, "value": 2.5})
case(G, "scatter", lambda x, i, _: x.scatter(1, i, 7), [T([2, 4], "i32", "int"), T([2, 3], "i64", perm), None], {"dim": 1, "value": 7})
case(G, "scatter", lambda x, i, _: x.scatter(1, i, True), [T([2, 4], "bool", "bool"), T([2, 3], "i64", perm), None], {"dim": 1, "value": True})
case(G, "scatter", lambda x, i, s: x.scatter(0, i, s), [T([4], "f32"), T([0], "i64", []), T([0], "f32")], {"dim": 0})
case(G, "scatter", None, [T([2, 4], "f32"), T([2, 3], "i64", [[0, 1, 9], [0, 1, 2]]), T([2, 3], "f32")], {"dim": 1}, error="index 9 is out of bounds for dimension 1 with size 4")
case(G, "scatter", None, [T([2, 4], "f32"), T([2, 3], "i64", perm), T([2, 3], "f64")], {"dim": 1}, error="self.dtype to be equal to src.dtype")
case(G, "scatter", None, [T([2, 4], "f32"), T([2, 3], "i64", perm), T([2, 2], "f32")], {"dim": 1}, error="smaller size than src")

dup = [[0, 0, 3, 1, 0], [2, 2, 2, 1, 3]]
for red in ["sum", "prod", "mean", "amax", "amin"]:
    for inc in [True, False]:
        for dt in ["f32", "f64", "i64", "i32", "bf16"]:
            k = "int" if dt in INTS else ("pos" if red == "prod" else "randn")
            case(G, "scatter_reduce", lambda x, i, s, red=red, inc=inc: x.scatter_reduce(1, i, s, red, include_self=inc),
                 [T([2, 4], dt, k), T([2, 5], "i64", dup), T([2, 5], dt, k)], {"dim": 1, "reduce": red, "include_self": inc},
                 rtol=(2e-2 if dt == "bf16" else None))
for red in ["amax", "amin", "sum"]:
    case(G, "scatter_reduce", lambda x, i, s, red=red: x.scatter_reduce(0, i, s, red),
         [T([4], "f32", "edge"), T([6], "i64", [0, 1, 1, 2, 3, 3]), T([6], "f32", "edge")], {"dim": 0, "reduce": red})
case(G, "scatter_reduce", lambda x, i, s: x.scatter_reduce(0, i, s, "mean"),
     [T([3], "i64", [-7, 3, -1]), T([4], "i64", [0, 0, 2, 1]), T([4], "i64", [2, -2, -4, 4])], {"dim": 0, "reduce": "mean"})
case(G, "scatter_reduce", lambda x, i, s: x.scatter_reduce(0, i, s, "sum"), [T([3, 2], "u8", "int", layout="transposed"),
     T([2, 2], "i64", [[2, 0], [2, 1]]), T([3, 2], "u8", "big")], {"dim": 0, "reduce": "sum"})
case(G, "scatter_reduce", None, [T([4], "f32"), T([2], "i64", [0, 4]), T([2], "f32")], {"dim": 0, "reduce": "sum"}, error="index 4 is out of bounds")
case(G, "scatter_reduce", None, [T([4], "f32"), T([2], "i64", [0, 1]), T([2], "f32")], {"dim": 0, "reduce": "max"}, error="reduce argument must be")
for dt in ["f32", "i64", "f16", "u8"]:
    case(G, "scatter_add", lambda x, i, s: x.scatter_add(1, i, s), [T([2, 4], dt, kind(dt)), T([2, 5], "i64", dup), T([2, 5], dt, kind(dt))], {"dim": 1})
case(G, "scatter_add", lambda x, i, s: x.scatter_add(0, i, s), [T([3, 2], "f64", layout="transposed"), T([2, 2], "i64", [[2, 0], [2, 2]]), T([2, 3], "f64", layout="strided")], {"dim": 0})
case(G, "scatter_add", None, [T([4], "f32"), T([2], "i64", [0, -1]), T([2], "f32")], {"dim": 0}, error="index -1 is out of bounds")

for dt in ALL:
    case(G, "index_select", lambda x, i: x.index_select(0, i), [T([4, 3], dt, kind(dt)), T([5], "i64", "index", hi=4)], {"dim": 0})
case(G, "index_select", lambda x, i: x.index_select(1, i), [T([3, 4], "f32", layout="transposed"), T([3], "i32", [3, 0, 3])], {"dim": 1})
case(G, "index_select", lambda x, i: x.index_select(-1, i), [T([2, 3, 4], "f32", layout="strided"), T([], "i64", [2])], {"dim": -1})
case(G, "index_select", lambda x, i: x.index_select(0, i), [T([], "f64"), T([1], "i64", [0])], {"dim": 0})
case(G, "index_select", lambda x, i: x.index_select(0, i), [T([3, 2], "f32"), T([0], "i64", [])], {"dim": 0})
case(G, "index_select", None, [T([3, 2], "f32"), T([2], "i64", [0, 3])], {"dim": 0}, error="index 3 is out of bounds for dimension 0 with size 3")
case(G, "index_select", None, [T([3, 2], "f32"), T([2], "i64", [0, -1])], {"dim": 0}, error="index -1 is out of bounds")
case(G, "index_select", None, [T([3, 2], "f32"), T([2, 1], "i64", [[0], [1]])], {"dim": 0}, error="supposed to be a vector")
case(G, "index_select", None, [T([3, 2], "f32"), T([2], "f32", [0, 1])], {"dim": 0}, error="int32 or int64")

for dt in ["f32", "f64", "i64", "i16", "bf16"]:
    case(G, "index_add", lambda x, i, s: x.index_add(1, i, s), [T([2, 4], dt, kind(dt)), T([3], "i64", [3, 0, 3]), T([2, 3], dt, kind(dt))], {"dim": 1})
case(G, "index_add", lambda x, i, s: x.index_add(0, i, s, alpha=2.5), [T([3, 2], "f32", layout="transposed"), T([2], "i64", [2, 2]), T([2, 2], "f32")], {"dim": 0, "alpha": 2.5})
case(G, "index_add", lambda x, i, s: x.index_add(0, i, s, alpha=-2), [T([3], "i32", "int"), T([2], "i32", [0, 2]), T([2], "i32", "int")], {"dim": 0, "alpha": -2})
case(G, "index_add", lambda x, i, s: x.index_add(0, i, s), [T([], "f32"), T([1], "i64", [0]), T([], "f32")], {"dim": 0})
case(G, "index_add", None, [T([3], "f32"), T([1], "i64", [3]), T([1], "f32")], {"dim": 0}, error="index 3 is out of bounds")
case(G, "index_add", None, [T([3], "f32"), T([1], "i64", [0]), T([1], "f64")], {"dim": 0}, error="same scalar type")
for dt in ALL:
    case(G, "index_copy", lambda x, i, s: x.index_copy(1, i, s), [T([2, 4], dt, kind(dt)), T([3], "i64", [3, 0, 1]), T([2, 3], dt, kind(dt))], {"dim": 1})
case(G, "index_copy", lambda x, i, s: x.index_copy(0, i, s), [T([3, 2], "f32", layout="transposed"), T([1], "i64", [1]), T([1, 2], "f32", layout="strided")], {"dim": 0})
case(G, "index_copy", None, [T([3], "f32"), T([1], "i64", [5]), T([1], "f32")], {"dim": 0}, error="index 5 is out of bounds")
case(G, "index_copy", None, [T([3, 2], "f32"), T([2], "i64", [0, 1]), T([3, 2], "f32")], {"dim": 0}, error="must have the shape of self")
for dt in ALL:
    v = True if dt == "bool" else (3 if dt in INTS else -1.5)
    case(G, "index_fill", lambda x, i, v=v: x.index_fill(1, i, v), [T([3, 4], dt, kind(dt)), T([2], "i64", [3, -4])], {"dim": 1, "value": v})
case(G, "index_fill", lambda x, i: x.index_fill(0, i, 2), [T([3, 2], "f32", layout="transposed"), T([], "i64", [1])], {"dim": 0, "value": 2})
case(G, "index_fill", lambda x, i: x.index_fill(0, i, float("nan")), [T([3], "f64"), T([2], "i64", [0, 0])], {"dim": 0, "value": float("nan")})
case(G, "index_fill", None, [T([3], "f32"), T([1], "i64", [3])], {"dim": 0, "value": 1.0}, error="index 3 is out of bounds")


def index(x, *idx):
    return x[tuple(slice(None) if i is None else i for i in idx)]


for dt in ALL:
    case(G, "index", index, [T([4, 3], dt, kind(dt)), T([2, 2], "i64", [[0, -1], [3, 1]])])
case(G, "index", index, [T([3, 4], "f32", layout="transposed"), None, T([3], "i64", [0, 3, -2])])
case(G, "index", index, [T([2, 3, 4], "f32"), T([2], "i64", [1, 0]), None, T([2], "i64", [3, 0])])
case(G, "index", index, [T([2, 3, 4], "f32", layout="strided"), None, T([2, 1], "i64", [[1], [2]]), T([3], "i64", [0, 3, 2])])
case(G, "index", index, [T([2, 3, 4], "i64", "int"), T([], "i64", [1]), T([], "i64", [2])])
case(G, "index", index, [T([3, 2], "f32"), T([0], "i64", [])])
case(G, "index", None, [T([3, 2], "f32"), T([2], "i64", [0, 3])], error="index 3 is out of bounds for dimension 0 with size 3")
case(G, "index", None, [T([3, 2], "f32"), None, T([1], "i64", [-3])], error="index -3 is out of bounds for dimension 1 with size 2")
case(G, "index", None, [T([3, 2], "f32"), T([2], "i64", [0, 1]), T([3], "i64", [0, 1, 0])], error="could not be broadcast")
case(G, "index", None, [T([3, 2], "f32"), T([1], "i64", [0]), T([1], "i64", [0]), T([1], "i64", [0])], error="too many indices")


def index_put(x, v, *idx, acc=False):
    if any(i is None for i in idx):
        # index_put takes no None entries in torch 1.13: index through a
        # permuted view that puts the indexed dims first (same result).
        y = x.clone()
        key = tuple(slice(None) if i is None else i for i in idx)
        if acc:
            y[key] += v  # no duplicate indices in these cases
        else:
            y[key] = v
        return y
    return x.index_put(tuple(idx), v, accumulate=acc)


for dt in ALL:
    case(G, "index_put", index_put, [T([4, 3], dt, kind(dt)), T([2, 3], dt, kind(dt)), T([2], "i64", [3, -4])])
for acc in [False, True]:
    a = {"accumulate": acc}
    f = lambda x, v, *i, acc=acc: index_put(x, v, *i, acc=acc)
    case(G, "index_put", f, [T([3, 4], "f32", layout="transposed"), T([3], "f32"), None, T([3], "i64", [0, 2, -1])], a)
    case(G, "index_put", f, [T([2, 3, 4], "f64"), T([2, 3], "f64", layout="strided"), T([2], "i64", [1, 0]), None, T([2], "i64", [3, 0])], a)
    case(G, "index_put", f, [T([3, 4], "f32"), T([], "f32"), T([3, 4], "bool", "bool")], a)
    case(G, "index_put", f, [T([3, 4], "i32", "int"), T([4], "i32", "int"), T([3], "bool", [True, False, True])], a)
    case(G, "index_put", f, [T([3, 4], "bool", "bool"), T([], "bool", [True]), T([2], "i64", [0, 2])], a)
case(G, "index_put", lambda x, v, i: index_put(x, v, i, acc=True), [T([4], "f32"), T([5], "f32"), T([5], "i64", [0, 1, 0, 0, 3])], {"accumulate": True})
case(G, "index_put", lambda x, v, i: index_put(x, v, i, acc=True), [T([4], "i8", "int"), T([3], "i8", "big"), T([3], "i64", [1, 1, 1])], {"accumulate": True})
case(G, "index_put", lambda x, v, i: index_put(x, torch.tensor(v, dtype=x.dtype), i), [T([4], "f32"), S(2.5), T([2], "i64", [1, 2])])
case(G, "index_put", lambda x, v, i: index_put(x, torch.tensor(v, dtype=x.dtype), i), [T([4], "i64", "int"), S(7), T([2], "i64", [1, 2])])
case(G, "index_put", None, [T([3], "f32"), T([1], "f32"), T([1], "i64", [3])], error="index 3 is out of bounds for dimension 0 with size 3")
case(G, "index_put", None, [T([3], "f32"), T([2], "f32"), T([3], "i64", [0, 1, 2])], error="shape mismatch")
case(G, "index_put", None, [T([3], "f32"), T([3], "f32"), T([3], "bool", [True, False, True])], error="shape mismatch")
case(G, "index_put", None, [T([3], "f32"), T([1], "f64"), T([1], "i64", [0])], error="dtypes match")
case(G, "index_put", None, [T([3, 2], "f32"), T([1], "f32"), T([2], "bool", [True, False])], error="does not match the shape of the indexed tensor")

for dt in ["f32", "i64", "bool"]:
    case(G, "take", torch.take, [T([3, 4], dt, kind(dt)), T([2, 3], "i64", [[0, 11, -1], [-12, 5, 5]])])
case(G, "take", torch.take, [T([3, 4], "f32", layout="transposed"), T([4], "i64", [1, 4, 6, 11])])
case(G, "take", torch.take, [T([], "f32"), T([2], "i64", [0, -1])])
case(G, "take", None, [T([3, 4], "f32"), T([1], "i64", [12])], error="index 12 is out of bounds")
case(G, "take_along_dim", lambda x, i: torch.take_along_dim(x, i, 1), [T([3, 4], "f32"), T([3, 2], "i64", "index", hi=4)], {"dim": 1})
case(G, "take_along_dim", lambda x, i: torch.take_along_dim(x, i, 0), [T([3, 4], "i32", "int", layout="transposed"), T([2, 1], "i64", "index", hi=3)], {"dim": 0})
case(G, "take_along_dim", lambda x, i: torch.take_along_dim(x, i, -1), [T([2, 1, 4], "f64"), T([1, 3, 2], "i64", "index", hi=4)], {"dim": -1})
case(G, "take_along_dim", lambda x, i: torch.take_along_dim(x, i), [T([3, 4], "f32"), T([5], "i64", "index", hi=12)], {})
case(G, "take_along_dim", None, [T([3, 4], "f32"), T([3], "i64", [0, 1, 2])], {"dim": 1}, error="same number of dimensions")

# ---------------------------------------------------------------- masked
for dt in ALL:
    v = True if dt == "bool" else (3 if dt in INTS else -1.5)
    case(G, "masked_fill", lambda x, m, v: x.masked_fill(m, v), [T([3, 4], dt, kind(dt)), T([3, 4], "bool", "bool"), S(v)])
case(G, "masked_fill", lambda x, m, v: x.masked_fill(m, v), [T([3, 4], "f32", layout="transposed"), T([4], "bool", "bool"), S(2)])
case(G, "masked_fill", lambda x, m, v: x.masked_fill(m, v), [T([3, 1], "i32", "int"), T([2, 1, 4], "bool", "bool"), S(2.7)])
case(G, "masked_fill", lambda x, m, v: x.masked_fill(m, v), [T([2, 3], "f16"), T([2, 3], "bool", "bool", layout="strided"), T([], "f64", [float("inf")])])
case(G, "masked_fill", lambda x, m, v: x.masked_fill(m, v), [T([2, 3], "u8", "int"), T([2, 3], "bool", "bool"), S(True)])
case(G, "masked_fill", lambda x, m, v: x.masked_fill(m, v), [T([0, 3], "f32"), T([3], "bool", "bool"), S(1.0)])
case(G, "masked_fill", None, [T([2, 3], "f32"), T([2, 3], "u8", "int"), S(1.0)], error="boolean masks")
case(G, "masked_fill", None, [T([2, 3], "f32"), T([2, 3], "bool", "bool"), T([1], "f32")], error="0-dimensional value")
case(G, "masked_fill", None, [T([2, 3], "f32"), T([2], "bool", "bool"), S(1.0)], error="not broadcastable")

m34 = [[True, False, False, True], [False, False, False, False], [True, True, False, True]]
for dt in ALL:
    case(G, "masked_select", torch.masked_select, [T([3, 4], dt, kind(dt)), T([3, 4], "bool", m34)], {"count": 5})
case(G, "masked_select", torch.masked_select, [T([3, 4], "f32", layout="transposed"), T([4], "bool", [True, False, True, True])], {"count": 9})
case(G, "masked_select", torch.masked_select, [T([2, 1], "i64", "int"), T([3], "bool", [False, True, True])], {"count": 4})
case(G, "masked_select", torch.masked_select, [T([], "f32"), T([], "bool", [True])], {"count": 1})
case(G, "masked_select", torch.masked_select, [T([2, 2], "f32"), T([2, 2], "bool", [[False, False], [False, False]])], {"count": 0})
case(G, "masked_select", None, [T([2], "f32"), T([2], "bool", [True, True])], {"count": 1}, error="2 true elements")
case(G, "masked_select", None, [T([2], "f32"), T([2], "i64", [1, 1])], {"count": 2}, error="BoolTensor")
for dt in ALL:
    case(G, "masked_scatter", lambda x, m, s: x.masked_scatter(m, s), [T([3, 4], dt, kind(dt)), T([3, 4], "bool", m34), T([7], dt, kind(dt))])
case(G, "masked_scatter", lambda x, m, s: x.masked_scatter(m, s), [T([3, 4], "f32", layout="transposed"), T([4], "bool", [True, False, True, True]), T([3, 4], "f32", layout="strided")])
case(G, "masked_scatter", lambda x, m, s: x.masked_scatter(m, s), [T([3, 1], "f64"), T([2, 1, 2], "bool", "bool"), T([2, 6], "f64")])
case(G, "masked_scatter", None, [T([2, 2], "f32"), T([2, 2], "bool", [[True, True], [True, False]]), T([2], "f32")], error="Number of elements of source < number of ones in mask")
case(G, "masked_scatter", None, [T([2], "f32"), T([2], "bool", [True, True]), T([2], "f64")], error="same dtypes")

for dt in ALL:
    case(G, "nonzero", torch.nonzero, [T([3, 4], dt, [[0, 1, 0, 2], [3, 0, 0, 0], [0, 0, 0, 1]])], {"count": 4})
case(G, "nonzero", torch.nonzero, [T([4, 3], "f32", [[0, 1, 0], [0.5, 0, -0.0], [float("nan"), 0, 0], [0, 0, 1e-40]], layout="transposed")], {"count": 4})
case(G, "nonzero", torch.nonzero, [T([2, 2, 2], "i64", [[[0, 1], [1, 0]], [[0, 0], [1, 1]]])], {"count": 4})
case(G, "nonzero", torch.nonzero, [T([], "f32", [2.0])], {"count": 1})
case(G, "nonzero", torch.nonzero, [T([], "f32", [0.0])], {"count": 0})
case(G, "nonzero", torch.nonzero, [T([0, 3], "f32")], {"count": 0})
case(G, "nonzero", None, [T([3], "f32", [1, 0, 1])], {"count": 3}, error="2 non-zero elements")

# ---------------------------------------------------------------- movement


def pad_nd(x, low, high, interior, value):
    # Reference StableHLO pad: interior padding, then edge padding/cropping.
    for d in range(x.dim()):
        n, k = x.shape[d], interior[d]
        if k > 0 and n > 1:
            shape = list(x.shape)
            shape[d] = n + (n - 1) * k
            y = torch.full(shape, value, dtype=x.dtype)
            idx = [slice(None)] * x.dim()
            idx[d] = slice(0, None, k + 1)
            y[tuple(idx)] = x
            x = y
    pads = []
    for d in reversed(range(x.dim())):
        pads += [low[d], high[d]]
    return F.pad(x, pads, value=value)


for dt in ALL:
    v = True if dt == "bool" else (2 if dt in INTS else -1.5)
    case(G, "pad_nd", lambda x, v=v: pad_nd(x, [1, 0], [0, 2], [0, 1], v), [T([2, 3], dt, kind(dt))], {"low": [1, 0], "high": [0, 2], "interior": [0, 1], "value": v})
case(G, "pad_nd", lambda x: pad_nd(x, [-1, 2], [1, -2], [0, 0], 0.0), [T([3, 4], "f32", layout="transposed")], {"low": [-1, 2], "high": [1, -2]})
case(G, "pad_nd", lambda x: pad_nd(x, [-2], [-3], [2], 9.0), [T([4], "f64")], {"low": [-2], "high": [-3], "interior": [2], "value": 9.0})
case(G, "pad_nd", lambda x: pad_nd(x, [1, 1], [1, 1], [0, 0], 1.0), [T([0, 2], "f32")], {"low": [1, 1], "high": [1, 1], "value": 1.0})
case(G, "pad_nd", lambda x: x, [T([], "f32")], {"low": [], "high": []})
case(G, "pad_nd", lambda x: pad_nd(x, [-3], [0], [0], 0.0), [T([3], "f32")], {"low": [-3], "high": [0]})
case(G, "pad_nd", None, [T([3], "f32")], {"low": [-3], "high": [-1]}, error="negative size")

for mode in ["constant", "reflect", "replicate", "circular"]:
    # torch 1.13's non-constant modes want (batch, channel) + padded dims.
    for pads, shape in [([1, 2], [1, 3, 4]), ([2, 0, 1, 1], [1, 1, 3, 4]), ([0, 0], [1, 3, 4])]:
        case(G, "pad", lambda x, p=pads, m=mode: F.pad(x, p, mode=m), [T(shape, "f32")], {"pad": pads, "mode": mode})
    case(G, "pad", lambda x, m=mode: F.pad(x, [1, 1, 2, 0], mode=m), [T([1, 2, 3, 4], "f64", layout="transposed")], {"pad": [1, 1, 2, 0], "mode": mode})
    if mode != "reflect":
        case(G, "pad", lambda x, m=mode: F.pad(x, [1, 2, 1, 1, 1, 0], mode=m), [T([1, 1, 2, 2, 3], "f32")], {"pad": [1, 2, 1, 1, 1, 0], "mode": mode})
for dt in ALL:
    v = True if dt == "bool" else (3 if dt in INTS else 0.5)
    case(G, "pad", lambda x, v=v: F.pad(x, [1, 1, 0, 2], value=v), [T([2, 3], dt, kind(dt))], {"pad": [1, 1, 0, 2], "value": v})
case(G, "pad", lambda x: F.pad(x, [-1, 2, 1, -2]), [T([3, 4], "f32")], {"pad": [-1, 2, 1, -2]})
case(G, "pad", lambda x: F.pad(x, [1, 1], value=2.5), [T([2, 3], "i32", "int")], {"pad": [1, 1], "value": 2.5})
case(G, "pad", None, [T([1, 1, 3], "f32")], {"pad": [3, 0], "mode": "reflect"}, error="Padding size should be less than")
case(G, "pad", None, [T([3], "f32")], {"pad": [1, 1, 1]}, error="divisible by 2")
case(G, "pad", None, [T([3], "f32")], {"pad": [-2, -2]}, error="negative output size")
case(G, "pad", None, [T([1, 1, 3], "f32")], {"pad": [4, 0], "mode": "circular"}, error="wrapping around more than once")

for dt in ALL:
    case(G, "flip", lambda x: x.flip(0, 2), [T([2, 3, 2], dt, kind(dt))], {"dims": [0, 2]})
case(G, "flip", lambda x: x.flip(-1), [T([3, 4], "f32", layout="transposed")], {"dims": [-1]})
case(G, "flip", lambda x: x.flip(0), [T([3, 4], "f32", layout="strided")], {"dims": [0]})
case(G, "flip", lambda x: x.flip(0), [T([], "f32")], {"dims": [0]})
case(G, "flip", lambda x: x.flip(1), [T([2, 0], "f32")], {"dims": [1]})
case(G, "flip", lambda x: x.flip([]), [T([2, 3], "f32")], {"dims": []})
case(G, "flip", None, [T([2, 3], "f32")], {"dims": [0, 0]}, error="multiple times")
case(G, "roll", lambda x: x.roll(1, 0), [T([4, 3], "f32")], {"shifts": [1], "dims": [0]})
case(G, "roll", lambda x: x.roll((-1, 5), (1, 0)), [T([4, 3], "i64", "int", layout="transposed")], {"shifts": [-1, 5], "dims": [1, 0]})
case(G, "roll", lambda x: x.roll(3), [T([2, 3], "f32", layout="strided")], {"shifts": [3]})
case(G, "roll", lambda x: x.roll(0, 1), [T([2, 3], "bool", "bool")], {"shifts": [0], "dims": [1]})
case(G, "roll", lambda x: x.roll(2, 0), [T([0, 3], "f32")], {"shifts": [2], "dims": [0]})
case(G, "roll", None, [T([2, 3], "f32")], {"shifts": [1, 2], "dims": [0]}, error="must align")
for k in [0, 1, -2, 4]:
    case(G, "diag", lambda x, k=k: torch.diag(x, k), [T([3], "f32")], {"diagonal": k})
    case(G, "diag", lambda x, k=k: torch.diag(x, k), [T([3, 4], "f32")], {"diagonal": k})
case(G, "diag", lambda x: torch.diag(x), [T([4], "i64", "int")], {})
case(G, "diag", lambda x: torch.diag(x, 1), [T([3], "bool", "bool")], {"diagonal": 1})
case(G, "diag", lambda x: torch.diag(x, -1), [T([0], "f32")], {"diagonal": -1})
case(G, "diag", lambda x: torch.diag(x, 1), [T([4, 3], "bf16", layout="transposed")], {"diagonal": 1})
case(G, "diag", None, [T([2, 2, 2], "f32")], {}, error="Supports 1D or 2D")
for reps in [[2, 1], [1, 3], [2, 2, 2], [0, 2]]:
    case(G, "repeat", lambda x, r=reps: x.repeat(*r), [T([2, 3], "f32")], {"repeats": reps})
case(G, "repeat", lambda x: x.repeat(2, 2), [T([3, 2], "i8", "int", layout="transposed")], {"repeats": [2, 2]})
case(G, "repeat", lambda x: x.repeat(3), [T([], "f32")], {"repeats": [3]})
case(G, "repeat", None, [T([2, 3], "f32")], {"repeats": [2]}, error="can not be smaller")
case(G, "tile", lambda x: x.tile((2,)), [T([2, 3], "f32")], {"dims": [2]})
case(G, "tile", lambda x: x.tile((2, 1, 2)), [T([2, 3], "u8", "int", layout="strided")], {"dims": [2, 1, 2]})
case(G, "tile", lambda x: x.tile((2,)), [T([], "f32")], {"dims": [2]})
for dt in ALL:
    case(G, "repeat_interleave", lambda x, _: x.repeat_interleave(2, 1), [T([2, 3], dt, kind(dt)), None], {"repeats": 2, "dim": 1})
case(G, "repeat_interleave", lambda x, _: x.repeat_interleave(3), [T([2, 2], "f32", layout="transposed"), None], {"repeats": 3})
case(G, "repeat_interleave", lambda x, _: x.repeat_interleave(2), [T([], "f32"), None], {"repeats": 2})
case(G, "repeat_interleave", None, [T([], "f32"), None], {"repeats": 2, "dim": 0}, error="has no dimensions")
case(G, "repeat_interleave", lambda x, _: x.repeat_interleave(0, 0), [T([3], "f32"), None], {"repeats": 0, "dim": 0})
case(G, "repeat_interleave", lambda x, r: x.repeat_interleave(r, 0), [T([3, 2], "i64", "int"), T([3], "i64", [2, 0, 1])], {"dim": 0, "output_size": 3})
case(G, "repeat_interleave", lambda x, r: x.repeat_interleave(r, -1), [T([2, 3], "f32", layout="strided"), T([1], "i32", [2])], {"dim": -1, "output_size": 6})
case(G, "repeat_interleave", lambda x, r: x.repeat_interleave(r), [T([2, 2], "f32"), T([4], "i64", [1, 2, 0, 1])], {"output_size": 4})
case(G, "repeat_interleave", None, [T([3], "f32"), T([3], "i64", [1, 2, 0])], {"dim": 0, "output_size": 4}, error="does not match the sum of repeats 3")
case(G, "repeat_interleave", None, [T([3], "f32"), T([3], "i64", [1, -1, 2])], {"dim": 0, "output_size": 2}, error="repeats can not be negative")
case(G, "repeat_interleave", None, [T([3], "f32"), T([2], "i64", [1, 1])], {"dim": 0, "output_size": 2}, error="same size as input along dim")

# ---------------------------------------------------------------- as_strided_scatter (functional in-place writes)
# PyTorch 1.13's as_strided_scatter backward returns uninitialised memory, so
# its gradients are checked by finite differences only (grad_test f64 gradcheck).

for dt in ALL:
    case(G, "as_strided_scatter", lambda x, s: torch.as_strided_scatter(x, s, (2, 2), (4, 1), 1),
         [T([3, 4], dt, kind(dt)), T([2, 2], dt, kind(dt))], {"shape": [2, 2], "strides": [4, 1], "offset": 1}, grad=False)
case(G, "as_strided_scatter", lambda x, s: torch.as_strided_scatter(x, s, (4, 3), (1, 4), 0),
     [T([3, 4], "f32"), T([4, 3], "f32", layout="transposed")], {"shape": [4, 3], "strides": [1, 4], "offset": 0}, grad=False)
case(G, "as_strided_scatter", lambda x, s: torch.as_strided_scatter(x, s, (3,), (5,), 0),
     [T([3, 5], "f64"), T([3], "f64")], {"shape": [3], "strides": [5], "offset": 0}, grad=False)
case(G, "as_strided_scatter", lambda x, s: torch.as_strided_scatter(x, s, (2, 3), (6, 2), 1),
     [T([2, 6], "f32"), T([2, 3], "f32")], {"shape": [2, 3], "strides": [6, 2], "offset": 1}, grad=False)
case(G, "as_strided_scatter", lambda x, s: torch.as_strided_scatter(x, s, (0, 3), (3, 1), 0),
     [T([2, 3], "f32"), T([0, 3], "f32")], {"shape": [0, 3], "strides": [3, 1], "offset": 0}, grad=False)
case(G, "as_strided_scatter", None, [T([2, 3], "f32"), T([2, 2], "f32")], {"shape": [2, 2], "strides": [3, 1], "offset": 2}, error="reaches element")
case(G, "as_strided_scatter", None, [T([2, 3], "f32"), T([2, 2], "f64")], {"shape": [2, 2], "strides": [3, 1], "offset": 0}, error="same dtype")
