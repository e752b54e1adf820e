#!/usr/bin/env python3
"""Extracts the tokenizer metadata of a GGUF file into a compact JSON fixture.

    python3 tools/gguf/tok_extract.py MODEL.gguf OUT.json.gz [--package P] [--license L]

Writes {"source": {...}, "types": {key: gguf type}, "metadata": {key: value}}
holding general.architecture and every tokenizer.* key of the file (the
tokenizer.ggml.* vocabulary, scores, token types, merges, special token ids
and flags, tokenizer.chat_template), gzip-compressed with a zero timestamp so
the output is byte-for-byte reproducible. The "metadata" object is what
hf/tokenizer.GGUFMetadataFromMap accepts after JSON decoding; "types" records
the GGUF value types (uint32, bool, string, array[string], array[float32],
array[int32], ...) so tests can check the Go side's documented types.

Standard library only: GGUF's key/value section is read directly (versions 2
and 3, little-endian), no tensor data is touched. When the `gguf` package is
importable (the modelref venv), --verify compares every extracted value with
gguf.GGUFReader's.

Only commit fixtures whose vocabulary licence allows it (SmolLM2: Apache-2.0;
Gemma's vocabulary is under the Gemma Terms of Use and is not committed).
"""

import argparse
import gzip
import hashlib
import io
import json
import os
import struct
import sys

# GGUF value types (ggml's gguf.h).
TYPES = {
    0: ("uint8", "<B", 1),
    1: ("int8", "<b", 1),
    2: ("uint16", "<H", 2),
    3: ("int16", "<h", 2),
    4: ("uint32", "<I", 4),
    5: ("int32", "<i", 4),
    6: ("float32", "<f", 4),
    7: ("bool", "<?", 1),
    10: ("uint64", "<Q", 8),
    11: ("int64", "<q", 8),
    12: ("float64", "<d", 8),
}
STRING, ARRAY = 8, 9


class GGUFError(Exception):
    pass


class _Reader:
    def __init__(self, f, path):
        self.f, self.path = f, path

    def read(self, n):
        b = self.f.read(n)
        if len(b) != n:
            raise GGUFError(f"{self.path}: truncated metadata")
        return b

    def unpack(self, fmt, size):
        return struct.unpack(fmt, self.read(size))[0]

    def string(self):
        n = self.unpack("<Q", 8)
        if n > 1 << 30:
            raise GGUFError(f"{self.path}: string of {n} bytes")
        try:
            return self.read(n).decode("utf-8")
        except UnicodeDecodeError as e:
            raise GGUFError(f"{self.path}: a metadata string is not UTF-8: {e}") from e

    def scalar(self, t):
        if t == STRING:
            return self.string()
        if t not in TYPES:
            raise GGUFError(f"{self.path}: unknown GGUF value type {t}")
        _, fmt, size = TYPES[t]
        return self.unpack(fmt, size)

    def value(self, t):
        """Returns (type name, value)."""
        if t == ARRAY:
            et = self.unpack("<I", 4)
            n = self.unpack("<Q", 8)
            if et == ARRAY:
                raise GGUFError(f"{self.path}: nested arrays are not supported")
            if et in TYPES:
                _, fmt, size = TYPES[et]
                raw = self.read(n * size)
                vals = list(struct.unpack("<" + fmt[1] * n, raw))
            else:
                vals = [self.scalar(et) for _ in range(n)]
            name = "string" if et == STRING else TYPES.get(et, ("?",))[0]
            return f"array[{name}]", vals
        if t == STRING:
            return "string", self.string()
        if t not in TYPES:
            raise GGUFError(f"{self.path}: unknown GGUF value type {t}")
        return TYPES[t][0], self.scalar(t)


def read_metadata(path, want=lambda k: True):
    """Returns ({key: value}, {key: type name}) for the keys want accepts."""
    with open(path, "rb") as f:
        r = _Reader(io.BufferedReader(f, 1 << 20), path)
        if r.read(4) != b"GGUF":
            raise GGUFError(f"{path}: not a GGUF file (bad magic)")
        version = r.unpack("<I", 4)
        if version not in (2, 3):
            raise GGUFError(f"{path}: GGUF version {version} (want 2 or 3, little-endian)")
        r.unpack("<Q", 8)  # tensor count
        kv_count = r.unpack("<Q", 8)
        meta, types = {}, {}
        for _ in range(kv_count):
            key = r.string()
            t = r.unpack("<I", 4)
            tname, val = r.value(t)
            if want(key):
                meta[key], types[key] = val, tname
    return meta, types


def is_tokenizer_key(k):
    return k == "general.architecture" or k.startswith("tokenizer.")


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fixture(path, package="", license=""):
    meta, types = read_metadata(path, is_tokenizer_key)
    src = {"file": os.path.basename(path), "bytes": os.path.getsize(path), "sha256": sha256_file(path)}
    if package:
        src["package"] = package
    if license:
        src["license"] = license
    return {
        "source": src,
        "types": dict(sorted(types.items())),
        "metadata": dict(sorted(meta.items())),
    }


def encode(obj):
    """Compact JSON, gzip with mtime 0 (reproducible)."""
    raw = (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as g:
        g.write(raw)
    return buf.getvalue()


def verify_with_gguf(path, meta):
    """Compares the values with the gguf package's reader (when installed)."""
    import gguf  # noqa: PLC0415

    r = gguf.GGUFReader(path)
    n = 0
    for k, f in r.fields.items():
        if not is_tokenizer_key(k):
            continue
        v = f.contents()
        if isinstance(v, float):
            v = struct.unpack("<f", struct.pack("<f", v))[0] if f.types[0] == gguf.GGUFValueType.FLOAT32 else v
        if v != meta.get(k):
            raise GGUFError(f"{path}: {k} differs from gguf.GGUFReader's value")
        n += 1
    if n != len(meta):
        raise GGUFError(f"{path}: gguf.GGUFReader sees {n} tokenizer keys, we see {len(meta)}")
    return n


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gguf")
    ap.add_argument("out", help="output path (.json.gz; '-' for uncompressed JSON on stdout)")
    ap.add_argument("--package", default="", help="where the file came from, recorded in source")
    ap.add_argument("--license", default="", help="licence of the vocabulary, recorded in source")
    ap.add_argument("--verify", action="store_true", help="cross-check with the gguf package")
    args = ap.parse_args(argv)
    try:
        obj = fixture(args.gguf, args.package, args.license)
        if args.verify:
            n = verify_with_gguf(args.gguf, obj["metadata"])
            print(f"tok_extract.py: {n} keys equal to gguf.GGUFReader's", file=sys.stderr)
    except (OSError, GGUFError) as e:
        print(f"tok_extract.py: {e}", file=sys.stderr)
        return 1
    if args.out == "-":
        json.dump(obj, sys.stdout, ensure_ascii=False)
        return 0
    data = encode(obj)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, args.out)
    print(f"tok_extract.py: {args.out} {len(data)} bytes, {len(obj['metadata'])} keys", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
