"""Golden-data framework for gotpu's op conformance suite.

Each cases_<group>.py module calls `case(...)` to declare op cases; gen.py
imports them all, evaluates each case with PyTorch and writes
testdata/golden/<group>.json.gz. The Go suite (tensor/conformance_test.go)
replays every case on every backend and mode.

File format (version 1), a gzip'd JSON object:
  {"version": 1, "torch": "<version>", "group": "<group>", "cases": [CASE...]}
CASE:
  {"id": unique string, "op": gotpu op-table name, "attrs": {name: value},
   "inputs": [INPUT...], "outputs": [TENSOR...],
   "compare": "close" | "exact" | "shape" | "set",
   "rtol": float|null, "atol": float|null,      # overrides of the dtype defaults
   "error": substring|null,                     # the op must panic with this text
   "cotangents": [TENSOR|null], "grads": [TENSOR|null]}   # optional: PyTorch's VJP
                                                # for f32/f64 cases (no edge values)
INPUT: null (absent optional input) | {"scalar": v, "kind": "float"|"int"|"bool"}
       | TENSOR with "layout": "contiguous" | "transposed" | "strided"
TENSOR: {"dtype": "f32", "shape": [..], "data": base64 of little-endian bytes}
Attribute floats that are not finite are written as the strings
"inf", "-inf", "nan"; dtypes as short names ("f32").
"""
import base64
import gzip
import hashlib
import json
import math

import torch

DT = {
    "bool": torch.bool, "u8": torch.uint8, "i8": torch.int8, "i16": torch.int16,
    "i32": torch.int32, "i64": torch.int64, "f16": torch.float16, "bf16": torch.bfloat16,
    "f32": torch.float32, "f64": torch.float64,
}
NAME = {v: k for k, v in DT.items()}
FLOATS = ["f32", "f64", "bf16", "f16"]
INTS = ["u8", "i8", "i16", "i32", "i64"]
ALL = ["bool"] + INTS + FLOATS

_cases = {}  # group -> list


class T:
    """An input tensor spec: shape, dtype, value kind and memory layout.

    kind: "randn" (normal), "rand" (uniform 0..1), "pos" (0.1..3), "unit"
    (-0.95..0.95), "int" (small ints -5..5, or 0..9 for unsigned), "index"
    (0..hi-1; set hi), "bool", "edge" (±0, ±inf, nan, subnormal, large, tiny
    mixed with normal values), "big" (values near the dtype's range, for
    overflow), or a Python list/nested list of explicit values.
    layout: "contiguous", "transposed" (needs >= 2 dims) or "strided".
    """

    def __init__(self, shape, dtype="f32", kind="randn", layout="contiguous", hi=None, lo=None):
        self.shape = list(shape)
        self.dtype = dtype
        self.kind = kind
        self.layout = layout
        self.hi = hi
        self.lo = lo

    def make(self, g):
        dt = DT[self.dtype]
        shape = self.shape
        k = self.kind
        if isinstance(k, (list, tuple)) or isinstance(k, (int, float)):
            return torch.tensor(k, dtype=dt).reshape(shape)
        if isinstance(k, torch.Tensor):
            return k.to(dt).reshape(shape)
        if k == "bool":
            return torch.rand(shape, generator=g) > 0.5
        if k == "index":
            return torch.randint(self.lo or 0, self.hi, shape, generator=g).to(dt)
        if k == "int":
            lo = 0 if self.dtype in ("u8", "bool") else (self.lo if self.lo is not None else -5)
            hi = self.hi if self.hi is not None else (10 if self.dtype == "u8" else 6)
            return torch.randint(lo, hi, shape, generator=g).to(dt)
        if k == "big":
            if self.dtype in FLOATS:
                big = {"f16": 6e4, "bf16": 3e38, "f32": 3e38, "f64": 1e308}[self.dtype]
                return (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1).mul(big).to(dt)
            info = torch.iinfo(dt)
            return torch.randint(info.min, info.max, shape, generator=g, dtype=torch.int64).to(dt)
        base = {
            "randn": lambda: torch.randn(shape, generator=g, dtype=torch.float64),
            "rand": lambda: torch.rand(shape, generator=g, dtype=torch.float64),
            "pos": lambda: torch.rand(shape, generator=g, dtype=torch.float64) * 2.9 + 0.1,
            "unit": lambda: torch.rand(shape, generator=g, dtype=torch.float64) * 1.9 - 0.95,
        }
        if k == "edge":
            x = torch.randn(shape, generator=g, dtype=torch.float64).flatten()
            tiny = {"f16": 6e-8, "bf16": 1e-39, "f32": 1e-40, "f64": 5e-320}.get(self.dtype, 0)
            specials = [0.0, -0.0, math.inf, -math.inf, math.nan, tiny, -tiny, 1e30, -1e30, 1.0, -1.0, 0.5]
            for i in range(min(len(x), len(specials))):
                x[i] = specials[i]
            return x.reshape(shape).to(dt)
        if k not in base:
            raise ValueError("unknown kind " + str(k))
        x = base[k]()
        if self.dtype not in FLOATS:
            x = x.round()
        return x.to(dt)


def S(v):
    """A Go scalar input (wrapped number): float, int or bool."""
    return ("scalar", v)


