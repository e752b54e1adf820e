#!/usr/bin/env python3
"""allreduce_mpi4py.py: the reference of `gotpu bench allreduce --engine mpi`.

    mpirun -np 2 python3 tools/mpi/allreduce_mpi4py.py --sizes 1024,1048576 [--reps 5]

Run as the ranks of an Open MPI job; times raw MPI_Allreduce(MPI_SUM,
MPI_IN_PLACE) of float32 buffers of each size (bytes) through mpi4py, the
way `gotpu bench allreduce` times gotpu's: per size, 3 warm-up calls, then
--reps timed loops of `iters` back-to-back all-reduces between barriers
(iters: about 256 MiB moved per loop, between 5 and 1000), and the median
loop's time per all-reduce. Needs no NumPy (a bytearray is the buffer).
Rank 0 prints one JSON object:
{"impl": "mpi4py", "mpi4py": version, "mpi": library version, "nproc": N,
 "results": [{"size_bytes": S, "iters": I, "median_us": T}]}.
"""
import argparse
import json
import statistics
import time

from mpi4py import MPI


def iters_for(size):
    # The same rule as the Go side: about 256 MiB moved per loop, 5..1000.
    return max(5, min(1000, (256 << 20) // max(size, 1)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", required=True)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    comm = MPI.COMM_WORLD
    out = []
    for size in [int(s) for s in a.sizes.split(",")]:
        n = max(1, size // 4)
        buf = [bytearray(n * 4), MPI.FLOAT]
        iters = iters_for(size)
        for _ in range(3):
            comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
        times = []
        for _ in range(a.reps):
            comm.Barrier()
            t0 = time.perf_counter()
            for _ in range(iters):
                comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
            comm.Barrier()
            times.append((time.perf_counter() - t0) / iters)
        out.append({"size_bytes": size, "iters": iters, "median_us": statistics.median(times) * 1e6})
    if comm.Get_rank() == 0:
        import mpi4py
        print(json.dumps({"impl": "mpi4py", "mpi4py": mpi4py.__version__,
                          "mpi": MPI.Get_library_version().split("\n")[0].strip(),
                          "nproc": comm.Get_size(), "results": out}))


if __name__ == "__main__":
    main()
