#!/bin/bash
# Session 9, device call 2: cold single-file checks alone on the machine (with the timing's precision stop), then
# GPU1 sweeps the rewritten row kernels and checks the changed tasks while GPU0 runs tests/test_gpu_measure.py.
set -u
OUT=${OUT:-/tmp/out}; R=/tmp/r2; mkdir -p $R
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . > $R/install.log 2>&1 || tail -5 $R/install.log
export CUDA_VISIBLE_DEVICES=0
python3 -c "from kernel_lsp.engine.ceilings import load_or_measure; load_or_measure()" > /dev/null 2>&1
(
  unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pyc
  TRITON_CACHE_DIR=$(mktemp -d) TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) python3 -m kernel_lsp.cli check tasks/Activation/silu_triton.py --device cuda --no-cache >/dev/null 2>&1
  for f in tasks/Activation/gelu_triton.py tasks/Normalization/layer_norm_triton.py tasks/Fusion/scale_causal_softmax_triton.py; do
    for rep in 1 2; do
      export TRITON_CACHE_DIR=$(mktemp -d) TORCHINDUCTOR_CACHE_DIR=$(mktemp -d)
      s0=$(date +%s.%N)
      python3 -m kernel_lsp.cli check $f --device cuda --no-cache --timings > /tmp/cold.txt 2>/tmp/cold.err
      s1=$(date +%s.%N)
      echo "cold[pyc, first, run $rep] $f $(python3 -c "print(round($s1 - $s0, 2))") s: $(tail -1 /tmp/cold.txt | cut -c1-150)" >> $R/cold.txt
      cat /tmp/cold.err >> $R/cold.txt
      unset TRITON_CACHE_DIR TORCHINDUCTOR_CACHE_DIR
    done
  done
)
CHANGED="tasks/Normalization/layer_norm_triton.py tasks/Loss/cross_entropy_triton.py tasks/Convolution/depthwise_conv2d_triton.py tasks/Fusion/scale_causal_softmax_triton.py tasks/Random/uniform_init_triton.py tasks/Random/dropout_triton.py tasks/SpatialOps/flip_last_triton.py tasks/Random/gaussian_noise_triton.py"
(
  export CUDA_VISIBLE_DEVICES=1
  timeout 200 python3 benchmarks/cand9/sweep.py new2 > $R/sweep.txt 2>&1
  timeout 150 python3 -m kernel_lsp.cli check $CHANGED --device cuda --no-cache --format json -o $R/changed.json > $R/changed.txt 2>&1
  python3 -m kernel_lsp.cli check $CHANGED --device cuda --format text >> $R/changed.txt 2>&1
) &
BG=$!
timeout 330 python3 -m pytest -q -p no:cacheprovider -rA tests/test_gpu_measure.py > $R/gpu_tests.txt 2>&1
wait $BG
tar -czf $OUT/r2.tgz -C /tmp r2
tail -14 $R/gpu_tests.txt; grep "^cold" $R/cold.txt; grep -E "^BEST|^##" $R/sweep.txt; grep -E "KL4|Checked" $R/changed.txt | tail -12
