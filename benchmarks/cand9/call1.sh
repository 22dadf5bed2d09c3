#!/bin/bash
# Session 9, device call 1: GPU1 sweeps and checks the six rewritten tasks; GPU0 runs the new GPU tests and the
# cold single-file checks with the baseline thread off / at verify / at load.
set -u
OUT=${OUT:-/tmp/out}; R=/tmp/r; mkdir -p $R
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . > $R/install.log 2>&1 || tail -5 $R/install.log
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > $R/smi.txt
SIX="tasks/Random/uniform_init_triton.py tasks/Random/gaussian_noise_triton.py tasks/Random/dropout_triton.py tasks/Fusion/scale_causal_softmax_triton.py tasks/Normalization/batch_norm_eval_triton.py tasks/SpatialOps/flip_last_triton.py"
(
  export CUDA_VISIBLE_DEVICES=1
  timeout 250 python3 benchmarks/cand9/sweep.py new > $R/sweep.txt 2>&1
  timeout 200 python3 -m kernel_lsp.cli check $SIX --device cuda --no-cache --format json -o $R/six.json > $R/six.txt 2>&1
  python3 -m kernel_lsp.cli check $SIX --device cuda --format text >> $R/six.txt 2>&1
) &
BG=$!
export CUDA_VISIBLE_DEVICES=0
python3 -c "from kernel_lsp.engine.ceilings import load_or_measure; import json; c, hit = load_or_measure(); print(json.dumps(c.to_dict()))" > $R/ceilings.json 2>&1
timeout 200 python3 -m pytest -q -p no:cacheprovider -rA tests/test_gpu_measure.py -k "writes_above or baseline" > $R/gpu_tests.txt 2>&1
# cold checks (with .pyc, as a pip-installed torch has them)
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pyc
TRITON_CACHE_DIR=$(mktemp -d) TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) python3 -m kernel_lsp.cli check tasks/Activation/silu_triton.py --device cuda --no-cache >/dev/null 2>&1
for mode in off load verify; do
  for f in tasks/Activation/gelu_triton.py tasks/Normalization/layer_norm_triton.py tasks/Fusion/scale_causal_softmax_triton.py; do
    export TRITON_CACHE_DIR=$(mktemp -d) TORCHINDUCTOR_CACHE_DIR=$(mktemp -d)
    s0=$(date +%s.%N)
    KERNEL_LSP_BASELINE_THREAD=$mode KERNEL_LSP_PROFILE=/tmp/prof/$mode-$(basename $f .py) python3 -m kernel_lsp.cli check $f --device cuda --no-cache --timings > /tmp/cold.txt 2>/tmp/cold.err
    s1=$(date +%s.%N)
    echo "cold[$mode] $f $(python3 -c "print(round($s1 - $s0, 2))") s: $(tail -1 /tmp/cold.txt | cut -c1-150)" >> $R/cold.txt
    cat /tmp/cold.err >> $R/cold.txt
    unset TRITON_CACHE_DIR TORCHINDUCTOR_CACHE_DIR
  done
done
[ -d /tmp/prof ] && tar -czf $R/profiles.tgz -C /tmp prof
wait $BG
tar -czf $OUT/r.tgz -C /tmp r
cat $R/gpu_tests.txt | tail -5; cat $R/cold.txt | grep "^cold"; grep -E "^BEST|^##" $R/sweep.txt; tail -3 $R/six.txt
