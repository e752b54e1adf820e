#!/usr/bin/python3
"""Regenerates testdata/golden/*.json.gz from the cases_*.py modules.

Usage: /usr/bin/python3 tools/golden/gen.py (Debian's interpreter, which has python3-torch) [group ...]
Needs Debian's python3-torch (1.13) and python3-numpy: tools/golden/setup.sh
installs them.
"""
import glob
import importlib
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import golden  # noqa: E402

torch.set_num_threads(1)
torch.use_deterministic_algorithms(False)


def main():
    want = set(sys.argv[1:])
    root = os.path.abspath(os.path.join(here, "..", ".."))
    for path in sorted(glob.glob(os.path.join(here, "cases_*.py"))):
        group = os.path.basename(path)[len("cases_"):-3]
        if want and group not in want:
            continue
        importlib.import_module("cases_" + group)
        n = golden.write(group, os.path.join(root, "testdata", "golden", group + ".json.gz"))
        print(f"{group}: {n} cases")


if __name__ == "__main__":
    main()
