# Issue 28's fourth batch (one nvidia-h200, about 4 minutes with the cold start): bash benchmarks/cand13/call2.sh
# The softmax candidate's chunked walk, more settings around the third batch's winners, and the task files' own
# constants (their BEST lines are applied by hand; only the softmax candidate comes back as a file).
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pyc
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/sweep2.txt
PYTHONUNBUFFERED=1 timeout 540 python3 benchmarks/cand11/sweep.py softmax bmm_cmp max_pool1d_more mse_more conv1d_more \
  embedding_bag index_add rows noise >> $OUT/sweep2.txt 2>&1
cp benchmarks/cand13/scale_causal_softmax_triton.py $OUT/
grep -E "BEST|##|FAILED|Error" $OUT/sweep2.txt | cut -c1-300
