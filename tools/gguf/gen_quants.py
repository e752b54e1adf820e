#!/usr/bin/env python3
"""Dequantization fixtures for package gguf, made with the `gguf` Python
package (llama.cpp's gguf-py, whose numpy dequantizers mirror ggml's C
reference dequantize_row_* functions).

  PY="$(tools/modelref/venv.sh)"      # has gguf and numpy
  "$PY" tools/gguf/gen_quants.py       # (re)write gguf/testdata/quants/

For each tensor type the Go package dequantizes it writes
gguf/testdata/quants/<TYPE>.bin:

  "GQF1"  magic
  u32     ggml type number
  u32     n, the number of elements
  u32     r, the number of raw bytes
  r bytes the encoded blocks
  n u32   the expected float32 results, as little-endian bit patterns

and manifest.json describing each file (how its blocks were made, the
reference used, sha256), plus exhaustive sha256 digests of the F16 and BF16
conversion of all 65536 bit patterns. The Go test (gguf/dequant_test.go)
compares every value bit for bit.

Blocks come from:
  * gguf.quants.quantize of random data (types it can quantize: BF16, Q4_0,
    Q4_1, Q5_0, Q5_1, Q8_0), rows of very different magnitudes;
  * random block bytes whose f16 (or, for Q8_K, f32) scale fields are
    replaced by random finite values (subnormal, tiny, ordinary and near
    the f16 maximum, both signs), for every type: these reach every bit
    pattern of the quant fields, which quantizers never produce;
  * for F32/F16/BF16, random bit patterns plus every special value (zeros,
    subnormals, infinities, quiet and signalling NaNs with payloads).

The expected values are gguf.quants.dequantize's output, except for Q8_K,
which the gguf package does not dequantize: its expected values come from
ggml's formula y = d * q written out in numpy below (one float32 multiply
per element). The output is deterministic (fixed seed); re-running it
reproduces the committed files byte for byte.
"""
import hashlib
import json
import os
import struct
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "gguf", "testdata", "quants")

rng = np.random.default_rng(20240607)


def finite_f16(n):
    """n random finite f16 values as uint16 bits, mixing distributions."""
    out = np.empty(n, dtype=np.uint16)
    for i in range(n):
        kind = rng.integers(0, 4)
        if kind == 0:  # any finite bit pattern (subnormals and near-max included)
            while True:
                b = int(rng.integers(0, 1 << 16))
                if (b >> 10) & 0x1F != 0x1F:
                    break
        elif kind == 1:  # subnormal or zero
            b = int(rng.integers(0, 1 << 10)) | (int(rng.integers(0, 2)) << 15)
        else:  # typical scale magnitude, 1e-4 .. 1e-1
            v = np.float16(rng.choice([-1, 1]) * 10 ** rng.uniform(-4, -1))
            b = int(np.array([v], dtype=np.float16).view(np.uint16)[0])
        out[i] = b
    return out


def finite_f32(n):
    out = np.empty(n, dtype=np.uint32)
    for i in range(n):
        if rng.integers(0, 2) == 0:
            while True:
                b = int(rng.integers(0, 1 << 32))
                if (b >> 23) & 0xFF != 0xFF:
                    break
            out[i] = b
        else:
            out[i] = np.array([np.float32(rng.normal() * 1e-2)], dtype=np.float32).view(np.uint32)[0]
    return out


def set_f16(blocks, offset, bits):
    blocks[:, offset] = (bits & 0xFF).astype(np.uint8)
    blocks[:, offset + 1] = (bits >> 8).astype(np.uint8)


# Offsets of the f16 scale fields in each block layout.
F16_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
}


def random_blocks(qtype, nblocks):
    _, ts = GGML_QUANT_SIZES[qtype]
    blocks = rng.integers(0, 256, size=(nblocks, ts), dtype=np.uint8)
    # Structured extremes: all quant bits clear, all set.
    if nblocks >= 2:
        blocks[0, :] = 0
        blocks[1, :] = 0xFF
    if qtype == T.Q8_K:
        bits = finite_f32(nblocks)
        blocks[:, 0:4] = bits.view(np.uint8).reshape(nblocks, 4)
    else:
        for off in F16_FIELDS[qtype]:
            set_f16(blocks, off, finite_f16(nblocks))
    return blocks


def quantized_blocks(qtype, nrows):
    bs, _ = GGML_QUANT_SIZES[qtype]
    scales = 10.0 ** rng.uniform(-6, 3, size=(nrows, 1))
    data = (rng.normal(size=(nrows, bs)) * scales).astype(np.float32)
    data[0, :] = 0  # an all-zero block (d = 0)
    data[1, :] = 1.5  # a constant block
    data[2, ::3] = 0
    q = gguf.quants.quantize(data, qtype)
    return np.ascontiguousarray(q).reshape(nrows, -1)


SPECIAL_F32 = [0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x3F800000, 0xBF800000,
               0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FA5A5A5,
               0xFFBFFFFF, 0x7FFFFFFF]
