#!/usr/bin/python3
"""ref.py — reference timings for `gotpu bench` (NumPy/OpenBLAS, PyTorch).

    /usr/bin/python3 tools/benchref/ref.py CASE --impl numpy|torch
        [--dtype f32|bf16|medium] [--size N] [--threads N] [--reps N]
        [--warmup N] [--k K] [--batch N] [--channels C] [--cout C]
        [--kernel K] [--pad P] [--heads H] [--dim E] [--causal]

Cases and what --size means (the same as `gotpu bench`):
  gemm       n x n @ n x n                  (size n, default 1024; --gemm-m, --gemm-k, --wt: m x k @ k x n)
  gemv       [size, k] @ [k]                (size = rows, default 768; --k 3072)
  eltwise    gelu(x*a + b)*c, four tensors  (size = elements, default 16M)
  softmax    softmax over the last dim of [size, size]        (default 4096)
  layernorm  layer_norm over the last dim of [size, size], weight and bias
  conv       conv2d x [batch, channels, size, size], w [cout, channels,
             kernel, kernel], padding pad, no bias; forward ("torch") and
             backward to input and weight ("torch.backward")
  cnn        one training step of gotpu's MNIST CNN (train.CNN: conv 1->6
             5x5 pad 2, relu, maxpool 2, conv 6->16 5x5, relu, maxpool 2, fc
             400-120-84-10 with relu): forward, cross entropy, backward,
             AdamW (lr 2e-3) on a batch of size (default 64) f32 images
  sdpa       attention over q, k, v [batch, heads, size, dim] (L = S = size,
             default 2048; --batch 1 from gotpu bench): PyTorch 2.x's fused
             F.scaled_dot_product_attention (is_causal with --causal); on
             torch 1.13, which has none, the explicit
             softmax(q @ kᵀ * dim^-0.5) @ v, -inf above the diagonal

Dtypes: NumPy always computes in f32 (it has no bf16). PyTorch uses float32
tensors for f32, bfloat16 tensors for bf16, and for medium float32 tensors
after torch.set_float32_matmul_precision("medium"), which is what a PyTorch
user's medium call does (on the CPU PyTorch 1.13 ignores the hint and
computes in full f32). Each result names the dtype it really used.

Threads: torch.set_num_threads(--threads); the caller also sets
OMP_NUM_THREADS / OPENBLAS_NUM_THREADS, OMP_WAIT_POLICY=PASSIVE and
OPENBLAS_THREAD_TIMEOUT=4 before starting Python so that OpenBLAS's pool
has the same size and neither pool spins while gotpu's repetitions run. NumPy's own
elementwise code is single-threaded whatever the setting.

Output: one JSON object on stdout:
  {"case", "impl", "threads", "versions": {...},
   "results": [{"impl", "dtype", "times_s": [...]}]}

--serve (what `gotpu bench` uses, so that it can interleave the
implementations rep by rep on a busy machine): after setting up, print
  {"ready": true, "versions": {...}, "impls": [{"impl", "dtype"}]}
then answer every stdin line "run <impl>" with {"t": seconds} (one run,
after its untimed setup; no warm-up of its own) or {"error": "..."}, until
end of input.
Exit status: 0 on success; 2 on bad arguments; 3 when the implementation
cannot run here (module missing, case not available for it), with
{"unavailable": "<reason>"} on stdout.
"""

import argparse
import json
import os
import platform
import sys
import time

CASES = ("gemm", "gemv", "eltwise", "softmax", "layernorm", "conv", "sdpa", "cnn")
DEFAULT_SIZE = {"gemm": 1024, "gemv": 768, "eltwise": 16 << 20, "softmax": 4096,
                "layernorm": 4096, "conv": 56, "sdpa": 2048, "cnn": 64}


class Unavailable(Exception):
    """The implementation cannot run this case on this machine."""


def positive(s):
    v = int(s)
    if v < 1:
        raise argparse.ArgumentTypeError(f"want a positive integer, got {s}")
    return v


def nonneg(s):
    v = int(s)
    if v < 0:
        raise argparse.ArgumentTypeError(f"want a non-negative integer, got {s}")
    return v


