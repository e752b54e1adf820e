#!/usr/bin/env python3
"""Reference facts about the two real GGUF models, read with the gguf Python
package, for gguf's TestRealFiles.

  tools/gguf/fetch.sh                          # download the models
  PY="$(tools/modelref/venv.sh)"               # has gguf and numpy
  "$PY" tools/gguf/gen_realref.py              # (re)write gguf/testdata/real.json

For each model (found where fetch.sh puts it) the JSON records, as gguf-py's
GGUFReader reads them: the file's sha256, version, alignment, data offset,
every metadata key with its type (scalars with their value; arrays with
their length, first entries and a sha256 of the elements' GGUF encoding:
each string as uint64 length + bytes, numbers as little-endian values), and
every tensor with its type, dims (GGUF order), byte offset and size, and the
CRC-32 (zlib/IEEE) of gguf.quants.dequantize's float32 output as
little-endian bytes. For one tensor of each type it also records the sha256
of that output and sample values as bit patterns. The Go test dequantizes
every tensor and compares.
"""
import hashlib
import json
import os
import struct
import sys
import zlib

import numpy as np
import gguf
from gguf import GGUFReader, GGUFValueType as V

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "gguf", "testdata", "real.json")
CACHE = os.path.join(os.environ.get("GOTPU_TESTDATA_CACHE") or os.path.expanduser("~/.cache/gotpu-testdata"), "gguf")
MODELS = {
    "smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "gemma3": "gemma-3-270m-q4_k_m.gguf",
}
SCALAR_FMT = {V.UINT8: "<B", V.INT8: "<b", V.UINT16: "<H", V.INT16: "<h", V.UINT32: "<I", V.INT32: "<i",
              V.FLOAT32: "<f", V.BOOL: "<?", V.UINT64: "<Q", V.INT64: "<q", V.FLOAT64: "<d"}


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def field_json(f):
    types = [V(t) for t in f.types]
    out = {"type": "".join(f"{t.name.lower()}[" for t in types[:-1]) + types[-1].name.lower() + "]" * (len(types) - 1)}
    if types[0] != V.ARRAY:
        v = f.contents()
        out["value"] = v if not isinstance(v, float) else float(np.float32(v)) if types[0] == V.FLOAT32 else v
        return out
    if len(types) > 2:
        raise SystemExit("nested arrays in a real file: extend gen_realref.py")
    elem = types[1]
    parts = [f.parts[i] for i in f.data]
    h = hashlib.sha256()
    for p in parts:
        b = bytes(np.asarray(p).tobytes())
        if elem == V.STRING:
            h.update(struct.pack("<Q", len(b)))
        h.update(b)
    out["len"] = len(parts)
    out["sha256"] = h.hexdigest()
    head = []
    for p in parts[:4]:
        if elem == V.STRING:
            head.append(bytes(p).decode("utf-8"))
        else:
            head.append(np.asarray(p).tolist()[0])
    out["head"] = head
    return out


def model_json(path):
    r = GGUFReader(path)
    meta = {}
    for key, f in r.fields.items():
        if key.startswith("GGUF."):
            continue
        meta[key] = field_json(f)
    tensors = []
    seen_types = set()
    for t in r.tensors:
        deq = np.ascontiguousarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32)
        le = deq.astype("<f4", copy=False)
        entry = {"name": t.name, "type": t.tensor_type.name, "dims": [int(x) for x in t.shape],
                 "begin": int(t.data_offset), "bytes": int(t.n_bytes), "numpy_shape": list(deq.shape),
                 "crc32": zlib.crc32(memoryview(le).cast("B"))}
        if t.tensor_type.name not in seen_types:
            seen_types.add(t.tensor_type.name)
            flat = le.reshape(-1)
            idx = sorted({0, 1, 2, 3, flat.size // 3, flat.size // 2, flat.size - 1})
            entry["sha256"] = hashlib.sha256(memoryview(le).cast("B")).hexdigest()
            entry["samples"] = {str(i): f"{int(flat[i:i+1].view(np.uint32)[0]):08x}" for i in idx}
        tensors.append(entry)
    types = {}
    for t in tensors:
        types[t["type"]] = types.get(t["type"], 0) + 1
    return {
        "sha256": sha256_file(path),
        "version": int(r.fields["GGUF.version"].parts[-1][0]),
        "alignment": int(r.alignment),
        "data_offset": int(r.data_offset),
        "num_kv": len(meta),
        "num_tensors": len(tensors),
        "tensor_types": types,
        "metadata": meta,
        "tensors": tensors,
    }


def main():
    from importlib.metadata import version
    out = {"generator": "tools/gguf/gen_realref.py", "gguf_version": version("gguf"), "numpy_version": np.__version__, "models": {}}
    for name, file in MODELS.items():
        path = os.path.join(CACHE, file)
        if not os.path.exists(path):
            raise SystemExit(f"{path} not found: run tools/gguf/fetch.sh first")
        m = model_json(path)
        m["file"] = file
        out["models"][name] = m
        print(f"{name}: {m['num_tensors']} tensors, {m['num_kv']} keys", file=sys.stderr)
    # Indented, except that each tensor takes one line.
    compact = {}
    shown = json.loads(json.dumps(out))
    for name, m in shown["models"].items():
        for i, t in enumerate(m["tensors"]):
            key = f"@@{name}:{i}@@"
            compact[key] = json.dumps(t, ensure_ascii=False, sort_keys=True)
            m["tensors"][i] = key
    text = json.dumps(shown, indent=1, ensure_ascii=False, sort_keys=True)
    for key, line in compact.items():
        text = text.replace(json.dumps(key), line, 1)
    assert json.loads(text) == out
    with open(OUT, "w") as f:
        f.write(text + "\n")
    print(f"wrote {OUT} ({os.path.getsize(OUT)} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
