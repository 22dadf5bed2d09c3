python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pyc
timeout 150 python3 benchmarks/cand10/sweep.py split > $OUT/split.txt 2>&1
for f in conv1d_triton conv1d_split_triton; do
  timeout 60 kernel-lsp check benchmarks/cand10/$f.py --device cuda --no-cache > $OUT/check-$f.txt 2>&1
done
cp benchmarks/cand10/conv1d_split_triton.py $OUT/
timeout 380 python3 -m pytest -q -m gpu tests/test_gpu.py -rA > $OUT/gpu-tests-test_gpu.txt 2>&1
grep -E "BEST|x[0-9.]+ compile" $OUT/split.txt | cut -c1-160; tail -n 3 $OUT/check-*.txt; grep -E "FAILED|passed|failed" $OUT/gpu-tests-test_gpu.txt | tail -n 5