SPECIAL_16 = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x83FF, 0x0400, 0x3C00, 0xBC00, 0x7BFF, 0xFBFF, 0x7C00,
              0xFC00, 0x7E00, 0xFE00, 0x7C01, 0x7D55, 0xFDFF, 0x7FFF, 0xFFFF, 0x7F80, 0xFF80, 0x7FC0, 0x7F81,
              0x0080, 0x007F, 0x3F80]


def float_raw(qtype, n):
    if qtype == T.F32:
        bits = np.concatenate([np.array(SPECIAL_F32, dtype=np.uint32),
                               rng.integers(0, 1 << 32, size=n - len(SPECIAL_F32), dtype=np.uint64).astype(np.uint32)])
        return bits.view(np.uint8)
    bits = np.concatenate([np.array(SPECIAL_16, dtype=np.uint16),
                           rng.integers(0, 1 << 16, size=n - len(SPECIAL_16)).astype(np.uint16)])
    return bits.view(np.uint8)


def dequantize(qtype, raw):
    """Reference float32 results for raw (a flat uint8 array of whole blocks)."""
    if qtype == T.Q8_K:
        # gguf-py has no Q8_K dequantizer; ggml's dequantize_row_q8_K is
        # y[j] = x.d * x.qs[j] with float d and int8 qs.
        blocks = raw.reshape(-1, 292)
        d = blocks[:, 0:4].copy().view(np.float32)  # (nblocks, 1)
        q = blocks[:, 4:260].view(np.int8).astype(np.float32)
        with np.errstate(over="ignore"):  # huge random d overflow to inf, as in C
            return (d * q).reshape(-1)
    if qtype == T.BF16:
        return gguf.quants.dequantize(raw.reshape(1, -1), qtype).reshape(-1)
    if qtype in (T.F32, T.F16):
        return gguf.quants.dequantize(raw.view(np.uint8), qtype).reshape(-1)
    return gguf.quants.dequantize(raw.reshape(1, -1), qtype).reshape(-1)


TYPES = [T.F32, T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0,
         T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.Q8_K]
QUANTIZABLE = {T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0}


def build(qtype):
    bs, ts = GGML_QUANT_SIZES[qtype]
    notes = []
    if qtype in (T.F32, T.F16, T.BF16):
        raw = float_raw(qtype, 2048)
        notes.append("2048 values: every special bit pattern (zeros, subnormals, infinities, quiet and signalling NaNs) then random bit patterns")
        if qtype == T.BF16:
            data = (rng.normal(size=(4, 64)) * 10.0 ** rng.uniform(-3, 3, size=(4, 1))).astype(np.float32)
            q = np.ascontiguousarray(gguf.quants.quantize(data, qtype)).view(np.uint8).reshape(-1)
            raw = np.concatenate([raw, q])
            notes.append("then 256 values from gguf.quants.quantize(float32 data, BF16)")
    else:
        parts = []
        if qtype in QUANTIZABLE:
            parts.append(quantized_blocks(qtype, 48))
            notes.append(f"48 blocks from gguf.quants.quantize(float32 data, {qtype.name}), rows of magnitude 1e-6..1e3, one zero and one constant block")
        nrand = 48 if bs == 32 else 16
        parts.append(random_blocks(qtype, nrand))
        notes.append(f"{nrand} blocks of random bytes (the first all 0x00, the second all 0xFF) with random finite scale fields")
        raw = np.concatenate(parts, axis=0).reshape(-1)
    raw = np.ascontiguousarray(raw, dtype=np.uint8)
    n = len(raw) // ts * bs
    want = np.ascontiguousarray(dequantize(qtype, raw), dtype=np.float32)
    assert want.shape == (n,), (qtype.name, want.shape, n)
    blob = b"GQF1" + struct.pack("<III", int(qtype), n, len(raw)) + raw.tobytes() + want.view(np.uint32).astype("<u4").tobytes()
    ref = "gguf.quants.dequantize" if qtype != T.Q8_K else "numpy y = d*q (ggml dequantize_row_q8_K; gguf-py has no Q8_K dequantizer)"
    return blob, {"type": qtype.name, "ggml_type": int(qtype), "elements": n, "raw_bytes": len(raw),
                  "block_size": bs, "type_size": ts, "blocks": notes, "reference": ref}


def exhaustive(qtype):
    bits = np.arange(1 << 16, dtype=np.uint16).view(np.uint8)
    out = dequantize(qtype, bits)
    return hashlib.sha256(out.astype(np.float32).view(np.uint32).astype("<u4").tobytes()).hexdigest()


def main():
    os.makedirs(OUT, exist_ok=True)
    from importlib.metadata import version
    manifest = {"generator": "tools/gguf/gen_quants.py", "gguf_version": version("gguf"),
                "numpy_version": np.__version__, "files": {}, "exhaustive_sha256": {}}
    total = 0
    for qtype in TYPES:
        blob, info = build(qtype)
        name = qtype.name + ".bin"
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(blob)
        info["sha256"] = hashlib.sha256(blob).hexdigest()
        manifest["files"][name] = info
        total += len(blob)
    for qtype in (T.F16, T.BF16):
        manifest["exhaustive_sha256"][qtype.name] = exhaustive(qtype)
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {len(TYPES)} fixtures, {total} bytes, to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
