#!/usr/bin/env python3
"""allreduce_gloo.py: the reference of `gotpu bench allreduce`.

    python tools/dist/allreduce_gloo.py --nproc 2 --sizes 1024,1048576 \
        [--reps 5]

Starts --nproc processes on this host with torch.distributed's gloo
backend and times all_reduce(sum) of float32 tensors of each size (bytes),
the way `gotpu bench allreduce` times gotpu's: per size, a warm-up, then
--reps timed loops of `iters` back-to-back all-reduces between barriers
(iters: about 256 MiB moved per loop, between 5 and 1000), and the median loop's
time per all-reduce. Rank 0 prints one JSON object:
{"impl": "torch-gloo", "torch": version, "nproc": N,
 "results": [{"size_bytes": S, "iters": I, "median_us": T}]}.
"""
import argparse
import json
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def iters_for(size):
    # The same rule as the Go side: about 256 MiB moved per loop, 5..1000.
    return max(5, min(1000, (256 << 20) // max(size, 1)))


def worker(rank, nproc, port, sizes, reps, q):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=nproc)
    out = []
    for size in sizes:
        n = max(1, size // 4)
        x = torch.ones(n, dtype=torch.float32)
        iters = iters_for(size)
        for _ in range(3):
            dist.all_reduce(x)
        times = []
        for _ in range(reps):
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(iters):
                dist.all_reduce(x)
            dist.barrier()
            times.append((time.perf_counter() - t0) / iters)
        out.append({"size_bytes": size, "iters": iters, "median_us": statistics.median(times) * 1e6})
    if rank == 0:
        q.put(out)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--sizes", required=True)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, a.nproc, port, sizes, a.reps, q)) for r in range(a.nproc)]
    for p in procs:
        p.start()
    res = q.get()
    for p in procs:
        p.join()
        if p.exitcode != 0:
            print(f"allreduce_gloo: a worker exited {p.exitcode}", file=sys.stderr)
            sys.exit(1)
    print(json.dumps({"impl": "torch-gloo", "torch": torch.__version__, "nproc": a.nproc, "results": res}))


if __name__ == "__main__":
    main()