def parse_args(argv):
    p = argparse.ArgumentParser(prog="ref.py", description="gotpu bench reference timings")
    p.add_argument("case", choices=CASES)
    p.add_argument("--impl", required=True, choices=("numpy", "torch"))
    p.add_argument("--dtype", default="f32", choices=("f32", "bf16", "medium"))
    p.add_argument("--size", type=positive)
    p.add_argument("--threads", type=positive, default=1)
    p.add_argument("--reps", type=positive, default=5)
    p.add_argument("--warmup", type=nonneg, default=1)
    p.add_argument("--k", type=positive, default=3072)
    p.add_argument("--batch", type=positive, default=8)
    p.add_argument("--channels", type=positive, default=64)
    p.add_argument("--cout", type=positive, default=64)
    p.add_argument("--kernel", type=positive, default=3)
    p.add_argument("--pad", type=nonneg, default=1)
    p.add_argument("--heads", type=positive, default=8)
    p.add_argument("--dim", type=positive, default=64)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--gemm-m", type=nonneg, default=0, help="gemm: rows of the first operand (0: --size)")
    p.add_argument("--gemm-k", type=nonneg, default=0, help="gemm: the contraction length (0: --size)")
    p.add_argument("--wt", action="store_true", help="gemm: the second operand stored [n,k] and used transposed")
    p.add_argument("--serve", action="store_true",
                   help='answer "run <impl>" lines on stdin with {"t": seconds}, for interleaved timing')
    a = p.parse_args(argv)
    if a.size is None:
        a.size = DEFAULT_SIZE[a.case]
    if a.case == "conv" and a.size + 2 * a.pad - a.kernel + 1 < 1:
        p.error("conv: kernel larger than the padded input")
    return a


def timed(fn, warmup, reps, setup=None):
    """Runs fn warmup times, then reps times timed; setup runs untimed first."""
    for _ in range(warmup):
        if setup:
            setup()
        fn()
    times = []
    for _ in range(reps):
        if setup:
            setup()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def run_numpy(a):
    try:
        import numpy as np
    except ImportError as e:
        raise Unavailable(f"numpy is not installed for {sys.executable}: {e}")
    rng = np.random.default_rng(0)

    def randn(*shape):
        return rng.standard_normal(shape, dtype=np.float32)

    n = a.size
    if a.case == "gemm":
        gm, gk = a.gemm_m or n, a.gemm_k or n
        x = randn(gm, gk)
        y = randn(n, gk).T if a.wt else randn(gk, n)
        fn = lambda: np.matmul(x, y)
    elif a.case == "gemv":
        x, v = randn(n, a.k), randn(a.k)
        fn = lambda: np.matmul(x, v)
    elif a.case == "softmax":
        x = randn(n, n)

        def fn():
            e = np.exp(x - x.max(axis=-1, keepdims=True))
            e /= e.sum(axis=-1, keepdims=True)
            return e
    elif a.case == "layernorm":
        x, w, b = randn(n, n), randn(n), randn(n)

        def fn():
            mu = x.mean(axis=-1, keepdims=True)
            xc = x - mu
            var = np.mean(xc * xc, axis=-1, keepdims=True)
            xc *= 1.0 / np.sqrt(var + np.float32(1e-5))
            xc *= w
            xc += b
            return xc
    else:
        raise Unavailable(f"numpy has no {a.case} (no erf / no convolution)")
    vers = {"numpy": np.__version__}
    try:
        cfg = np.show_config(mode="dicts")  # numpy >= 1.25
        vers["blas"] = cfg["Build Dependencies"]["blas"]["name"]
    except Exception:  # older numpy: no dict mode
        pass
    return {"numpy": ("f32", fn, None)}, vers


