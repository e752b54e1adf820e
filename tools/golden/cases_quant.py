"""Cases for the quant group: linear_gguf, x @ W.T with W held in ggml block
encodings, and dequantize_gguf, the rows of such a W decoded. The reference dequantizes with the numpy decoders below, written
from ggml's block layouts (dequantize_row_* in ggml-quants.c), and multiplies
in float64. Tolerances cover kernels that quantize x per block to 8 bits as
llama.cpp does (the CPU backend's direct kernel): each case's atol is the
largest error that rounding can add to an output (act_atol)."""
import numpy as np
import torch

import golden
from golden import T

G = "quant"

# name: (block size, bytes per block, offsets of f16 scales)
BLOCKS = {
    "q4_0": (32, 18, [0]),
    "q4_1": (32, 20, [0, 2]),
    "q5_0": (32, 22, [0]),
    "q5_1": (32, 24, [0, 2]),
    "q8_0": (32, 34, [0]),
    "q4_k": (256, 144, [0, 2]),
    "q5_k": (256, 176, [0, 2]),
    "q6_k": (256, 210, [208]),
}


def f16(b, off):
    return b[:, off:off + 2].copy().view(np.float16).astype(np.float32)  # [nb, 1]


def scale_min_k4(s):
    """The eight 6-bit scales and mins of Q4_K/Q5_K blocks, s [nb, 12] uint8."""
    s = s.astype(np.int32)
    sc = np.concatenate([s[:, 0:4] & 63, (s[:, 8:12] & 15) | ((s[:, 0:4] >> 6) << 4)], axis=1)
    mn = np.concatenate([s[:, 4:8] & 63, (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)], axis=1)
    return sc.astype(np.float32), mn.astype(np.float32)


def dequant(name, w, k):
    """Dequantizes w (uint8 [n, rowbytes]) to float32 [n, k]."""
    bs, ts, _ = BLOCKS[name]
    n = w.shape[0]
    b = w.reshape(-1, ts)
    nb = b.shape[0]
    if name in ("q4_0", "q4_1", "q5_0", "q5_1"):
        d = f16(b, 0)
        off = 2
        m = None
        if name in ("q4_1", "q5_1"):
            m = f16(b, 2)
            off = 4
        qs = b[:, off + (4 if name[1] == "5" else 0):][:, :16].astype(np.int32)
        q = np.concatenate([qs & 15, qs >> 4], axis=1)
        if name[1] == "5":
            qh = b[:, off:off + 4].copy().view(np.uint32).astype(np.int64)  # [nb, 1]
            q = q | (((qh >> np.arange(32)) & 1) << 4).astype(np.int32)
        if m is None:
            y = (q - (16 if name[1] == "5" else 8)).astype(np.float32) * d
        else:
            y = (q.astype(np.float32) * d).astype(np.float32) + m
    elif name == "q8_0":
        y = b[:, 2:34].view(np.int8).astype(np.float32) * f16(b, 0)
    elif name in ("q4_k", "q5_k"):
        d, dmin = f16(b, 0), f16(b, 2)
        sc, mn = scale_min_k4(b[:, 4:16])
        dl = (d * sc)[:, :, None]
        ml = (dmin * mn)[:, :, None]
        off = 48 if name == "q5_k" else 16
        qs = b[:, off:off + 128].reshape(nb, 4, 1, 32).astype(np.int32)
        q = np.concatenate([qs & 15, qs >> 4], axis=2).reshape(nb, 8, 32)
        if name == "q5_k":
            qh = b[:, 16:48].reshape(nb, 1, 32).astype(np.int32)
            q = q | (((qh >> np.arange(8)[:, None]) & 1) << 4)
        y = (dl * q.astype(np.float32)).astype(np.float32) - ml
    elif name == "q6_k":
        d = f16(b, 208)
        ql = b[:, 0:128].reshape(nb, 2, 2, 32).astype(np.int32)
        lo = np.concatenate([ql & 15, ql >> 4], axis=2)  # [nb, 2, 4, 32]
        qh = b[:, 128:192].reshape(nb, 2, 1, 32).astype(np.int32)
        hi = (qh >> (2 * np.arange(4))[:, None]) & 3
        q = (lo | (hi << 4)) - 32
        ds = (d * b[:, 192:208].view(np.int8).astype(np.float32))[:, :, None]
        y = ds * q.reshape(nb, 16, 16).astype(np.float32)
    else:
        raise ValueError(name)
    return np.ascontiguousarray(y, dtype=np.float32).reshape(n, k)


