"""Cases for the nn functional group: layer_norm, rms_norm, group_norm,
batch_norm, dropout, embedding, one_hot, losses, scaled_dot_product_attention, paged_attention
and interpolate. torch 1.13 lacks F.rms_norm and
F.scaled_dot_product_attention: their references are written out here."""
import math

import torch
import torch.nn.functional as F
from golden import case, T, S, FLOATS

G = "nn"


def h(fn, dt):
    """Runs fn in f32 for f16 inputs (torch 1.13's CPU lacks many f16 kernels;
    PyTorch computes f16 in f32 and rounds once, which this reproduces)."""
    if dt not in ("f16", "bf16"):
        return fn
    half = torch.float16 if dt == "f16" else torch.bfloat16

    def g(*args):
        conv = [a.float() if isinstance(a, torch.Tensor) and a.dtype == half else a for a in args]
        return fn(*conv).to(half)
    return g

# ---------------------------------------------------------------- layer_norm
for dt in FLOATS:
    case(G, "layer_norm", h(lambda x, w, b: F.layer_norm(x, [4], w, b, 1e-5), dt),
         [T([3, 4], dt), T([4], dt), T([4], dt)], {"normalized_shape": [4]})
case(G, "layer_norm", lambda x, *_: F.layer_norm(x, [3, 4]), [T([2, 3, 4], "f32", layout="transposed"), None, None],
     {"normalized_shape": [3, 4]})
case(G, "layer_norm", lambda x, w, *_: F.layer_norm(x, [5], w, None, 1e-3), [T([2, 5], "f64", layout="strided"), T([5], "f64"), None],
     {"normalized_shape": [5], "eps": 1e-3})
case(G, "layer_norm", lambda x, w, b: F.layer_norm(x, [8], w, b), [T([4, 8], "f32", "pos"), T([8], "f32"), T([8], "f32")],
     {"normalized_shape": [8]}, rtol=1e-5, atol=1e-5)
case(G, "layer_norm", lambda x, *_: F.layer_norm(x, [3]), [T([0, 3], "f32"), None, None], {"normalized_shape": [3]})
case(G, "layer_norm", None, [T([2, 3], "f32"), None, None], {"normalized_shape": [4]}, error="expected input with shape [*, 4]")
case(G, "layer_norm", None, [T([2, 3], "f32"), T([2], "f32"), None], {"normalized_shape": [3]}, error="weight to be of same shape")


# ---------------------------------------------------------------- rms_norm
def rms_norm(x, shape, w=None, eps=None):
    xf = x.float() if x.dtype in (torch.bfloat16, torch.float16) else x
    if eps is None:
        eps = torch.finfo(x.dtype).eps
    dims = tuple(range(-len(shape), 0))
    y = xf * torch.rsqrt(xf.pow(2).mean(dims, keepdim=True) + eps)
    if w is not None:
        y = y * w.to(y.dtype)
    return y.to(x.dtype)


for dt in FLOATS:
    case(G, "rms_norm", lambda x, w: rms_norm(x, [6], w, 1e-6), [T([2, 6], dt), T([6], dt)], {"normalized_shape": [6], "eps": 1e-6})
case(G, "rms_norm", lambda x, *_: rms_norm(x, [2, 3]), [T([4, 2, 3], "f32", layout="transposed"), None], {"normalized_shape": [2, 3]})
case(G, "rms_norm", lambda x, *_: rms_norm(x, [3]), [T([2, 3], "f64"), None], {"normalized_shape": [3]})
case(G, "rms_norm", None, [T([2, 3], "f32"), None], {"normalized_shape": [2]}, error="expected input with shape")

# ---------------------------------------------------------------- group_norm
for dt in FLOATS:
    case(G, "group_norm", h(lambda x, w, b: F.group_norm(x, 2, w, b), dt), [T([2, 4, 3], dt), T([4], dt), T([4], dt)], {"num_groups": 2})
case(G, "group_norm", lambda x, *_: F.group_norm(x, 3), [T([2, 6, 2, 2], "f32", layout="transposed"), None, None], {"num_groups": 3})
case(G, "group_norm", lambda x, w, *_: F.group_norm(x, 1, w, None, 1e-3), [T([3, 2], "f64"), T([2], "f64"), None],
     {"num_groups": 1, "eps": 1e-3})
