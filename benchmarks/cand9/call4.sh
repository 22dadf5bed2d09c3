#!/bin/bash
# Session 9, device call 4: GPU1 sweeps the multi-row causal softmax and checks it and rmsprop (fp fusion off);
# GPU0 runs tests/test_gpu.py.
set -u
OUT=${OUT:-/tmp/out}; R=/tmp/r4; mkdir -p $R
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . > $R/install.log 2>&1 || tail -5 $R/install.log
(
  export CUDA_VISIBLE_DEVICES=1
  timeout 120 python3 benchmarks/cand9/sweep.py softmax_rows > $R/sweep.txt 2>&1
  cp tasks/Fusion/scale_causal_softmax_triton.py $R/
  timeout 200 python3 -m kernel_lsp.cli check tasks/Fusion/scale_causal_softmax_triton.py tasks/Optimizer/rmsprop_triton.py --device cuda --no-cache --format json -o $R/two.json > $R/two.txt 2>&1
  python3 -m kernel_lsp.cli check tasks/Fusion/scale_causal_softmax_triton.py tasks/Optimizer/rmsprop_triton.py --device cuda --format text >> $R/two.txt 2>&1
) &
BG=$!
export CUDA_VISIBLE_DEVICES=0
timeout 380 python3 -m pytest -q -p no:cacheprovider -rA tests/test_gpu.py > $R/gpu_tests.txt 2>&1
wait $BG
tar -czf $OUT/r4.tgz -C /tmp r4
tail -6 $R/gpu_tests.txt; grep -E "^BEST|^##" $R/sweep.txt; grep -E "KL|Checked" $R/two.txt | tail -6
