# Issue 28's tasks table after the third and fourth batches (one nvidia-h200, about 9 minutes with the cold start):
#   bash benchmarks/cand13/call3.sh
# First the adopted softmax and embedding-bag settings swept in place (their files come back), and mse_loss's one-
# and two-launch forms side by side; then `kernel-lsp check tasks --device cuda` (docs/benchmarks.md's command), then
# as the time left allows, three GPU tests of the measure stage (the refill after the timing loop had not run on a GPU).
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pyc PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/sweep3.txt
t0=$(date +%s)
timeout 80 python3 benchmarks/cand11/sweep.py softmax_task embedding_bag_more mse_cmp >> $OUT/sweep3.txt 2>&1
grep -E "BEST|##|FAILED" $OUT/sweep3.txt | cut -c1-250
cp tasks/Fusion/scale_causal_softmax_triton.py tasks/Index/embedding_bag_sum_triton.py $OUT/
start=$(date +%s)
timeout 470 kernel-lsp check tasks --device cuda --no-cache --timeout 400 --format json -o $OUT/tasks.json \
  > $OUT/tasks.log 2>&1; echo "check exit $? in $(( $(date +%s) - start )) s"
tail -3 $OUT/tasks.log
left=$(( 575 - $(date +%s) + t0 )); echo "$left s left for the tests"
[ $left -gt 40 ] && timeout $left python3 -m pytest -q -p no:cacheprovider -rA tests/test_gpu_measure.py \
  -k "cached_result or stream_of_writes or side_stream" > $OUT/gpu_tests.txt 2>&1; echo "tests exit $?"
tail -8 $OUT/gpu_tests.txt
