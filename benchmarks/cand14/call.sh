# One device call (one nvidia-h200, about 6 minutes with the cold start): bash benchmarks/cand14/call.sh
# Times benchmarks/cand14's candidates (benchmarks/cand11/sweep.py: kernel-lsp's timer, cold L2, and a plain loop
# over four input copies, whose time picks the winner within each family's error bound; `apply` writes it into the
# device's copy of the candidate) and checks each winner with kernel-lsp on the GPU. A winner moved into tasks/ is
# then timed by the tasks table (docs/benchmarks.md's command), in a call of its own.
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pyc PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/sweep.txt
timeout 150 python3 benchmarks/cand11/sweep.py conv1d_tma residual >> $OUT/sweep.txt 2>&1
grep -E "BEST|##|FAILED" $OUT/sweep.txt | cut -c1-250
cp benchmarks/cand14/*_triton.py $OUT/
timeout 120 kernel-lsp check benchmarks/cand14 --device cuda --no-cache --format json -o $OUT/cand14.json \
  > $OUT/cand14.log 2>&1; echo "cand14 check exit $?"; tail -3 $OUT/cand14.log
