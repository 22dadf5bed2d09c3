# One device call (one nvidia-h200, about 9 minutes): bash benchmarks/cand15/call2.sh
# 1. conv1d with x tiles cached in L1 and the taps innermost; residual_layernorm_relu in torch.compile's two-pass
#    form (benchmarks/cand11/sweep.py families conv1d_l1, residual_twopass; winners written into $OUT's copies).
# 2. The two GPU tests not yet run on an H200 (do_bench agreement, eight checks at once).
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pyc PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/sweep.txt
timeout 220 python3 benchmarks/cand11/sweep.py conv1d_l1 residual_twopass >> $OUT/sweep.txt 2>&1
grep -E "BEST|##|FAILED" $OUT/sweep.txt | cut -c1-250
cp benchmarks/cand15/conv1d_l1_triton.py benchmarks/cand15/residual_twopass_triton.py $OUT/
timeout 300 python3 -m pytest -q -p no:cacheprovider -rA tests/test_gpu_measure.py \
  -k "do_bench or eight" > $OUT/gpu_tests.txt 2>&1; echo "tests exit $?"
tail -15 $OUT/gpu_tests.txt
