#!/usr/bin/env python3
"""A small GGUF file written by the reference writer (gguf-py's GGUFWriter),
for package gguf's reader tests.

  PY="$(tools/modelref/venv.sh)"      # has gguf and numpy
  "$PY" tools/gguf/gen_files.py        # (re)write gguf/testdata/pywriter.gguf{,.json}

The file holds a metadata value of every type (each integer width, both
floats, bool, strings with non-ASCII text and an empty string, arrays of
each, nested arrays), a custom general.alignment of 64, and tensors of
several types and ranks. pywriter.gguf.json records what gguf-py's
GGUFReader reads back: every key with its type and value, and every tensor
with its type, dims (GGUF order, ne[0] first), the numpy shape GGUFReader
gives its data (row-major, PyTorch order), the data offset, and sha256
digests of the raw bytes and of gguf.quants.dequantize's float32 output.
GGUFReader flattens nested arrays, so for those the JSON keeps its flat
output as reader_flat and the structure as written as value.
"""
import hashlib
import json
import math
import os
import tempfile

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T, GGUFValueType as V

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "gguf", "testdata", "pywriter.gguf")

rng = np.random.default_rng(7)

SCALARS = [
    ("test.u8", 200, V.UINT8), ("test.i8", -100, V.INT8),
    ("test.u16", 60000, V.UINT16), ("test.i16", -30000, V.INT16),
    ("test.u32", 4000000000, V.UINT32), ("test.i32", -2000000000, V.INT32),
    ("test.u64", 18000000000000000000, V.UINT64), ("test.i64", -9000000000000000000, V.INT64),
    ("test.f32", 0.1, V.FLOAT32), ("test.f64", 0.1, V.FLOAT64),
    ("test.f32_neg_zero", -0.0, V.FLOAT32), ("test.f32_inf", math.inf, V.FLOAT32),
    ("test.true", True, V.BOOL), ("test.false", False, V.BOOL),
    ("test.string", "héllo, wörld ✓ 日本語", V.STRING), ("test.empty_string", "", V.STRING),
]
ARRAYS = [
    ("test.arr_u8", [0, 1, 255], V.UINT8), ("test.arr_i8", [-128, 0, 127], V.INT8),
    ("test.arr_u16", [1, 65535], V.UINT16), ("test.arr_i16", [-32768, 32767], V.INT16),
    ("test.arr_u32", [7, 4294967295], V.UINT32), ("test.arr_i32", [-1, 2, -3], V.INT32),
    ("test.arr_u64", [0, 18446744073709551615], V.UINT64), ("test.arr_i64", [-9223372036854775808, 9223372036854775807], V.INT64),
    ("test.arr_f32", [0.5, -1.25, 3.0e38], V.FLOAT32), ("test.arr_f64", [1e300, -2.5], V.FLOAT64),
    ("test.arr_bool", [True, False, True], V.BOOL),
    ("test.arr_string", ["a", "", "ñ", "<|im_start|>"], V.STRING),
]
NESTED = [("test.nested", [[1, 2, 3], [4], [5, 6]]), ("test.nested_strings", [["x", "y"], ["z"]]),
          ("test.nested3", [[[1.5, 2.5], [3.5]], [[4.5]]])]


def tensors():
    out = []
    out.append(("t.f32", np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5, T.F32))
    out.append(("t.f32_scalarish", np.array([42.0], dtype=np.float32), T.F32))
    out.append(("t.f16", (rng.normal(size=(3, 4)) * 10).astype(np.float16), T.F16))
    data = (rng.normal(size=(4, 64))).astype(np.float32)
    out.append(("t.q8_0", gguf.quants.quantize(data, T.Q8_0), T.Q8_0))
    out.append(("t.q4_0_3d", gguf.quants.quantize(rng.normal(size=(2, 3, 32)).astype(np.float32), T.Q4_0), T.Q4_0))
    out.append(("t.bf16", gguf.quants.quantize(rng.normal(size=(2, 8)).astype(np.float32), T.BF16), T.BF16))
    # Q4_K from random bytes with finite scales (gguf-py cannot quantize K types).
    blocks = rng.integers(0, 256, size=(2, 144), dtype=np.uint8)
    blocks[:, 0:4] = np.array([0x2C00, 0x2400], dtype=np.uint16).view(np.uint8)
    out.append(("t.q4_k", blocks.reshape(2, 144), T.Q4_K))
    return out


def main():
    w = gguf.GGUFWriter(OUT, arch="testarch")
    w.add_custom_alignment(64)
    w.add_name("pywriter fixture")
    for key, val, vt in SCALARS:
        w.add_key_value(key, val, vt)
    for key, val, vt in ARRAYS:
        w.add_key_value(key, val, V.ARRAY, sub_type=vt)
    for key, val in NESTED:
        w.add_array(key, val)
    for name, arr, qt in tensors():
        if qt in (T.F32, T.F16):
            w.add_tensor(name, arr)
        else:
            w.add_tensor(name, arr, raw_shape=arr.shape, raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    r = gguf.GGUFReader(OUT)
    meta = []
    nested = dict(NESTED)
    for key, f in r.fields.items():
        if key.startswith("GGUF."):
            continue
        m = {"key": key, "type": type_name(f), "value": jsonable(field_value(f))}
        if key in nested:
            # GGUFReader flattens nested arrays; keep its output and the
            # structure as written.
            m["reader_flat"] = m["value"]
            m["value"] = jsonable(nested[key])
        meta.append(m)
    ts = []
    for t in r.tensors:
        raw = np.asarray(t.data).view(np.uint8).tobytes()
        deq = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type).astype(np.float32)
        ts.append({"name": t.name, "type": t.tensor_type.name, "dims": [int(x) for x in t.shape],
                   "numpy_shape": list(deq.shape), "begin": int(t.data_offset), "n_bytes": int(t.n_bytes),
                   "raw_sha256": hashlib.sha256(raw).hexdigest(),
                   "f32_sha256": hashlib.sha256(np.ascontiguousarray(deq).view(np.uint32).astype("<u4").tobytes()).hexdigest()})
    with open(OUT + ".json", "w") as fp:
        json.dump({"generator": "tools/gguf/gen_files.py", "version": int(r.fields["GGUF.version"].parts[-1][0]),
                   "alignment": int(r.alignment), "data_offset": int(r.data_offset), "metadata": meta, "tensors": ts},
                  fp, indent=1, ensure_ascii=False)
        fp.write("\n")
    print(f"wrote {OUT} ({os.path.getsize(OUT)} bytes) and its .json")


def type_name(f):
    names = [V(x).name.lower() for x in f.types]
    out = names[-1]
    for n in reversed(names[:-1]):
        out = f"{n}[{out}]"
    return out


def field_value(f):
    return f.contents()


def jsonable(v):
    if isinstance(v, float):
        if math.isinf(v):
            return "+Inf" if v > 0 else "-Inf"
        if math.isnan(v):
            return "NaN"
        if v == 0 and math.copysign(1, v) < 0:
            return "-0"
        return v
    if isinstance(v, list):
        return [jsonable(x) for x in v]
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return jsonable(float(v))
    return v


if __name__ == "__main__":
    main()
