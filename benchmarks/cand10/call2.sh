python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pyc
(CUDA_VISIBLE_DEVICES=1 python3 benchmarks/cand10/sweep.py conv1d > $OUT/conv1d.txt 2>&1) &
export CUDA_VISIBLE_DEVICES=0
F=tasks/Fusion/scale_causal_softmax_triton.py
TRITON_CACHE_DIR=/tmp/w1 TORCHINDUCTOR_CACHE_DIR=/tmp/w2 kernel-lsp check tasks/Activation/gelu_triton.py --device cuda --no-cache > /dev/null 2>&1
for i in 1 2; do
  export TRITON_CACHE_DIR=$(mktemp -d) TORCHINDUCTOR_CACHE_DIR=$(mktemp -d)
  if [ $i = 2 ]; then export KERNEL_LSP_PROFILE=$OUT/prof; fi
  s=$(date +%s.%N); kernel-lsp check $F --device cuda --no-cache --timings > $OUT/cold$i.txt 2>&1; e=$(date +%s.%N)
  echo "run $i: $(echo "$e - $s" | bc) s" | tee -a $OUT/cold$i.txt
done
unset KERNEL_LSP_PROFILE
python3 -c "
import pstats,glob
for f in glob.glob('$OUT/prof/*.prof'):
    s=pstats.Stats(f); s.sort_stats('cumulative').print_stats(90); s.sort_stats('tottime').print_stats(40)
" > $OUT/prof.txt 2>&1
wait
tail -5 $OUT/cold1.txt $OUT/cold2.txt; grep -E "BEST|##|tf32|ieee" $OUT/conv1d.txt | tail -15