def run_torch(a):
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        raise Unavailable(f"torch is not installed for {sys.executable}: {e}")
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    dt = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    dname = "bf16" if a.dtype == "bf16" else "f32"
    if a.dtype == "medium":
        torch.set_float32_matmul_precision("medium")

    def randn(*shape):
        return torch.randn(*shape, dtype=torch.float32).to(dt)

    n = a.size
    impls = {}
    vers = {"torch": torch.__version__, "torch_threads": torch.get_num_threads()}
    if a.case == "cnn":
        impls["torch"] = ("f32", cnn_step(torch, F, n), None)
        return impls, vers
    if a.case == "gemm":
        gm, gk = a.gemm_m or n, a.gemm_k or n
        x = randn(gm, gk)
        y = randn(n, gk).t() if a.wt else randn(gk, n)
        fn = lambda: torch.matmul(x, y)
    elif a.case == "gemv":
        x, v = randn(n, a.k), randn(a.k)
        fn = lambda: torch.matmul(x, v)
    elif a.case == "eltwise":
        x, p, q, r = randn(n), randn(n), randn(n), randn(n)
        fn = lambda: F.gelu(x * p + q) * r
    elif a.case == "softmax":
        x = randn(n, n)
        fn = lambda: torch.softmax(x, dim=-1)
    elif a.case == "layernorm":
        x, w, b = randn(n, n), randn(n), randn(n)
        fn = lambda: F.layer_norm(x, (n,), w, b, 1e-5)
    elif a.case == "sdpa":
        q, k, v = (randn(a.batch, a.heads, n, a.dim) for _ in range(3))
        scale = a.dim ** -0.5
        keep = torch.ones(n, n, dtype=torch.bool).tril() if a.causal else None

        if hasattr(F, "scaled_dot_product_attention"):
            def fn():
                return F.scaled_dot_product_attention(q, k, v, is_causal=a.causal)
        else:
            def fn():
                s = (q @ k.transpose(-2, -1)) * scale
                if keep is not None:
                    s = s.masked_fill(~keep, float("-inf"))
                return s.softmax(-1) @ v
    else:  # conv
        x = randn(a.batch, a.channels, n, n)
        w = randn(a.cout, a.channels, a.kernel, a.kernel)
        fn = lambda: F.conv2d(x, w, None, 1, a.pad)

    def nograd(f):
        def run():
            with torch.no_grad():
                return f()
        return run

    impls["torch"] = (dname, nograd(fn), None)
    if a.case == "conv":
        xg, wg = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
        g = randn(a.batch, a.cout, n + 2 * a.pad - a.kernel + 1, n + 2 * a.pad - a.kernel + 1)
        state = {}

        def setup():
            xg.grad, wg.grad = None, None
            state["y"] = F.conv2d(xg, wg, None, 1, a.pad)

        def bwd():
            state["y"].backward(g)

        impls["torch.backward"] = (dname, bwd, setup)
    return impls, vers


def cnn_step(torch, F, batch):
    """One AdamW training step of gotpu's MNIST CNN on fixed random data."""
    nn = torch.nn

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(400, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = x.flatten(1)
            return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))

    model = CNN()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    x = torch.randn(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,))

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def serve(impls, vers):
    """Answers "run <impl>" lines on stdin with {"t": seconds} (one untimed
    setup, then one timed run) until end of input."""
    emit({"ready": True, "versions": vers,
          "impls": [{"impl": k, "dtype": v[0]} for k, v in impls.items()]})
    for line in sys.stdin:
        cmd, _, name = line.strip().partition(" ")
        if cmd != "run" or name not in impls:
            emit({"error": f"bad command {line.strip()!r} (want: run {'|'.join(impls)})"})
            continue
        _, fn, setup = impls[name]
        try:
            emit({"t": timed(fn, 0, 1, setup)[0]})
        except Exception as e:  # report and keep serving; the caller decides
            emit({"error": f"{type(e).__name__}: {e}"})
    return 0


def main(argv):
    a = parse_args(argv)
    runner = run_numpy if a.impl == "numpy" else run_torch
    try:
        impls, vers = runner(a)
    except Unavailable as e:
        emit({"unavailable": str(e)})
        return 3
    vers["python"] = platform.python_version()
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY", "OPENBLAS_THREAD_TIMEOUT"):
        vers[k] = os.environ.get(k, "")
    if a.serve:
        return serve(impls, vers)
    results = [{"impl": k, "dtype": d, "times_s": timed(fn, a.warmup, a.reps, setup)}
               for k, (d, fn, setup) in impls.items()]
    emit({"case": a.case, "impl": a.impl, "threads": a.threads, "versions": vers, "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
