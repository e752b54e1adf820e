#!/usr/bin/env python3
"""Reference files for hf/safetensors, made and checked with the Python
`safetensors` library (the Rust reference implementation).

  pip install safetensors numpy ml_dtypes
  python3 tools/stref/gen.py            # (re)write hf/safetensors/testdata/ref/
  python3 tools/stref/gen.py --check-go # check files written by the Go writer

Generate mode writes small .safetensors files covering every dtype the
library can write, metadata (absent, empty, one key, awkward strings), a
scalar, an empty tensor, and a two-shard checkpoint with its index, plus
expected.json describing each tensor (dtype, shape, hex bytes and, where
ml_dtypes/numpy can decode the dtype, the element values). The Go tests read
them and check every byte, and check that the Go writer reproduces each file
byte for byte.

Check mode runs `go run ./hf/safetensors/internal/sttool write DIR`, then
loads every file the Go writer produced with safetensors and compares it with
the manifest the Go tool wrote, and re-serializes it with safetensors to check
the bytes are identical. It exits non-zero on any mismatch.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import ml_dtypes
import safetensors
from safetensors import TensorSpec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "hf", "safetensors", "testdata", "ref")

# safetensors TensorSpec dtype name -> (header name, element bytes, numpy dtype for decoding)
DTYPES = [
    ("bool", "BOOL", 1, np.bool_),
    ("uint8", "U8", 1, np.uint8),
    ("int8", "I8", 1, np.int8),
    ("float8_e5m2", "F8_E5M2", 1, ml_dtypes.float8_e5m2),
    ("float8_e4m3fn", "F8_E4M3", 1, ml_dtypes.float8_e4m3fn),
    ("float8_e8m0fnu", "F8_E8M0", 1, ml_dtypes.float8_e8m0fnu),
    ("float8_e4m3fnuz", "F8_E4M3FNUZ", 1, ml_dtypes.float8_e4m3fnuz),
    ("float8_e5m2fnuz", "F8_E5M2FNUZ", 1, ml_dtypes.float8_e5m2fnuz),
    ("int16", "I16", 2, np.int16),
    ("uint16", "U16", 2, np.uint16),
    ("float16", "F16", 2, np.float16),
    ("bfloat16", "BF16", 2, ml_dtypes.bfloat16),
    ("int32", "I32", 4, np.int32),
    ("uint32", "U32", 4, np.uint32),
    ("float32", "F32", 4, np.float32),
    ("complex64", "C64", 8, None),
    ("float64", "F64", 8, np.float64),
    ("int64", "I64", 8, np.int64),
    ("uint64", "U64", 8, np.uint64),
]


def pattern(nbytes, seed, dtype_name):
    """Deterministic bytes; booleans must be 0/1, and every byte value appears for 1-byte floats."""
    rng = np.random.default_rng(seed)
    if dtype_name == "bool":
        return (rng.integers(0, 2, nbytes)).astype(np.uint8).tobytes()
    if nbytes == 256:
        return bytes(range(256))
    return rng.integers(0, 256, nbytes, dtype=np.uint8).tobytes()


def spec(dtype, shape, data, keep):
    buf = np.frombuffer(data, dtype=np.uint8).copy() if data else np.zeros(1, np.uint8)
    keep.append(buf)
    return TensorSpec(dtype=dtype, shape=list(shape), data_ptr=buf.ctypes.data, data_len=len(data))


def json_value(v):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def describe(header_name, shape, data, np_dtype):
    d = {"dtype": header_name, "shape": list(shape), "hex": data.hex()}
    if np_dtype is not None:
        arr = np.frombuffer(data, dtype=np_dtype)
        d["values"] = [json_value(x) for x in arr.astype(np.float64)]
    return d


def save(path, tensors, metadata):
    """tensors: name -> (spec dtype, shape, data). Returns expected.json entry."""
    keep = []
    specs = {n: spec(dt, shape, data, keep) for n, (dt, shape, data) in tensors.items()}
    raw = bytes(safetensors.serialize(specs, metadata=metadata))
    with open(path, "wb") as f:
        f.write(raw)
    # Cross-check with the library's own reader.
    loaded = dict(safetensors.deserialize(raw))
    info = {d[0]: d for d in DTYPES}
    entry = {"metadata": metadata, "tensors": {}}
    for name, (dt, shape, data) in tensors.items():
        got = loaded[name]
        assert bytes(got["data"]) == data, name
        _, hname, _, np_dtype = info.get(dt, (dt, None, None, None))
        if hname is None:  # float4 (packed), header shape doubles the last dim
            hname, np_dtype = "F4", None
        entry["tensors"][name] = describe(hname, got["shape"], data, np_dtype)
    return entry


def generate():
    os.makedirs(OUT, exist_ok=True)
    expected = {}

    tensors = {}
    for i, (dt, hname, size, _) in enumerate(DTYPES):
        shape = (16, 16) if size == 1 and dt.startswith("float8") else (2, 3)
        n = int(np.prod(shape)) * size
        tensors["t_" + hname.lower()] = (dt, shape, pattern(n, i, dt))
    tensors["t_f4"] = ("float4_e2m1fn_x2", (2, 2), pattern(4, 99, "f4"))
    expected["all_dtypes.safetensors"] = save(os.path.join(OUT, "all_dtypes.safetensors"), tensors, {"format": "pt"})

    tensors = {
        "weight": ("float32", (3, 2), np.arange(6, dtype=np.float32).tobytes()),
        "bias": ("float32", (3,), np.array([0.5, -1.25, 3e-8], dtype=np.float32).tobytes()),
        "ids": ("int64", (2,), np.array([-1, 1 << 40], dtype=np.int64).tobytes()),
    }
    expected["no_metadata.safetensors"] = save(os.path.join(OUT, "no_metadata.safetensors"), tensors, None)

    tensors = {
        "scalar": ("float64", (), np.array(math.pi, dtype=np.float64).tobytes()),
        "empty": ("float32", (0, 3), b""),
        "zero_dim_last": ("int8", (4, 0), b""),
    }
    expected["scalar_empty.safetensors"] = save(os.path.join(OUT, "scalar_empty.safetensors"), tensors, {})

    tensors = {
        'quote"back\\slash': ("uint8", (1,), b"\x01"),
        "unicode/ñ/𝔘/\u2028": ("uint8", (2,), b"\x02\x03"),
        "ctrl\t\n\x01\x1f\x7f": ("uint8", (1,), b"\x04"),
    }
    expected["escape.safetensors"] = save(os.path.join(OUT, "escape.safetensors"), tensors, {'key"\n': "val\\ue</script>\u00e9"})

    shard_dir = os.path.join(OUT, "sharded")
    os.makedirs(shard_dir, exist_ok=True)
    shard1 = {
        "model.embed_tokens.weight": ("bfloat16", (4, 2), pattern(16, 7, "bf16")),
        "model.layers.0.mlp.up_proj.weight": ("float16", (2, 2), pattern(8, 8, "f16")),
    }
    shard2 = {
        "model.norm.weight": ("float32", (2,), np.array([1, 2], dtype=np.float32).tobytes()),
        "lm_head.weight": ("bfloat16", (4, 2), pattern(16, 9, "bf16")),
    }
    names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    total = 0
    weight_map = {}
    for name, shard in zip(names, [shard1, shard2]):
        entry = save(os.path.join(shard_dir, name), shard, {"format": "pt"})
        expected["sharded/" + name] = entry
        for t, (_, _, data) in shard.items():
            weight_map[t] = name
            total += len(data)
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    with open(os.path.join(shard_dir, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)
        f.write("\n")

    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, ensure_ascii=True, sort_keys=True)
        f.write("\n")
    print("wrote", OUT, "with safetensors", safetensors.__version__)


def check_go():
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["go", "run", "./hf/safetensors/internal/sttool", "write", tmp], cwd=ROOT, check=True)
        with open(os.path.join(tmp, "manifest.json")) as f:
            manifest = json.load(f)
        by_header = {d[1]: d for d in DTYPES}
        failures = 0
        for fname, want in sorted(manifest.items()):
            path = os.path.join(tmp, fname)
            raw = open(path, "rb").read()
            try:
                got = dict(safetensors.deserialize(raw))
                with safetensors.safe_open(path, framework="numpy") as sf:
                    meta = sf.metadata()
            except Exception as e:  # noqa: BLE001 - report any reader failure
                print(f"FAIL {fname}: safetensors cannot read it: {e}")
                failures += 1
                continue
            if (meta or None) != (want["metadata"] or None):
                print(f"FAIL {fname}: metadata {meta!r} != {want['metadata']!r}")
                failures += 1
            if set(got) != set(want["tensors"]):
                print(f"FAIL {fname}: names {sorted(got)} != {sorted(want['tensors'])}")
                failures += 1
                continue
            keep, specs = [], {}
            for name, w in want["tensors"].items():
                g = got[name]
                data = bytes(g["data"])
                if g["dtype"] != w["dtype"] or list(g["shape"]) != w["shape"] or data.hex() != w["hex"]:
                    print(f"FAIL {fname}: tensor {name!r} differs: {g['dtype']} {g['shape']}")
                    failures += 1
                spec_dtype = by_header[w["dtype"]][0]
                specs[name] = spec(spec_dtype, w["shape"], data, keep)
            # Single-key (or no) metadata makes the reference output deterministic.
            if want["metadata"] is None or len(want["metadata"]) <= 1:
                again = bytes(safetensors.serialize(specs, metadata=want["metadata"]))
                if again != raw:
                    print(f"FAIL {fname}: reference serialization differs from the Go writer's bytes")
                    failures += 1
            print(f"ok   {fname}: {len(got)} tensors")
        if failures:
            sys.exit(f"{failures} failures")
        print("all Go-written files read back by safetensors", safetensors.__version__)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check-go", action="store_true", help="check files written by the Go writer")
    args = ap.parse_args()
    if args.check_go:
        check_go()
    else:
        generate()


if __name__ == "__main__":
    main()
