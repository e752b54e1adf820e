"""PyTorch CPU reference timings for backend/cpu's vec kernels.

Run with Debian's /usr/bin/python3 (torch 1.13). It times the same shapes
as BenchmarkVec (64K-element f32 blocks, one thread) and BenchmarkVecOps
((4096, 4096) f32 tensors, two threads) and prints one line per case with
the median of several repetitions, in Gelem/s. Reference tooling only.
"""
import json
import sys
import time

import torch
import torch.nn.functional as F


def bench(fn, n_elem, reps=7, min_time=0.2):
    fn()
    times = []
    for _ in range(reps):
        iters, t0 = 0, time.perf_counter()
        while True:
            fn()
            iters += 1
            dt = time.perf_counter() - t0
            if dt >= min_time / reps:
                break
        times.append(dt / iters)
    times.sort()
    return n_elem / times[len(times) // 2] / 1e9


def main():
    torch.manual_seed(0)
    out = {}
    torch.set_num_threads(1)
    n = 1 << 16
    x = torch.randn(n) * 3
    pos = x.abs() + 1e-3
    y = torch.empty(n)
    cases = {
        "exp": lambda: torch.exp(x, out=y),
        "log": lambda: torch.log(pos, out=y),
        "tanh": lambda: torch.tanh(x, out=y),
        "erf": lambda: torch.erf(x, out=y),
        "sigmoid": lambda: torch.sigmoid(x, out=y),
        "silu": lambda: F.silu(x),
        "gelu": lambda: F.gelu(x),
        "gelu_tanh": lambda: F.gelu(x, approximate="tanh"),
        "relu": lambda: torch.relu(x),
        "add": lambda: torch.add(x, pos, out=y),
        "sum": lambda: x.sum(),
    }
    for k, f in cases.items():
        out["vec/" + k] = bench(f, n)
    torch.set_num_threads(2)
    rows = d = 4096
    X = torch.randn(rows, d) * 2
    Y = torch.randn(rows, d) * 2
    W, B = torch.randn(d), torch.randn(d)
    Z = torch.empty(rows, d)
    ops = {
        "softmax": lambda: torch.softmax(X, -1),
        "log_softmax": lambda: torch.log_softmax(X, -1),
        "layer_norm": lambda: F.layer_norm(X, (d,), W, B),
        "exp": lambda: torch.exp(X, out=Z),
        "gelu": lambda: F.gelu(X),
        "tanh": lambda: torch.tanh(X, out=Z),
        "add": lambda: torch.add(X, Y, out=Z),
    }
    for k, f in ops.items():
        out["ops/" + k] = bench(f, rows * d, reps=5, min_time=1.0)
    if "--json" in sys.argv:
        json.dump(out, sys.stdout, indent=1)
        print()
        return
    for k, v in out.items():
        print("%-16s %8.3f Gelem/s" % (k, v))


if __name__ == "__main__":
    main()