case(G, "group_norm", None, [T([2, 5, 3], "f32"), None, None], {"num_groups": 2}, error="divisible by num_groups")

# ---------------------------------------------------------------- batch_norm
for dt in FLOATS:
    case(G, "batch_norm", h(lambda x, rm, rv, w, b: F.batch_norm(x, rm.clone(), rv.clone(), w, b, True), dt),
         [T([4, 3, 2], dt), T([3], dt), T([3], dt, "pos"), T([3], dt), T([3], dt)], {"training": True})
    case(G, "batch_norm", h(lambda x, rm, rv, w, b: F.batch_norm(x, rm, rv, w, b, False), dt),
         [T([4, 3], dt), T([3], dt), T([3], dt, "pos"), T([3], dt), T([3], dt)], {"training": False})
case(G, "batch_norm", lambda x, *_: F.batch_norm(x, None, None, training=True), [T([2, 3, 2, 2], "f32", layout="transposed"), None, None, None, None],
     {"training": True})
case(G, "batch_norm", lambda x, rm, rv, *_: F.batch_norm(x, rm, rv, eps=1e-3), [T([5, 2], "f64", layout="strided"), T([2], "f64"), T([2], "f64", "pos"), None, None],
     {"eps": 1e-3})
case(G, "batch_norm", None, [T([1, 3], "f32"), None, None, None, None], {"training": True}, error="more than 1 value per channel")
case(G, "batch_norm", None, [T([4, 3], "f32"), T([2], "f32"), T([2], "f32"), None, None], error="running_mean should contain 3 elements")

# ---------------------------------------------------------------- dropout
R = dict(compare="shape")
for dt in FLOATS:
    case(G, "dropout", lambda x: torch.zeros_like(x), [T([4, 5], dt)], {"p": 0.3}, **R)  # shape only; f16 bernoulli is missing in torch 1.13
case(G, "dropout", lambda x: F.dropout(x, 0.5, training=False), [T([3, 4], "f32", layout="transposed")], {"p": 0.5, "train": False})
case(G, "dropout", lambda x: F.dropout(x, 0.0), [T([3, 4], "f64", layout="strided")], {"p": 0.0})
case(G, "dropout", lambda x: F.dropout(x, 1.0), [T([3, 4], "f32")], {"p": 1.0})
case(G, "dropout", lambda x: F.dropout(x, 0.5), [T([], "f32")], **R)
case(G, "dropout", None, [T([3], "f32")], {"p": 1.5}, error="between 0 and 1")

# ---------------------------------------------------------------- embedding / one_hot
for dt in ["f32", "f64", "bf16", "i64"]:
    case(G, "embedding", lambda w, i: F.embedding(i, w), [T([6, 3], dt, "int" if dt == "i64" else "randn"), T([2, 4], "i64", "index", hi=6)])
case(G, "embedding", lambda w, i: F.embedding(i, w), [T([5, 2], "f32", layout="transposed"), T([7], "i32", "index", hi=5)])
case(G, "embedding", lambda w, i: F.embedding(i, w, padding_idx=0), [T([5, 2], "f32"), T([3], "i64", [0, 4, 0])], {"padding_idx": 0})
case(G, "embedding", lambda w, i: F.embedding(i, w), [T([5, 2], "f32"), T([], "i64", 3)])
case(G, "embedding", lambda w, i: F.embedding(i, w), [T([5, 2], "f32"), T([0], "i64", [])])
case(G, "embedding", None, [T([5, 2], "f32"), T([3], "i64", [1, 5, 0])], error="index 5 is out of bounds")
case(G, "embedding", None, [T([5, 2], "f32"), T([3], "f32", [1, 2, 0])], error="'indices' to have one of the following scalar types")
for nc in [3, 5]:
    case(G, "one_hot", lambda x, nc=nc: F.one_hot(x, nc), [T([2, 3], "i64", "index", hi=3)], {"num_classes": nc})
