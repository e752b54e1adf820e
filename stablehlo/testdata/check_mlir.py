# Reference check of exported StableHLO with the real MLIR parser and the
# StableHLO/CHLO verifiers bundled in jaxlib (test tooling only, never used
# by the product). Usage:
#   python3 -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install jax jaxlib
#   mkdir /tmp/dump && STABLEHLO_DUMP=/tmp/dump go test ./stablehlo -run EveryPrimitive
#   /tmp/jaxenv/bin/python stablehlo/testdata/check_mlir.py /tmp/dump/*.mlir stablehlo/testdata/*.mlir
import sys
from jax._src.interpreters import mlir as jmlir
from jaxlib.mlir import ir
ctx = jmlir.make_ir_context()
ok = True
for p in sys.argv[1:]:
    try:
        with ctx:
            m = ir.Module.parse(open(p).read())
            if not m.operation.verify():
                print(p, "VERIFY FAILED"); ok=False
            else:
                print(p, "ok")
    except Exception as e:
        ok = False
        print(p, "ERROR", str(e)[:2000])
sys.exit(0 if ok else 1)
