#!/usr/bin/python3
"""One epoch of gotpu's MNIST MLP or CNN in PyTorch 1.13 (the same model,
optimizer, batch size and data as `gotpu train mnist`), printing one JSON
object: {"model", "seconds", "examples_per_second", "threads"}.

Usage: torch_epoch.py mlp|cnn MNIST_DIR [threads]"""
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "golden"))
from train_gen import CNN, MLP, read_idx  # noqa: E402


def main():
    name, d = sys.argv[1], sys.argv[2]
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    torch.set_num_threads(threads)
    imgs = read_idx(os.path.join(d, "train-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(d, "train-labels-idx1-ubyte.gz")).long()
    x = (((imgs.float() / 255.0) - 0.1307) / 0.3081).reshape(-1, 1, 28, 28)
    torch.manual_seed(0)
    model = MLP() if name == "mlp" else CNN()
    # The defaults of `gotpu train mnist` (cosine decay is per step and costs nothing here).
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3 if name == "mlp" else 2e-3)
    perm = torch.randperm(len(x))
    bs = 64
    t0 = time.perf_counter()
    for i in range(0, len(x), bs):
        idx = perm[i:i + bs]
        opt.zero_grad()
        loss = F.cross_entropy(model(x[idx]), labels[idx])
        loss.backward()
        opt.step()
    dt = time.perf_counter() - t0
    print(json.dumps({"model": name, "seconds": dt, "examples_per_second": len(x) / dt, "threads": threads}))


if __name__ == "__main__":
    main()
