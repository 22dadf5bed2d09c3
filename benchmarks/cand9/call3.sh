#!/bin/bash
# Session 9, device call 3: the tasks table (both GPUs, half the task directories each; each GPU first sweeps the
# launch constants of its half's rewritten kernels and keeps the best), the escaped-work GPU test alone, a cold
# check of softmax with Triton's and Inductor's caches as an earlier check of the same file left them, and tune
# on three slow tasks.
set -u
OUT=${OUT:-/tmp/out}; R=/tmp/r3; mkdir -p $R
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . > $R/install.log 2>&1 || tail -5 $R/install.log
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > $R/smi.txt
A="tasks/Activation tasks/Fusion tasks/Index tasks/LinearAlgebra tasks/Loss tasks/Math tasks/MatrixMultiply"
B="tasks/Convolution tasks/Normalization tasks/Optimizer tasks/Pooling tasks/Quantization tasks/Random tasks/Reduce tasks/SpatialOps"
(
  export CUDA_VISIBLE_DEVICES=1
  timeout 200 python3 benchmarks/cand9/sweep.py partB > $R/sweep_b.txt 2>&1
  timeout 400 python3 -m kernel_lsp.cli check $B --device cuda --no-cache --timeout 400 --format json -o $R/tasks_b.json > $R/tasks_b.txt 2>&1
) &
BG=$!
export CUDA_VISIBLE_DEVICES=0
timeout 150 python3 benchmarks/cand9/sweep.py partA > $R/sweep_a.txt 2>&1
timeout 400 python3 -m kernel_lsp.cli check $A --device cuda --no-cache --timeout 400 --format json -o $R/tasks_a.json > $R/tasks_a.txt 2>&1
wait $BG
timeout 60 python3 -m pytest -q -p no:cacheprovider -rA tests/test_gpu_measure.py -k unsynchronized > $R/gpu_test.txt 2>&1
(
  unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pyc
  TRITON_CACHE_DIR=$(mktemp -d) TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) python3 -m kernel_lsp.cli check tasks/Activation/silu_triton.py --device cuda --no-cache >/dev/null 2>&1
  export TRITON_CACHE_DIR=$(mktemp -d) TORCHINDUCTOR_CACHE_DIR=$(mktemp -d)
  f=tasks/Fusion/scale_causal_softmax_triton.py
  for rep in first again; do
    s0=$(date +%s.%N)
    python3 -m kernel_lsp.cli check $f --device cuda --no-cache --timings > /tmp/cold.txt 2>/tmp/cold.err
    s1=$(date +%s.%N)
    echo "cold[pyc, $rep] $f $(python3 -c "print(round($s1 - $s0, 2))") s: $(tail -1 /tmp/cold.txt | cut -c1-150)" >> $R/cold.txt
    cat /tmp/cold.err >> $R/cold.txt
  done
)
python3 - <<'PY' > $R/merged_slow.txt
import json
docs = [json.load(open(f"/tmp/r3/tasks_{p}.json")) for p in "ab"]
for d in docs:
    for f in d["files"]:
        m = next((k["measurement"] for k in f["kernels"].values() if k.get("measurement")), None)
        s = next((s for s in (m or {}).get("speedups", []) if s["against"] == "torch.compile"), None)
        print(f["path"].split("tasks/")[1], s and round(s["ratio"], 3), s and round(s["high"], 3))
PY
timeout 200 python3 benchmarks/tune_tasks.py $R/tasks_b.json --out $R/tune --candidates 8 --rounds 1 --only batch_norm_eval row_sum max_pool1d > $R/tune.txt 2>&1
tar -czf $R/tasks_after.tgz tasks
tar -czf $OUT/r3.tgz -C /tmp r3
grep -E "^BEST|^##" $R/sweep_a.txt $R/sweep_b.txt; tail -2 $R/tasks_a.txt $R/tasks_b.txt; tail -3 $R/gpu_test.txt; grep "^cold" $R/cold.txt; tail -8 $R/tune.txt