def blocks(name, n, k, seed, scale=0.05):
    """n rows of k elements: random bytes with finite f16 scales (dmin >= 0)."""
    bs, ts, offs = BLOCKS[name]
    rng = np.random.default_rng(seed)
    w = rng.integers(0, 256, size=(n * k // bs, ts), dtype=np.uint8)
    for j, off in enumerate(offs):
        v = rng.uniform(-scale, scale, size=w.shape[0])
        if j == 1 and name in ("q4_k", "q5_k"):
            v = np.abs(v)
        w[:, off:off + 2] = v.astype(np.float16).reshape(-1, 1).view(np.uint8).reshape(-1, 2)
    return w.reshape(n, k // bs * ts)


def ref(name, k):
    def f(x, w):
        W = torch.from_numpy(dequant(name, w.numpy(), k)).double()
        return (x.double() @ W.T).to(x.dtype)
    return f


def act_atol(name, x, w, k):
    """The largest error 8-bit activations can add to an output: per block
    of the activation type (32 elements, 256 for the K types), half a
    quantization step amax/127 times the block's sum of |w|."""
    bs = 256 if name.endswith("_k") else 32
    W = np.abs(dequant(name, w.numpy(), k).astype(np.float64))  # [n, k]
    X = x.double().reshape(-1, k).numpy()
    amax = np.abs(X).reshape(X.shape[0], -1, bs).max(axis=2)    # [m, k/bs]
    sw = W.reshape(W.shape[0], -1, bs).sum(axis=2)               # [n, k/bs]
    return float(((amax / 127 / 2) @ sw.T).max() * 1.05 + 1e-4)


def add(name, xspec, n, k, seed, id, rtol):
    w = blocks(name, n, k, seed=seed)
    wt = torch.from_numpy(w)
    # The atol depends on x, which golden.build draws later: _set_atols.
    golden.case(G, "linear_gguf", ref(name, k),
                [xspec, T([n, w.shape[1]], "u8", kind=wt)],
                {"type": name, "k": k}, rtol=rtol, atol=None, id=id)
    _pending.append((len(golden._cases[G]) - 1, name, wt, k))


_pending = []
for i, name in enumerate(BLOCKS):
    bs = BLOCKS[name][0]
    for m, n, k, dt in [(3, 5, 2 * bs, "f32"), (1, 7, bs, "f32"), (2, 4, bs, "bf16")]:
        add(name, T([m, k], dt), n, k, 1000 + 17 * i + m, f"linear_gguf/{name}/{dt}{m}x{k}x{n}",
            1e-4 if dt == "f32" else 0.01)
    # A leading batch dimension and one row.
    add(name, T([2, 1, bs]), 3, bs, 2000 + i, f"linear_gguf/{name}/batched", 1e-4)

# Errors: a weight that is not u8, rows of the wrong length, k that is not
# a multiple of the block size, an unknown type.
golden.case(G, "linear_gguf", None, [T([2, 32]), T([3, 18], "f32")], {"type": "q4_0", "k": 32},
            error="weight must be u8 blocks")
golden.case(G, "linear_gguf", None, [T([2, 32]), T([3, 20], "u8", kind="int")], {"type": "q4_0", "k": 32},
            error="weight must be [n, 18]")
golden.case(G, "linear_gguf", None, [T([2, 48]), T([3, 27], "u8", kind="int")], {"type": "q4_0", "k": 48},
            error="not a positive multiple")
golden.case(G, "linear_gguf", None, [T([2, 32]), T([3, 18], "u8", kind="int")], {"type": "q3_k", "k": 32},
            error="unsupported block type")
golden.case(G, "linear_gguf", None, [T([2, 64]), T([3, 18], "u8", kind="int")], {"type": "q4_0", "k": 32},
            error="does not end in k = 32")


def _set_atols():
    """Sets each case's atol from its inputs, drawn as golden.build draws
    them (the generator is seeded from the case id)."""
    import hashlib
    for idx, name, wt, k in _pending:
        c = golden._cases[G][idx]
        seed = int.from_bytes(hashlib.sha256(c["id"].encode()).digest()[:4], "little")
        x = c["inputs"][0].make(torch.Generator().manual_seed(seed))
        c["atol"] = act_atol(name, x, wt, k)


_set_atols()


# dequantize_gguf: the rows decoded, exactly (ggml's reference dequantizer
# is a product and an add per element, in float32 as the numpy decoder).
def dq_ref(name, k):
    def f(w):
        return torch.from_numpy(dequant(name, w.numpy(), k))
    return f


for i, name in enumerate(BLOCKS):
    bs = BLOCKS[name][0]
    for n, k in [(3, 2 * bs), (1, bs)]:
        w = torch.from_numpy(blocks(name, n, k, seed=3000 + 7 * i + n))
        golden.case(G, "dequantize_gguf", dq_ref(name, k), [T([n, w.shape[1]], "u8", kind=w)],
                    {"type": name, "k": k}, rtol=0, atol=0, id=f"dequantize_gguf/{name}/{n}x{k}")

golden.case(G, "dequantize_gguf", None, [T([3, 18], "f32")], {"type": "q4_0", "k": 32},
            error="weight must be u8 blocks")
golden.case(G, "dequantize_gguf", None, [T([3, 20], "u8", kind="int")], {"type": "q4_0", "k": 32},
            error="weight must be [n, 18]")
golden.case(G, "dequantize_gguf", None, [T([3, 18], "u8", kind="int")], {"type": "q3_k", "k": 32},
            error="unsupported block type")