case(G, "one_hot", lambda x: F.one_hot(x, 4), [T([], "i64", 2)], {"num_classes": 4})
case(G, "one_hot", None, [T([2], "i32", [0, 1])], {"num_classes": 2}, error="int64")

# ---------------------------------------------------------------- pointwise losses
for name, fn, extra in [("mse_loss", F.mse_loss, {}), ("l1_loss", F.l1_loss, {}),
                        ("smooth_l1_loss", lambda x, y, reduction: F.smooth_l1_loss(x, y, reduction=reduction, beta=0.5), {"beta": 0.5}),
                        ("huber_loss", lambda x, y, reduction: F.huber_loss(x, y, reduction=reduction, delta=0.7), {"delta": 0.7})]:
    for red in ["none", "mean", "sum"]:
        for dt in ["f32", "f64", "bf16"]:
            case(G, name, h(lambda x, y, fn=fn, red=red: fn(x, y, reduction=red), dt), [T([3, 4], dt), T([3, 4], dt)], dict(extra, reduction=red))
    case(G, name, lambda x, y, fn=fn: fn(x, y, reduction="mean"), [T([2, 3], "f32", layout="transposed"), T([2, 3], "f32", layout="strided")], extra)
    case(G, name, None, [T([2, 3], "f32"), T([2, 3], "f32")], dict(extra, reduction="avg"), error="not a valid value for reduction")
case(G, "smooth_l1_loss", lambda x, y: F.smooth_l1_loss(x, y, beta=0.0), [T([5], "f32"), T([5], "f32")], {"beta": 0.0})
case(G, "mse_loss", lambda x, y: F.mse_loss(x, y.expand(2, 3)), [T([2, 3], "f32"), T([3], "f32")])
case(G, "mse_loss", lambda x, y: F.mse_loss(x, y, reduction="sum"), [T([0], "f32"), T([0], "f32")], {"reduction": "sum"}, id="mse_loss/empty-sum")
case(G, "mse_loss", lambda x, y: F.mse_loss(x, y), [T([0], "f32"), T([0], "f32")], id="mse_loss/empty-mean")

# ---------------------------------------------------------------- BCE
for red in ["none", "mean", "sum"]:
    for dt in ["f32", "f64"]:
        case(G, "binary_cross_entropy", lambda x, y, *_, red=red: F.binary_cross_entropy(x, y, reduction=red),
             [T([3, 4], dt, "rand"), T([3, 4], dt, "rand"), None], {"reduction": red})
        case(G, "binary_cross_entropy_with_logits", lambda x, y, *_, red=red: F.binary_cross_entropy_with_logits(x, y, reduction=red),
             [T([3, 4], dt), T([3, 4], dt, "rand"), None, None], {"reduction": red})
case(G, "binary_cross_entropy", lambda x, y, w: F.binary_cross_entropy(x, y, w), [T([2, 3], "f32", "rand"), T([2, 3], "f32", "rand"), T([3], "f32", "pos")])
case(G, "binary_cross_entropy", lambda x, y, *_: F.binary_cross_entropy(x, y, reduction="none"),
     [T([4], "f32", [0.0, 1.0, 0.5, 1.0]), T([4], "f32", [1.0, 0.0, 0.5, 1.0]), None], {"reduction": "none"})
case(G, "binary_cross_entropy_with_logits", lambda x, y, w, pw: F.binary_cross_entropy_with_logits(x, y, w, pos_weight=pw),
     [T([2, 3], "f32"), T([2, 3], "f32", "rand"), T([2, 1], "f32", "pos"), T([3], "f32", "pos")])
case(G, "binary_cross_entropy_with_logits", lambda x, y, _, pw: F.binary_cross_entropy_with_logits(x, y, pos_weight=pw, reduction="none"),
     [T([4], "f64", [-50.0, 50.0, 0.0, 3.0]), T([4], "f64", [1.0, 0.0, 0.5, 1.0]), None, T([4], "f64", "pos")], {"reduction": "none"})
case(G, "binary_cross_entropy", None, [T([2, 3], "f32", "rand"), T([3, 2], "f32", "rand"), None], error="different to the input size")

