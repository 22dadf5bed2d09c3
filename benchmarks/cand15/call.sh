# One device call (one nvidia-h200, about 8 minutes): bash benchmarks/cand15/call.sh
# 1. The Triton code torch.compile generates for tasks it ties or beats (inductor_code.py -> $OUT/inductor.txt).
# 2. residual_layernorm_relu with streaming loads and stores (benchmarks/cand11/sweep.py family residual15).
# 3. The GPU tests not yet run on an H200 (do_bench agreement, tune, cold check, eight checks at once).
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pyc PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/sweep.txt
timeout 100 python3 benchmarks/cand11/sweep.py residual15 >> $OUT/sweep.txt 2>&1
grep -E "BEST|##|FAILED" $OUT/sweep.txt | cut -c1-250
cp benchmarks/cand15/residual_layernorm_relu_triton.py $OUT/
timeout 120 python3 benchmarks/cand15/inductor_code.py $OUT/inductor.txt residual_layernorm_relu outer adam \
  sgd_momentum row_amax gemv index_select_rows leaky_relu > $OUT/inductor.log 2>&1; echo "inductor exit $?"
grep -c "@triton.jit" $OUT/inductor.txt
timeout 300 python3 -m pytest -q -p no:cacheprovider -rA tests/test_gpu_measure.py \
  -k "do_bench or tune or cold or eight" > $OUT/gpu_tests.txt 2>&1; echo "tests exit $?"
tail -15 $OUT/gpu_tests.txt