def _enc(t):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        raw = t.view(torch.int16).numpy().tobytes()
    else:
        raw = t.numpy().tobytes()
    return {"dtype": NAME[t.dtype], "shape": list(t.shape), "data": base64.b64encode(raw).decode()}


def _attr(v):
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, torch.dtype):
        return NAME[v]
    if isinstance(v, (list, tuple)):
        return [_attr(x) for x in v]
    return v


def case(group, op, fn, inputs, attrs=None, id=None, compare=None, rtol=None, atol=None, error=None, grad=True):
    """Declare a case: fn(*torch_inputs) computes the expected output(s) with
    PyTorch (inputs given as T specs, S scalars or None); attrs are the gotpu
    op-table attributes passed to the Go op."""
    _cases.setdefault(group, []).append(dict(op=op, fn=fn, inputs=inputs, attrs=attrs or {}, id=id,
                                             compare=compare, rtol=rtol, atol=atol, error=error, grad=grad))


def _spec_id(x):
    if x is None:
        return "none"
    if isinstance(x, tuple):
        return "s" + type(x[1]).__name__
    tag = x.dtype + "x".join(map(str, x.shape))
    if x.layout != "contiguous":
        tag += "." + x.layout[0]
    if isinstance(x.kind, str) and x.kind not in ("randn",):
        tag += "." + x.kind
    return tag


def build(group):
    out, seen = [], set()
    for c in _cases.get(group, []):
        cid = c["id"] or (c["op"] + "/" + ",".join(_spec_id(x) for x in c["inputs"]))
        base, n = cid, 2
        while cid in seen:
            cid = f"{base}#{n}"
            n += 1
        seen.add(cid)
        seed = int.from_bytes(hashlib.sha256(cid.encode()).digest()[:4], "little")
        g = torch.Generator().manual_seed(seed)
        tins, jins = [], []
        for x in c["inputs"]:
            if x is None:
                tins.append(None)
                jins.append(None)
            elif isinstance(x, tuple):
                v = x[1]
                kind = "bool" if isinstance(v, bool) else ("int" if isinstance(v, int) else "float")
                tins.append(v)
                jins.append({"scalar": _attr(v), "kind": kind})
            else:
                t = x.make(g)
                tins.append(t)
                j = _enc(t)
                j["layout"] = x.layout
                jins.append(j)
        rec = {"id": cid, "op": c["op"], "attrs": {k: _attr(v) for k, v in c["attrs"].items()},
               "inputs": jins, "compare": c["compare"] or "close", "rtol": c["rtol"], "atol": c["atol"],
               "error": c["error"], "outputs": []}
        if c["error"] is None:
            res = c["fn"](*tins)
            if not isinstance(res, (tuple, list)):
                res = [res]
            rec["outputs"] = [_enc(r if isinstance(r, torch.Tensor) else torch.tensor(r)) for r in res]
            if c.get("grad", True) and not any(isinstance(x, T) and x.kind in ("edge", "big") for x in c["inputs"]):
                _add_grads(rec, c, tins, seed)
            if rec["compare"] == "close" and all(r.dtype in (torch.bool,) or not r.is_floating_point() for r in res
                                                  if isinstance(r, torch.Tensor)):
                rec["compare"] = "exact"
        out.append(rec)
    return out


def _add_grads(rec, c, tins, seed):
    """Adds PyTorch's vector-Jacobian products for cases with f32/f64 inputs
    and outputs: "cotangents" (one per output, null where the output is not
    differentiable) and "grads" (one per input, null where the input is not a
    differentiable tensor or gets no gradient)."""
    diff = [isinstance(t, torch.Tensor) and t.dtype in (torch.float32, torch.float64) for t in tins]
    if not any(diff):
        return
    try:
        gins = [t.detach().clone().requires_grad_(True) if d else t for t, d in zip(tins, diff)]
        res = c["fn"](*gins)
        if not isinstance(res, (tuple, list)):
            res = [res]
        g2 = torch.Generator().manual_seed(seed ^ 0x5EED)
        outs, cots, jcots = [], [], []
        for r in res:
            if isinstance(r, torch.Tensor) and r.requires_grad and r.dtype in (torch.float32, torch.float64):
                ct = torch.randn(r.shape, generator=g2, dtype=torch.float64).to(r.dtype)
                outs.append(r)
                cots.append(ct)
                jcots.append(_enc(ct))
            else:
                jcots.append(None)
        if not outs:
            return
        wrt = [t for t, d in zip(gins, diff) if d]
        grads = torch.autograd.grad(outs, wrt, cots, allow_unused=True)
    except RuntimeError:
        return  # not differentiable in PyTorch
    it = iter(grads)
    jg = []
    for d in diff:
        if d:
            gr = next(it)
            jg.append(None if gr is None else _enc(gr))
        else:
            jg.append(None)
    rec["cotangents"] = jcots
    rec["grads"] = jg


def write(group, path):
    cases = build(group)
    doc = {"version": 1, "torch": torch.__version__, "group": group, "cases": cases}
    data = json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()
    # mtime=0 keeps the file byte-identical across regenerations.
    with open(path, "wb") as f:
        with gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as gz:
            gz.write(data)
    return len(cases)
