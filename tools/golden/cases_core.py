"""Cases for the core primitives: convert, copy, copy_ and the view ops."""
import torch
from golden import case, T, S, ALL, FLOATS, INTS

G = "core"

for src in ALL:
    for dst in ALL:
        kind = "edge" if src in FLOATS and dst in FLOATS else ("int" if src != "bool" else "bool")
        case(G, "convert", lambda x, d=dst: x.to(__import__("golden").DT[d]), [T([2, 5], src, kind)], {"dtype": dst})
for dt in ALL:
    case(G, "copy", lambda x: x.clone(), [T([3, 4], dt, "int" if dt not in FLOATS else "randn", layout="transposed")])
    case(G, "copy", lambda x: x.clone(), [T([3, 4], dt, "int" if dt not in FLOATS else "randn", layout="strided")])
case(G, "copy", lambda x: x.clone(), [T([], "f32")])
case(G, "copy", lambda x: x.clone(), [T([0, 3], "f32")])


def copy_(d, s):
    d = d.clone()
    d.copy_(s)
    return d


case(G, "copy_", copy_, [T([2, 3], "f32"), T([3], "f64")])
case(G, "copy_", copy_, [T([2, 3], "i32", "int"), T([2, 3], "f32", layout="transposed")])

case(G, "reshape", lambda x: x.reshape(3, -1), [T([2, 6], "f32")], {"shape": [3, -1]})
case(G, "reshape", lambda x: x.reshape(6, 2), [T([2, 6], "f32", layout="transposed")], {"shape": [6, 2]})
case(G, "reshape", lambda x: x.reshape([]), [T([1, 1], "i64", "int")], {"shape": []})
case(G, "reshape", lambda x: x.reshape(0, 5), [T([5, 0], "f32")], {"shape": [0, 5]})
case(G, "reshape", None, [T([2, 6], "f32")], {"shape": [5, -1]}, error="invalid for input of size 12")
case(G, "permute", lambda x: x.permute(2, 0, 1), [T([2, 3, 4], "f32")], {"dims": [2, 0, 1]})
case(G, "permute", lambda x: x.permute(1, 0), [T([3, 4], "bf16", layout="strided")], {"dims": [-1, 0]})
case(G, "expand", lambda x: x.expand(2, 3, 4), [T([3, 1], "f32")], {"shape": [2, 3, 4]})
case(G, "expand", lambda x: x.expand(4, -1), [T([1, 3], "i32", "int")], {"shape": [4, -1]})
case(G, "expand", None, [T([3, 2], "f32")], {"shape": [3, 4]}, error="not compatible")
for (s, e, st) in [(0, 4, 1), (1, 5, 2), (-3, 100, 1), (2, 1, 1), (-100, -2, 3)]:
    case(G, "slice", lambda x, s=s, e=e, st=st: x[:, s:e:st], [T([3, 6], "f32")], {"dim": 1, "start": s, "end": e, "step": st})
case(G, "slice", lambda x: x[1:3], [T([4, 3], "i64", "int", layout="transposed")], {"dim": 0, "start": 1, "end": 3})
case(G, "select", lambda x: x[:, -1], [T([3, 4], "f32")], {"dim": 1, "index": -1})
case(G, "select", lambda x: x[2], [T([3, 4], "u8", "int", layout="strided")], {"dim": 0, "index": 2})
case(G, "select", None, [T([3, 4], "f32")], {"dim": 0, "index": 3}, error="out of range")
for off in [0, 1, -1, 5]:
    case(G, "diagonal", lambda x, o=off: torch.diagonal(x, o), [T([3, 4], "f32")], {"offset": off})
case(G, "diagonal", lambda x: torch.diagonal(x, 0, 0, 2), [T([2, 3, 2], "f64")], {"dim1": 0, "dim2": 2})
case(G, "as_strided", lambda x: x.contiguous().as_strided((2, 2), (1, 2), 1), [T([2, 3], "f32")],
     {"shape": [2, 2], "strides": [1, 2], "offset": 1})
