#!/usr/bin/python3
"""Writes testdata/optim/optim.json: PyTorch 1.13 optimizer trajectories on
fixed gradient sequences (so the optimizer math is tested without autograd)
and learning-rate schedules. Run with Debian's python3 (tools/golden/setup.sh)."""
import json
import math
import os

import torch

torch.manual_seed(0)
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

CASES = [
    ("sgd", torch.optim.SGD, dict(lr=0.1)),
    ("sgd", torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
    ("sgd", torch.optim.SGD, dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("sgd", torch.optim.SGD, dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    ("adam", torch.optim.Adam, dict(lr=0.01)),
    ("adam", torch.optim.Adam, dict(lr=0.01, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.1)),
    ("adam", torch.optim.Adam, dict(lr=0.01, amsgrad=True)),
    ("adamw", torch.optim.AdamW, dict(lr=0.01)),
    ("adamw", torch.optim.AdamW, dict(lr=0.02, weight_decay=0.1, amsgrad=True)),
    ("rmsprop", torch.optim.RMSprop, dict(lr=0.01)),
    ("rmsprop", torch.optim.RMSprop, dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.01)),
    ("adagrad", torch.optim.Adagrad, dict(lr=0.1)),
    ("adagrad", torch.optim.Adagrad, dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.5)),
]


def flat(opts):
    out = {}
    for k, v in opts.items():
        if k == "betas":
            out["betas0"], out["betas1"] = v
        else:
            out[k] = float(v)
    return out


def main():
    cases = []
    for name, cls, opts in CASES:
        g = torch.Generator().manual_seed(len(cases))
        p0 = torch.randn(3, 4, generator=g, dtype=torch.float64)
        grads = [torch.randn(3, 4, generator=g, dtype=torch.float64) for _ in range(6)]
        p = p0.clone().requires_grad_(True)
        opt = cls([p], **opts)
        traj = []
        for gr in grads:
            p.grad = gr.clone()
            opt.step()
            traj.append(p.detach().flatten().tolist())
        cases.append({"optimizer": name, "options": flat(opts), "p0": p0.flatten().tolist(),
                      "grads": [x.flatten().tolist() for x in grads], "params": traj})
    scheds = []
    def sched_case(name, make, n, args):
        p = torch.zeros(1, requires_grad=True)
        opt = torch.optim.SGD([p], lr=0.1, momentum=0.9)
        s = make(opt)
        lrs, moms = [], []
        for _ in range(n):
            lrs.append(opt.param_groups[0]["lr"])
            moms.append(opt.param_groups[0]["momentum"])
            opt.step()
            s.step()
        scheds.append({"scheduler": name, "args": args, "lr": lrs, "momentum": moms})
    sched_case("step", lambda o: torch.optim.lr_scheduler.StepLR(o, 3, 0.5), 10, {"step_size": 3, "gamma": 0.5})
    sched_case("cosine", lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, 8, 0.001), 9, {"t_max": 8, "eta_min": 0.001})
    sched_case("onecycle", lambda o: torch.optim.lr_scheduler.OneCycleLR(o, 1.0, total_steps=20), 20, {"max_lr": 1.0, "total": 20})
    doc = {"torch": torch.__version__, "optimizers": cases, "schedulers": scheds}
    with open(os.path.join(root, "testdata", "optim", "optim.json"), "w") as f:
        json.dump(doc, f, indent=0)
        f.write("\n")


if __name__ == "__main__":
    main()
