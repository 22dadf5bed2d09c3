# One device call (one nvidia-h200, about 9 minutes with the cold start): bash benchmarks/cand13/call.sh
# Re-sweeps the task files issue 28 changed around their settings (benchmarks/cand11/sweep.py: kernel-lsp's timer,
# cold L2, and a plain loop over four input copies, whose time picks the winner within each family's error bound),
# writes each winner into its file (on the device's copy; bring the changed files back with the results), then
# checks and times every task with kernel-lsp (docs/benchmarks.md's command) and prints the table.
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pyc PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/sweep.txt
timeout 100 python3 benchmarks/cand11/sweep.py softmax embedding_bag max_pool1d mse_loss >> $OUT/sweep.txt 2>&1
grep -E "BEST|##|FAILED" $OUT/sweep.txt | cut -c1-250
cp tasks/Fusion/scale_causal_softmax_triton.py tasks/Index/embedding_bag_sum_triton.py \
  tasks/Pooling/max_pool1d_triton.py tasks/Loss/mse_loss_triton.py $OUT/
timeout 470 kernel-lsp check tasks --device cuda --no-cache --timeout 400 --format json -o $OUT/tasks.json \
  > $OUT/tasks.log 2>&1; echo "check exit $?"
python3 benchmarks/tasks_table.py $OUT/tasks.json | tail -1
