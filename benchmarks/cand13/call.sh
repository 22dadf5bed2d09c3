# One device call for issue 28's third batch (one nvidia-h200, about 9 minutes with the cold start):
#   bash benchmarks/cand13/call.sh   (from the repository root, as the device tool runs it)
# Sweeps each family with kernel-lsp's timer (cold L2) and a plain loop over 4 input copies (back to back, what the
# verdicts use; the winner is the fastest back to back within the family's error bound), writes each winner into
# its file and copies the files to $OUT. The winners are then checked with `kernel-lsp check --device cuda` as part
# of the next tasks-table run.
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pyc
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/sweep.txt
PYTHONUNBUFFERED=1 timeout 540 python3 benchmarks/cand11/sweep.py softmax bmm_tma pointwise_dev conv1d_fused \
  conv1d max_pool1d_align mse_loss >> $OUT/sweep.txt 2>&1
cp benchmarks/cand12/conv1d_fused_triton.py tasks/Convolution/conv1d_triton.py benchmarks/cand13/*_triton.py $OUT/ 2>/dev/null
grep -E "BEST|##|FAILED|Error" $OUT/sweep.txt | cut -c1-300
