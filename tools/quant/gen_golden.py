#!/usr/bin/env python3
"""Golden data for internal/quant: the gguf PyPI package's numpy quantizers
(bit-exact ports of ggml's quantize_row_*_ref) applied to a fixed input.

Run with a Python that has numpy and gguf (e.g. ~/.cache/gotpu-modelref/venv):

    python tools/quant/gen_golden.py internal/quant/testdata

Writes input.f32 (little-endian float32, 4096 values = 128 blocks of 32 or 16
blocks of 256) and <TYPE>.bin for every type gguf can quantize among
Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0, plus versions.txt.
"""
import sys
from pathlib import Path

from importlib.metadata import version

import numpy as np
from gguf.quants import quantize
from gguf.constants import GGMLQuantizationType as T


def make_input() -> np.ndarray:
    rng = np.random.default_rng(20261203)
    parts = [
        rng.standard_normal(1024).astype(np.float32),                 # plain
        (rng.standard_normal(512) * 1e-3).astype(np.float32),        # small
        (rng.standard_normal(512) * 50).astype(np.float32),          # large
        rng.uniform(-1, 1, 512).astype(np.float32) ** 3,             # heavy centre
        np.round(rng.standard_normal(512) * 4).astype(np.float32),   # many ties
        np.zeros(256, np.float32),                                   # zero blocks
        np.full(256, 0.75, np.float32),                              # constant blocks
        np.abs(rng.standard_normal(256)).astype(np.float32),         # all positive
        -np.abs(rng.standard_normal(256)).astype(np.float32),        # all negative
    ]
    x = np.concatenate(parts).astype(np.float32)
    assert x.size == 4096, x.size
    # a few outliers and symmetric extremes
    x[37] = 17.0
    x[40] = -17.0
    x[300] = 1e-8
    return x


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "internal/quant/testdata")
    out.mkdir(parents=True, exist_ok=True)
    x = make_input()
    x.astype("<f4").tofile(out / "input.f32")
    for t in (T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0):
        q = quantize(x.reshape(1, -1), t)
        q.astype(np.uint8).tofile(out / f"{t.name}.bin")
    (out / "versions.txt").write_text(
        f"numpy {np.__version__}\ngguf {version('gguf')}\n"
    )


if __name__ == "__main__":
    main()
