#!/usr/bin/python3
"""Writes testdata/nnmod/nnmod.json.gz: torch.nn module golden cases for nn.

Usage: /usr/bin/python3 tools/golden/nn_modules_gen.py (Debian's python3-torch
1.13; tools/golden/setup.sh installs it).

Every case names a module kind and its constructor arguments (torch's keyword
names, which the Go test maps onto its constructors), the module's
state_dict in order (parameters and float buffers replaced by random values so
that loading them matters), a sequence of forward calls (inputs and outputs),
the state dict after the calls (training-mode BatchNorm updates its running
statistics), and for single-call cases the gradients of sum(output * cot)
with respect to every parameter and the float inputs.

Modules newer than torch 1.13 (RMSNorm, LayerNorm(bias=False)) are written
out here with torch 2.x's definitions.
"""
import gzip
import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
here = os.path.dirname(os.path.abspath(__file__))
root = os.path.abspath(os.path.join(here, "..", ".."))
CASES = []


def enc(t):
    t = t.detach()
    d = {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}
    if t.dtype == torch.bool:
        d["values"] = [bool(v) for v in t.flatten().tolist()]
    elif t.dtype.is_floating_point:
        vals = t.double().flatten().tolist()
        assert all(math.isfinite(v) for v in vals), "non-finite golden value"
        d["values"] = vals
    else:
        d["values"] = [int(v) for v in t.flatten().tolist()]
    return d


def randomize(m):
    """Replaces parameters and float buffers with random values."""
    with torch.no_grad():
        for name, p in m.named_parameters():
            p.copy_(torch.randn_like(p) * 0.5)
        for name, b in m.named_buffers():
            if name.endswith("running_var"):
                b.copy_(torch.rand_like(b) + 0.5)
            elif b.dtype.is_floating_point:
                b.copy_(torch.randn_like(b) * 0.5)


class RMSNorm(nn.Module):
    """torch 2.x's nn.RMSNorm (not in torch 1.13)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True):
        super().__init__()
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        if elementwise_affine:
            self.weight = nn.Parameter(torch.ones(self.normalized_shape))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        eps = self.eps if self.eps is not None else torch.finfo(x.dtype).eps
        dims = tuple(range(-len(self.normalized_shape), 0))
        y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
        return y * self.weight if self.weight is not None else y


class Tree(nn.Module):
    """A ModuleList and a ModuleDict: keys layers.N.* and heads.KEY.*."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 5), nn.Linear(5, 3, bias=False)])
        self.heads = nn.ModuleDict({"mean": nn.Linear(3, 2), "logvar": nn.Linear(3, 2)})

    def forward(self, x):
        for l in self.layers:
            x = torch.tanh(l(x))
        return self.heads["mean"](x) * torch.exp(self.heads["logvar"](x))


def build(kind, args):
    if kind == "RMSNorm":
        return RMSNorm(**args)
    if kind == "LayerNorm" and args.get("bias") is False:
        a = dict(args)
        del a["bias"]
        m = nn.LayerNorm(**a)
        m.bias = None  # torch >= 2.1's bias=False
        return m
    if kind == "Sequential":
        return nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Dropout(0.5), nn.Linear(6, 3), nn.Sigmoid())
    if kind == "Tree":
        return Tree()
    if kind == "Bilinear":
        return nn.Bilinear(**args)
    return getattr(nn, kind)(**args)


