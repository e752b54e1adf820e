#!/usr/bin/env python3
"""Golden data for internal/quant from ggml itself: the prebuilt ggml
libraries of the libggml-python PyPI package (libggml-base's
quantize_row_*_ref, compiled without FMA contraction, and libggml-cpu's
ggml_vec_dot_*_generic), called through ctypes.

    python3 -m venv /tmp/qv && /tmp/qv/bin/pip install libggml-python numpy
    /tmp/qv/bin/python tools/quant/gen_golden_ggml.py internal/quant/testdata

Reads input.f32 (written by gen_golden.py) and writes
  ggml_<TYPE>.bin  quantize_row_<type>_ref of all of input.f32, for Q4_0,
                   Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q4_K, Q5_K, Q6_K, Q8_K;
  act.f32          two activation rows of 512 values;
  ggml_dot.f32     for each weight type in the order above (without Q8_1 and
                   Q8_K), the 8x2 dot products y[i][j] = vec_dot(W row j,
                   activation row i quantized to the partner type), where W
                   is input.f32 as 8 rows of 512, row-major in i then j.
"""
import ctypes
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import libggml

LIB = Path(libggml.__file__).parent / "lib64"
base = ctypes.CDLL(str(LIB / "libggml-base.so"), mode=ctypes.RTLD_GLOBAL)
cpu = ctypes.CDLL(str(LIB / "libggml-cpu.so"), mode=ctypes.RTLD_GLOBAL)
cpu.ggml_cpu_init()  # fills the half-to-float table that the vec_dots read

# name -> (block size, block bytes)
TYPES = {
    "Q4_0": (32, 18), "Q4_1": (32, 20), "Q5_0": (32, 22), "Q5_1": (32, 24),
    "Q8_0": (32, 34), "Q8_1": (32, 36), "Q4_K": (256, 144), "Q5_K": (256, 176),
    "Q6_K": (256, 210), "Q8_K": (256, 292),
}
PARTNER = {"Q4_0": "Q8_0", "Q4_1": "Q8_1", "Q5_0": "Q8_0", "Q5_1": "Q8_1", "Q8_0": "Q8_0",
           "Q4_K": "Q8_K", "Q5_K": "Q8_K", "Q6_K": "Q8_K"}


def quant(name: str, x: np.ndarray) -> bytes:
    bs, ts = TYPES[name]
    x = np.ascontiguousarray(x, dtype=np.float32)
    assert x.size % bs == 0
    out = ctypes.create_string_buffer(x.size // bs * ts)
    fn = getattr(base, f"quantize_row_{name.lower().replace('_k', '_K')}_ref")
    fn.restype = None
    fn(x.ctypes.data_as(ctypes.c_void_p), out, ctypes.c_int64(x.size))
    return out.raw


def vec_dot(wname: str, w: bytes, y: bytes, n: int) -> float:
    a = PARTNER[wname]
    fn = getattr(cpu, f"ggml_vec_dot_{wname.lower().replace('_k', '_K')}_{a.lower().replace('_k', '_K')}_generic")
    fn.restype = None
    s = ctypes.c_float(0)
    fn(ctypes.c_int(n), ctypes.byref(s), ctypes.c_size_t(0), w, ctypes.c_size_t(0), y, ctypes.c_size_t(0), ctypes.c_int(1))
    return s.value


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "internal/quant/testdata")
    x = np.fromfile(out / "input.f32", dtype="<f4")
    for name in TYPES:
        (out / f"ggml_{name}.bin").write_bytes(quant(name, x))
    k, n, m = 512, 8, 2
    rng = np.random.default_rng(1203)
    act = rng.standard_normal(m * k).astype(np.float32)
    act[7] = 6.5
    act.astype("<f4").tofile(out / "act.f32")
    w = x[: n * k].reshape(n, k)
    res = []
    for name in PARTNER:
        bs, ts = TYPES[name]
        rows = [quant(name, w[j]) for j in range(n)]
        for i in range(m):
            yq = quant(PARTNER[name], act[i * k:(i + 1) * k])
            for j in range(n):
                res.append(vec_dot(name, rows[j], yq, k))
    np.array(res, dtype="<f4").tofile(out / "ggml_dot.f32")
    (out / "versions_ggml.txt").write_text(f"libggml-python {version('libggml-python')}\nnumpy {np.__version__}\n")


if __name__ == "__main__":
    main()