# ---------------------------------------------------------------- KL
for red in ["none", "mean", "sum", "batchmean"]:
    case(G, "kl_div", lambda x, y, red=red: F.kl_div(x, y, reduction=red), [T([3, 4], "f32"), T([3, 4], "f32", "rand")], {"reduction": red})
    case(G, "kl_div", lambda x, y, red=red: F.kl_div(x, y, reduction=red, log_target=True), [T([3, 4], "f64"), T([3, 4], "f64")],
         {"reduction": red, "log_target": True})
case(G, "kl_div", lambda x, y: F.kl_div(x, y, reduction="sum"), [T([3], "f32"), T([3], "f32", [0.0, 0.5, 0.5])], {"reduction": "sum"})

# ---------------------------------------------------------------- nll / cross_entropy
for red in ["none", "mean", "sum"]:
    for dt in ["f32", "f64"]:
        case(G, "nll_loss", lambda x, t, *_, red=red: F.nll_loss(x, t, reduction=red), [T([4, 5], dt), T([4], "i64", "index", hi=5), None], {"reduction": red})
        case(G, "cross_entropy", lambda x, t, *_, red=red: F.cross_entropy(x, t, reduction=red), [T([4, 5], dt), T([4], "i64", "index", hi=5), None],
             {"reduction": red})
    case(G, "nll_loss", lambda x, t, w, red=red: F.nll_loss(x, t, w, ignore_index=1, reduction=red),
         [T([6, 3], "f32"), T([6], "i64", [0, 1, 2, 1, 2, 0]), T([3], "f32", "pos")], {"reduction": red, "ignore_index": 1})
    case(G, "cross_entropy", lambda x, t, w, red=red: F.cross_entropy(x, t, w, ignore_index=-100, reduction=red, label_smoothing=0.2),
         [T([5, 4], "f32"), T([5], "i64", [0, -100, 3, 2, 1]), T([4], "f32", "pos")], {"reduction": red, "label_smoothing": 0.2})
    case(G, "cross_entropy", lambda x, t, *_, red=red: F.cross_entropy(x, t, reduction=red, label_smoothing=0.1),
         [T([5, 4], "f64"), T([5], "i64", [0, 2, 3, -100, 1]), None], {"reduction": red, "label_smoothing": 0.1})
    case(G, "cross_entropy", lambda x, t, *_, red=red: F.cross_entropy(x, t, reduction=red),
         [T([3, 4], "f32"), T([3, 4], "f32", "rand"), None], {"reduction": red})
    case(G, "cross_entropy", lambda x, t, w, red=red: F.cross_entropy(x, t, w, reduction=red, label_smoothing=0.3),
         [T([3, 4], "f64"), T([3, 4], "f64", "rand"), T([4], "f64", "pos")], {"reduction": red, "label_smoothing": 0.3})
case(G, "cross_entropy", lambda x, t, *_: F.cross_entropy(x, t), [T([2, 3, 2], "f32"), T([2, 3, 2], "f32", "rand"), None])
case(G, "cross_entropy", lambda x, t, *_: F.cross_entropy(x, t), [T([2, 3, 4], "f32", layout="transposed"), T([2, 4], "i64", "index", hi=3), None])
case(G, "cross_entropy", lambda x, t, *_: F.cross_entropy(x, t), [T([5], "f32"), T([], "i64", 2), None])
case(G, "cross_entropy", lambda x, t, *_: F.cross_entropy(x, t), [T([3, 5], "bf16"), T([3], "i64", "index", hi=5), None])
case(G, "cross_entropy", lambda x, t, *_: F.cross_entropy(x, t, reduction="none"), [T([2, 3, 2, 2], "f64"), T([2, 2, 2], "i64", "index", hi=3), None],
     {"reduction": "none"})
case(G, "nll_loss", lambda x, t, *_: F.nll_loss(x, t), [T([2, 3, 4], "f32", layout="strided"), T([2, 4], "i64", "index", hi=3), None])
case(G, "nll_loss", lambda x, t, *_: F.nll_loss(x, t), [T([3, 4], "f32"), T([3], "i64", [-100, -100, -100]), None], id="nll_loss/all-ignored")
case(G, "cross_entropy", None, [T([3, 5], "f32"), T([4], "i64", "index", hi=5), None], error="Expected input batch_size (3) to match target batch_size (4)")
case(G, "nll_loss", None, [T([3, 5], "f32"), T([3], "i64", "index", hi=5), T([4], "f32")], error="weight tensor should be defined")