def case(name, kind, args, inputs, train=False, call=None, grad=True, randomize_state=True, rtol=None, atol=None, dtype=torch.float32):
    """inputs: a list of calls, each a list of input tensors (or a dict of
    keyword arguments for MultiheadAttention / TransformerEncoderLayer)."""
    torch.manual_seed(len(CASES) + 1)
    m = build(kind, args).to(dtype)
    if randomize_state:
        randomize(m)
    m.train(train)
    state = [{"key": k, **enc(v)} for k, v in m.state_dict().items()]
    calls = []
    for ins in inputs:
        kwargs = {}
        if isinstance(ins, dict):
            kwargs = {k: v for k, v in ins.items() if k != "args"}
            ins = ins["args"]
        ins = [x.to(dtype) if x.dtype.is_floating_point else x for x in ins]
        kwargs = {k: v.to(dtype) if torch.is_tensor(v) and v.dtype.is_floating_point else v for k, v in kwargs.items()}
        ins = [x.clone().requires_grad_(x.dtype.is_floating_point and grad and len(inputs) == 1) for x in ins]
        record = dict(kwargs)
        if kwargs.pop("is_causal", False):
            # Recorded as is_causal (the Go API's flag), run as the mask torch
            # 1.13 needs: -inf above the diagonal.
            ln = ins[0].shape[1 if getattr(m, "batch_first", False) or (kind == "TransformerEncoderLayer" and args.get("batch_first")) else 0]
            kwargs["src_mask" if kind == "TransformerEncoderLayer" else "attn_mask"] = torch.triu(torch.full((ln, ln), float("-inf")), 1)
        out = call(m, ins, kwargs) if call else m(*ins, **kwargs)
        outs = list(out) if isinstance(out, tuple) else [out]
        outs = [o for o in outs if o is not None]
        c = {"inputs": [enc(x) for x in ins], "kwargs": {k: enc(v) if torch.is_tensor(v) else v for k, v in record.items()},
             "outputs": [enc(o) for o in outs]}
        if grad and len(inputs) == 1 and outs[0].dtype.is_floating_point:
            cot = torch.randn_like(outs[0])
            params = [(k, p) for k, p in m.named_parameters()]
            leaves = [p for _, p in params] + [x for x in ins if x.requires_grad]
            gs = torch.autograd.grad((outs[0] * cot).sum(), leaves, allow_unused=True)
            c["cotangent"] = enc(cot)
            c["param_grads"] = [{"key": k, **enc(g if g is not None else torch.zeros_like(p))} for (k, p), g in zip(params, gs)]
            c["input_grads"] = [enc(g) for g in gs[len(params):]]
        calls.append(c)
    after = [{"key": k, **enc(v)} for k, v in m.state_dict().items()]
    d = {"name": name, "kind": kind, "args": args, "dtype": str(dtype).replace("torch.", ""), "train": train, "state": state, "calls": calls, "after": after}
    if rtol is not None:
        d["rtol"], d["atol"] = rtol, atol
    CASES.append(d)


def r(*shape):
    return torch.randn(*shape)


