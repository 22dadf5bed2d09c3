#!/usr/bin/env bash
# One device call: install kernel-lsp without dependencies (the GPU image has torch and triton), time every
# task against eager, run the GPU-marked tests, and verify tasks/ on the GPU. Results land in $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-build-isolation -e . >"$OUT/install.log" 2>&1 || tail -5 "$OUT/install.log"
python3 -c "import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name())"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
timeout ${BENCH_TIMEOUT:-230} python3 benchmarks/gpu_tasks.py --json "$OUT/bench.json" ${BENCH_ONLY:-} 2>"$OUT/bench.err" | tee "$OUT/bench.md"
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py >"$OUT/gpu_tests.txt" 2>&1; tail -4 "$OUT/gpu_tests.txt"
timeout ${CHECK_TIMEOUT:-220} python3 -m kernel_lsp.cli check tasks --device cuda --no-cache --jobs 6 --timeout 150 --format json \
  -o "$OUT/gpu_check.json"; echo "check exit $?"
python3 - "$OUT/gpu_check.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("no check output:", e); sys.exit(0)
print(d["stats"])
for f in d["files"]:
    bad = [x for x in f["findings"] if x["severity"] in ("error", "warning")]
    if bad:
        print(f["path"].split("tasks/")[-1], [(x["code"], x["message"][:160]) for x in bad])
PY