# ---------------------------------------------------------------- attention
def sdpa(q, k, v, mask=None, is_causal=False, scale=None, gqa=False):
    if gqa and q.dim() >= 3 and k.shape[-3] != q.shape[-3]:
        r = q.shape[-3] // k.shape[-3]
        k = k.repeat_interleave(r, dim=-3)
        v = v.repeat_interleave(r, dim=-3)
    s = scale if scale is not None else 1 / math.sqrt(q.shape[-1])
    a = (q @ k.transpose(-2, -1)) * s
    L, S_ = q.shape[-2], k.shape[-2]
    if is_causal:
        a = a.masked_fill(~torch.ones(L, S_, dtype=torch.bool).tril(), float("-inf"))
    if mask is not None:
        a = a.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else a + mask
    return a.softmax(-1) @ v


for dt in ["f32", "f64", "bf16", "f16"]:
    case(G, "scaled_dot_product_attention", h(lambda q, k, v, *_: sdpa(q, k, v), dt), [T([2, 3, 4], dt), T([2, 5, 4], dt), T([2, 5, 6], dt), None],
         rtol=1e-2 if dt in ("bf16", "f16") else None, atol=1e-2 if dt in ("bf16", "f16") else None)
case(G, "scaled_dot_product_attention", lambda q, k, v, *_: sdpa(q, k, v, is_causal=True), [T([1, 2, 4, 3], "f32"), T([1, 2, 4, 3], "f32"), T([1, 2, 4, 3], "f32"), None],
     {"is_causal": True})
case(G, "scaled_dot_product_attention", lambda q, k, v, m: sdpa(q, k, v, m), [T([2, 3, 4], "f32"), T([2, 5, 4], "f32", layout="transposed"), T([2, 5, 2], "f32"),
                                                                             T([3, 5], "bool", [[1, 0, 1, 1, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 1]])])
case(G, "scaled_dot_product_attention", lambda q, k, v, m: sdpa(q, k, v, m, scale=0.3), [T([2, 3, 4], "f64"), T([2, 5, 4], "f64"), T([2, 5, 2], "f64"), T([2, 1, 5], "f64")],
     {"scale": 0.3})
case(G, "scaled_dot_product_attention", lambda q, k, v, *_: sdpa(q, k, v, gqa=True), [T([1, 4, 3, 2], "f32"), T([1, 2, 5, 2], "f32"), T([1, 2, 5, 3], "f32"), None],
     {"enable_gqa": True})
case(G, "scaled_dot_product_attention", lambda q, k, v, *_: sdpa(q, k, v, is_causal=True, gqa=True),
     [T([2, 6, 4, 2], "f32", layout="strided"), T([2, 3, 4, 2], "f32"), T([2, 3, 4, 2], "f32"), None], {"enable_gqa": True, "is_causal": True})
case(G, "scaled_dot_product_attention", lambda q, k, v, *_: torch.zeros(2, 3, 6), [T([2, 3, 4], "f32"), T([2, 5, 4], "f32"), T([2, 5, 6], "f32"), None],
     {"dropout_p": 0.2}, compare="shape")
case(G, "scaled_dot_product_attention", None, [T([2, 3, 4], "f32"), T([2, 5, 3], "f32"), T([2, 5, 6], "f32"), None], error="do not fit")
case(G, "scaled_dot_product_attention", None, [T([1, 4, 3, 2], "f32"), T([1, 3, 5, 2], "f32"), T([1, 3, 5, 2], "f32"), None],
     {"enable_gqa": True}, error="must divide")