def main():
    torch.manual_seed(0)
    # Linear layers.
    case("linear", "Linear", {"in_features": 4, "out_features": 3}, [[r(2, 3, 4)]])
    case("linear_nobias", "Linear", {"in_features": 5, "out_features": 2, "bias": False}, [[r(3, 5)]])
    case("bilinear", "Bilinear", {"in1_features": 3, "in2_features": 4, "out_features": 2}, [[r(5, 3), r(5, 4)]])
    case("bilinear_nobias_3d", "Bilinear", {"in1_features": 2, "in2_features": 3, "out_features": 4, "bias": False}, [[r(2, 3, 2), r(2, 3, 3)]])
    case("embedding", "Embedding", {"num_embeddings": 10, "embedding_dim": 4}, [[torch.tensor([[1, 2, 9], [0, 2, 5]])]])
    case("embedding_padding", "Embedding", {"num_embeddings": 6, "embedding_dim": 3, "padding_idx": 2}, [[torch.tensor([2, 0, 2, 5])]])
    # Normalisation.
    case("layer_norm", "LayerNorm", {"normalized_shape": [4]}, [[r(2, 3, 4) * 3 + 1]])
    case("layer_norm_2d_eps", "LayerNorm", {"normalized_shape": [3, 4], "eps": 1e-3}, [[r(2, 3, 4)]])
    case("layer_norm_noaffine", "LayerNorm", {"normalized_shape": [5], "elementwise_affine": False}, [[r(3, 5)]])
    case("layer_norm_nobias", "LayerNorm", {"normalized_shape": [5], "bias": False}, [[r(3, 5)]])
    case("rms_norm", "RMSNorm", {"normalized_shape": [4]}, [[r(2, 3, 4)]])
    case("rms_norm_eps_2d", "RMSNorm", {"normalized_shape": [3, 4], "eps": 1e-2}, [[r(2, 3, 4) * 0.1]])
    case("rms_norm_noaffine", "RMSNorm", {"normalized_shape": [6], "elementwise_affine": False}, [[r(2, 6)]])
    case("group_norm", "GroupNorm", {"num_groups": 2, "num_channels": 4}, [[r(2, 4, 3, 3)]])
    case("group_norm_noaffine", "GroupNorm", {"num_groups": 3, "num_channels": 6, "affine": False, "eps": 1e-3}, [[r(2, 6, 5)]])
    case("batch_norm1d_train", "BatchNorm1d", {"num_features": 3}, [[r(4, 3) * 2 + 1]], train=True)
    case("batch_norm1d_train_3d_two_steps", "BatchNorm1d", {"num_features": 3, "momentum": 0.3}, [[r(4, 3, 5)], [r(2, 3, 5) + 2]], train=True)
    case("batch_norm1d_eval", "BatchNorm1d", {"num_features": 3}, [[r(4, 3, 2)]])
    case("batch_norm2d_train", "BatchNorm2d", {"num_features": 3}, [[r(2, 3, 4, 4) * 3 - 1]], train=True)
    case("batch_norm2d_eval", "BatchNorm2d", {"num_features": 3, "eps": 1e-3}, [[r(2, 3, 2, 3)]])
    case("batch_norm2d_cumulative", "BatchNorm2d", {"num_features": 2, "momentum": None},
         [[r(2, 2, 3, 3)], [r(3, 2, 2, 2) * 2], [r(2, 2, 1, 3) - 1]], train=True)
    case("batch_norm2d_zero_momentum", "BatchNorm2d", {"num_features": 2, "momentum": 0.0}, [[r(2, 2, 2, 2)]], train=True)
    case("batch_norm2d_noaffine", "BatchNorm2d", {"num_features": 2, "affine": False}, [[r(3, 2, 2, 2)]], train=True)
    case("batch_norm2d_untracked_eval", "BatchNorm2d", {"num_features": 2, "track_running_stats": False}, [[r(3, 2, 2, 2)]])
    case("dropout_eval", "Dropout", {"p": 0.5}, [[r(3, 4)]])
    # Convolutions.
    case("conv1d", "Conv1d", {"in_channels": 3, "out_channels": 4, "kernel_size": 3, "stride": 2, "padding": 1}, [[r(2, 3, 7)]])
    case("conv1d_same_dilated", "Conv1d", {"in_channels": 2, "out_channels": 2, "kernel_size": 4, "padding": "same", "dilation": 2, "bias": False}, [[r(1, 2, 9)]])
    case("conv2d", "Conv2d", {"in_channels": 3, "out_channels": 4, "kernel_size": 3}, [[r(2, 3, 5, 5)]])
    case("conv2d_groups", "Conv2d", {"in_channels": 4, "out_channels": 6, "kernel_size": [3, 2], "stride": [2, 1], "padding": [1, 0],
                                     "dilation": [1, 2], "groups": 2}, [[r(2, 4, 6, 7)]])
    case("conv2d_unbatched_valid", "Conv2d", {"in_channels": 2, "out_channels": 3, "kernel_size": 2, "padding": "valid"}, [[r(2, 4, 4)]])
    for mode in ["reflect", "replicate", "circular"]:
        case("conv2d_" + mode, "Conv2d", {"in_channels": 2, "out_channels": 3, "kernel_size": 3, "padding": [1, 2], "padding_mode": mode}, [[r(1, 2, 4, 5)]])
    case("conv2d_same_circular", "Conv2d", {"in_channels": 1, "out_channels": 2, "kernel_size": [2, 3], "padding": "same", "padding_mode": "circular"}, [[r(1, 1, 4, 5)]])
    case("conv_transpose1d", "ConvTranspose1d", {"in_channels": 2, "out_channels": 3, "kernel_size": 3, "stride": 2}, [[r(2, 2, 4)]])
    case("conv_transpose2d", "ConvTranspose2d", {"in_channels": 4, "out_channels": 6, "kernel_size": 3, "stride": 2, "padding": 1,
                                                 "output_padding": 1, "groups": 2}, [[r(2, 4, 3, 3)]])
    case("conv_transpose2d_dilated", "ConvTranspose2d", {"in_channels": 2, "out_channels": 2, "kernel_size": [2, 3], "dilation": 2, "bias": False}, [[r(1, 2, 3, 2)]])
    case("conv_transpose2d_output_size", "ConvTranspose2d", {"in_channels": 2, "out_channels": 2, "kernel_size": 3, "stride": [3, 2], "padding": 1},
         [{"args": [r(1, 2, 3, 3)], "output_size": [8, 6]}])
    # Pooling and reshaping.
    case("max_pool2d", "MaxPool2d", {"kernel_size": 3, "stride": 2, "padding": 1}, [[r(2, 3, 7, 6)]])
    case("max_pool2d_dilated_ceil", "MaxPool2d", {"kernel_size": [2, 3], "dilation": 2, "ceil_mode": True}, [[r(1, 2, 7, 9)]])
    case("max_pool2d_indices", "MaxPool2d", {"kernel_size": 2, "stride": 1, "return_indices": True}, [[r(1, 2, 3, 4)]])
    case("avg_pool2d", "AvgPool2d", {"kernel_size": 3, "stride": 2, "padding": 1}, [[r(2, 2, 6, 5)]])
    case("avg_pool2d_exclude_ceil", "AvgPool2d", {"kernel_size": 2, "stride": [2, 3], "padding": 1, "ceil_mode": True, "count_include_pad": False}, [[r(1, 2, 5, 7)]])
    case("avg_pool2d_divisor", "AvgPool2d", {"kernel_size": [2, 2], "divisor_override": 3}, [[r(3, 4, 4)]])
    case("adaptive_avg_pool2d", "AdaptiveAvgPool2d", {"output_size": [2, 3]}, [[r(2, 3, 5, 7)]])
    case("adaptive_avg_pool2d_none", "AdaptiveAvgPool2d", {"output_size": [None, 2]}, [[r(1, 2, 3, 5)]])
    case("flatten", "Flatten", {}, [[r(2, 3, 2, 2)]])
    case("flatten_range", "Flatten", {"start_dim": 0, "end_dim": 1}, [[r(2, 3, 2)]])
    case("unflatten", "Unflatten", {"dim": 1, "unflattened_size": [2, 3]}, [[r(2, 6, 2)]])
    case("identity", "Identity", {}, [[r(2, 3)]])
    # Activations.
    x = torch.cat([torch.linspace(-8, 8, 33), torch.tensor([-30.0, -3.0, -0.5, 0.0, 0.5, 3.0, 25.0])]).reshape(5, 8)
    for kind, args in [("ReLU", {}), ("ReLU6", {}), ("GELU", {}), ("GELU", {"approximate": "tanh"}), ("SiLU", {}), ("Sigmoid", {}),
                       ("Tanh", {}), ("LeakyReLU", {}), ("LeakyReLU", {"negative_slope": 0.2}), ("ELU", {}), ("ELU", {"alpha": 0.5}),
                       ("CELU", {"alpha": 2.0}), ("SELU", {}), ("Mish", {}), ("Softplus", {}), ("Softplus", {"beta": 2.0, "threshold": 5.0}),
                       ("Hardswish", {}), ("Hardsigmoid", {}), ("Hardtanh", {}), ("Hardtanh", {"min_val": -2.0, "max_val": 3.0}),
                       ("Softsign", {}), ("Tanhshrink", {}), ("LogSigmoid", {}), ("Softmax", {"dim": 1}), ("Softmax", {"dim": 0}),
                       ("LogSoftmax", {"dim": -1}), ("Softmin", {"dim": 1}), ("GLU", {}), ("GLU", {"dim": 0})]:
        inp = x if not (kind == "GLU" and args.get("dim") == 0) else x[:4]
        name = kind.lower() + "".join("_%s_%s" % (k, v) for k, v in args.items())
        case(name, kind, args, [[inp.clone()]])
    case("prelu", "PReLU", {}, [[r(2, 3, 4)]])
    case("prelu_channels", "PReLU", {"num_parameters": 3, "init": 0.1}, [[r(2, 3, 4)]])
    # Containers.
    case("sequential", "Sequential", {}, [[r(3, 4)]])
    case("module_list_dict", "Tree", {}, [[r(3, 4)]])
    # Attention.
    E, H = 8, 2
    L, S, N = 3, 4, 2

    def mha_call(m, ins, kw):
        return m(*ins, **kw)

    q, kv = r(L, N, E), r(S, N, E)
    case("mha_self", "MultiheadAttention", {"embed_dim": E, "num_heads": H}, [{"args": [q, q, q], "need_weights": False}], call=mha_call)
    case("mha_cross_weights", "MultiheadAttention", {"embed_dim": E, "num_heads": H}, [{"args": [q, kv, kv * 0.5]}], call=mha_call)
    kpm = torch.tensor([[False, False, True, False], [False, True, False, False]])
    am = torch.tensor([[False, True, False, False], [False, False, False, True], [True, False, False, False]])
    case("mha_masks_per_head", "MultiheadAttention", {"embed_dim": E, "num_heads": H, "batch_first": True},
         [{"args": [q.transpose(0, 1), kv.transpose(0, 1), kv.transpose(0, 1)], "key_padding_mask": kpm, "attn_mask": am,
           "average_attn_weights": False}], call=mha_call)
    case("mha_float_mask_noweights", "MultiheadAttention", {"embed_dim": E, "num_heads": H},
         [{"args": [q, kv, kv], "attn_mask": r(N * H, L, S), "key_padding_mask": kpm, "need_weights": False}], call=mha_call)
    case("mha_causal", "MultiheadAttention", {"embed_dim": E, "num_heads": H, "batch_first": True},
         [{"args": [q.transpose(0, 1)] * 3, "is_causal": True, "need_weights": False}], call=mha_call)
    case("mha_causal_padding_weights", "MultiheadAttention", {"embed_dim": E, "num_heads": H},
         [{"args": [r(S, N, E)] * 3, "is_causal": True, "key_padding_mask": torch.tensor([[False, False, False, True], [False, True, False, False]])}],
         call=mha_call)
    case("mha_kdim_vdim_nobias", "MultiheadAttention", {"embed_dim": E, "num_heads": 4, "kdim": 5, "vdim": 3, "bias": False},
         [{"args": [q, r(S, N, 5), r(S, N, 3)]}], call=mha_call)
    case("mha_bias_kv_zero_attn", "MultiheadAttention", {"embed_dim": E, "num_heads": H, "add_bias_kv": True, "add_zero_attn": True},
         [{"args": [q, kv, kv], "key_padding_mask": kpm}], call=mha_call)
    case("mha_unbatched", "MultiheadAttention", {"embed_dim": E, "num_heads": H}, [{"args": [r(L, E), r(S, E), r(S, E)]}], call=mha_call)
    # Transformer encoder layers: dropout 0 in training mode (no fast path),
    # and one in eval mode with the default dropout.
    src = r(4, 2, 8)
    case("encoder_layer_relu", "TransformerEncoderLayer", {"d_model": 8, "nhead": 2, "dim_feedforward": 16, "dropout": 0.0},
         [[src]], train=True, rtol=1e-5, atol=1e-5)
    case("encoder_layer_gelu_norm_first_batch_first", "TransformerEncoderLayer",
         {"d_model": 8, "nhead": 4, "dim_feedforward": 12, "dropout": 0.0, "activation": "gelu", "norm_first": True, "batch_first": True,
          "layer_norm_eps": 1e-6}, [{"args": [src.transpose(0, 1)], "src_key_padding_mask": kpm}], train=True, rtol=1e-5, atol=1e-5)
    case("encoder_layer_eval_mask", "TransformerEncoderLayer", {"d_model": 8, "nhead": 2, "dim_feedforward": 16},
         [{"args": [src], "is_causal": True}], rtol=1e-5, atol=1e-5)

    # float64 modules (torch's .double(); Go's default dtype F64), and eps=None
    # RMSNorm where the machine epsilon dominates mean(x²).
    f64 = torch.float64
    case("rms_norm_tiny_f32", "RMSNorm", {"normalized_shape": [4]}, [[r(2, 4) * 1e-4]], grad=False)
    case("rms_norm_tiny_f64", "RMSNorm", {"normalized_shape": [4]}, [[r(2, 4).double() * 1e-8]], dtype=f64, rtol=1e-7, atol=1e-7)
    case("linear_f64", "Linear", {"in_features": 4, "out_features": 3}, [[r(2, 4)]], dtype=f64, rtol=1e-7, atol=1e-7)
    case("conv2d_f64", "Conv2d", {"in_channels": 2, "out_channels": 3, "kernel_size": 3, "padding": 1}, [[r(1, 2, 4, 4)]], dtype=f64, rtol=1e-7, atol=1e-7)
    case("batch_norm2d_train_f64", "BatchNorm2d", {"num_features": 2}, [[r(3, 2, 2, 2)]], train=True, dtype=f64, rtol=1e-7, atol=1e-7)
    case("mha_f64", "MultiheadAttention", {"embed_dim": E, "num_heads": H}, [{"args": [q, kv, kv], "key_padding_mask": kpm}], call=mha_call,
         dtype=f64, rtol=1e-7, atol=1e-7)
    case("encoder_layer_f64", "TransformerEncoderLayer", {"d_model": 8, "nhead": 2, "dim_feedforward": 16, "dropout": 0.0},
         [[src]], train=True, dtype=f64, rtol=1e-7, atol=1e-7)

    os.makedirs(os.path.join(root, "testdata", "nnmod"), exist_ok=True)
    path = os.path.join(root, "testdata", "nnmod", "nnmod.json.gz")
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        with gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as gz:
            gz.write(json.dumps({"torch": torch.__version__, "cases": CASES}, separators=(",", ":")).encode())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    print(f"{len(CASES)} cases -> {os.path.relpath(path, root)} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
