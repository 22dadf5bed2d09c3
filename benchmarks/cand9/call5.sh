#!/bin/bash
# Session 9, device call 5: batch_norm_eval (flat kernel with constexpr sizes) on GPU1, dequant_int8_rowwise on GPU0:
# sweep, keep the best, check and time.
set -u
OUT=${OUT:-/tmp/out}; R=/tmp/r5; mkdir -p $R
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . > $R/install.log 2>&1 || tail -5 $R/install.log
(
  export CUDA_VISIBLE_DEVICES=1
  timeout 90 python3 benchmarks/cand9/sweep.py bn > $R/sweep_bn.txt 2>&1
  timeout 100 python3 -m kernel_lsp.cli check tasks/Normalization/batch_norm_eval_triton.py --device cuda --no-cache --format json -o $R/bn.json > $R/bn.txt 2>&1
) &
BG=$!
export CUDA_VISIBLE_DEVICES=0
timeout 90 python3 benchmarks/cand9/sweep.py dq > $R/sweep_dq.txt 2>&1
timeout 100 python3 -m kernel_lsp.cli check tasks/Quantization/dequant_int8_rowwise_triton.py --device cuda --no-cache --format json -o $R/dq.json > $R/dq.txt 2>&1
wait $BG
cp tasks/Normalization/batch_norm_eval_triton.py tasks/Quantization/dequant_int8_rowwise_triton.py $R/
tar -czf $OUT/r5.tgz -C /tmp r5
grep -E "^BEST|^##" $R/sweep_bn.txt $R/sweep_dq.txt; tail -n 2 $R/bn.txt; tail -n 2 $R/dq.txt