# ---------------------------------------------------------------- paged_attention
def paged(q, kc, vc, table, mask=None, scale=None):
    """vLLM's paged attention written out: the blocks each sequence's table
    names, gathered into [B, Hkv, M*P, E], then attention with GQA."""
    b, m = table.shape
    idx = table.reshape(-1).long()

    def gather(c):
        x = c.index_select(0, idx).reshape(b, m * c.shape[1], c.shape[2], c.shape[3])
        return x.transpose(1, 2)
    return sdpa(q, gather(kc), gather(vc), mask, scale=scale, gqa=True)


PA_TABLE = [[0, 3], [4, 1]]
PA_MASK = [[[[1, 1, 1, 0]]], [[[1, 1, 0, 0]]]]
case(G, "paged_attention", lambda q, k, v, t, m: paged(q, k, v, t, m),
     [T([2, 4, 3, 4], "f32"), T([5, 2, 2, 4], "f32"), T([5, 2, 2, 3], "f32"), T([2, 2], "i64", PA_TABLE), T([2, 1, 1, 4], "bool", PA_MASK)])
case(G, "paged_attention", lambda q, k, v, t, *_: paged(q, k, v, t, scale=0.3),
     [T([2, 2, 1, 3], "f64"), T([4, 3, 2, 3], "f64"), T([4, 3, 2, 2], "f64"), T([2, 3], "i32", [[2, 0, 2], [1, 3, 0]]), None], {"scale": 0.3})
case(G, "paged_attention", lambda q, k, v, t, m: paged(q, k, v, t, m),
     [T([1, 2, 5, 2], "f32", layout="strided"), T([3, 4, 1, 2], "f32"), T([3, 4, 1, 2], "f32", layout="transposed"), T([1, 2], "i64", [[2, 0]]),
      T([5, 8], "f32")])
case(G, "paged_attention", None, [T([2, 4, 3, 4], "f32"), T([5, 2, 3, 4], "f32"), T([5, 2, 3, 3], "f32"), T([2, 2], "i64", PA_TABLE), None],
     error="must divide")
case(G, "paged_attention", None, [T([2, 4, 3, 4], "f32"), T([5, 2, 2, 4], "f32"), T([5, 2, 2, 3], "f32"), T([2, 2], "f32"), None],
     error="block_table must be an integer")
case(G, "paged_attention", None, [T([2, 4, 3, 4], "f32"), T([5, 2, 2, 3], "f32"), T([5, 2, 2, 3], "f32"), T([2, 2], "i64", PA_TABLE), None],
     error="do not fit")

# ---------------------------------------------------------------- interpolate
for dt in ["f32", "f64"]:
    for size in [[4, 6], [3, 3], [2, 5], [7, 1]]:
        case(G, "interpolate", lambda x, s=size: F.interpolate(x, size=s, mode="nearest"), [T([1, 2, 3, 4], dt)], {"size": size})
        for ac in [False, True]:
            case(G, "interpolate", lambda x, s=size, ac=ac: F.interpolate(x, size=s, mode="bilinear", align_corners=ac), [T([2, 1, 3, 4], dt)],
                 {"size": size, "mode": "bilinear", "align_corners": ac})
    for sf in [[2.0, 2.0], [1.5, 0.5], [0.7, 1.3]]:
        case(G, "interpolate", lambda x, sf=sf: F.interpolate(x, scale_factor=sf, mode="nearest"), [T([1, 1, 4, 5], dt)], {"scale_factor": sf})
        case(G, "interpolate", lambda x, sf=sf: F.interpolate(x, scale_factor=sf, mode="bilinear"), [T([1, 2, 4, 5], dt, layout="transposed")],
             {"scale_factor": sf, "mode": "bilinear"})
case(G, "interpolate", lambda x: F.interpolate(x, size=[4, 4], mode="bilinear"), [T([1, 1, 2, 2], "bf16")], {"size": [4, 4], "mode": "bilinear"})
case(G, "interpolate", None, [T([1, 1, 2, 2], "f32")], {"size": [4, 4], "scale_factor": [2.0, 2.0]}, error="only one of size or scale_factor")
case(G, "interpolate", None, [T([1, 2, 2], "f32")], {"size": [4, 4]}, error="only 4-d input")
case(G, "interpolate", None, [T([1, 1, 2, 2], "f32")], {"size": [4, 4], "align_corners": True}, error="align_corners option can only be set")
