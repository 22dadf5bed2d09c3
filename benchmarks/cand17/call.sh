# One device call (one nvidia-h200, about 4 minutes): bash benchmarks/cand17/call.sh
# 1. conv1d_onedot_triton.py's settings against the task's conv1d (benchmarks/cand11/sweep.py family conv1d17; the
#    winner written into $OUT's copy).
# 2. `kernel-lsp check --device cuda` of the candidate (at the winner) and the task file, in one run.
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pyc PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/sweep.txt
timeout 300 python3 benchmarks/cand11/sweep.py conv1d17 >> $OUT/sweep.txt 2>&1
grep -E "##|BEST|FAILED|conv1d" $OUT/sweep.txt | cut -c1-250
cp benchmarks/cand17/conv1d_onedot_triton.py $OUT/
timeout 240 kernel-lsp check benchmarks/cand17/conv1d_onedot_triton.py tasks/Convolution/conv1d_triton.py \
  --device cuda --no-cache --timeout 220 --format json -o $OUT/check.json > $OUT/check.txt 2>&1; echo "check exit $?"
python3 benchmarks/tasks_table.py $OUT/check.json 2>&1 | tail -6 | cut -c1-300
grep -E "KL[0-9]+" $OUT/check.txt | cut -c1-300 | head -20
