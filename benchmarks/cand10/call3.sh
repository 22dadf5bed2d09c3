python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pyc
(CUDA_VISIBLE_DEVICES=1 python3 benchmarks/cand10/sweep.py conv1d > $OUT/conv1d.txt 2>&1) &
export CUDA_VISIBLE_DEVICES=0
TRITON_CACHE_DIR=/tmp/w1 TORCHINDUCTOR_CACHE_DIR=/tmp/w2 kernel-lsp check tasks/Activation/gelu_triton.py --device cuda --no-cache > /dev/null 2>&1
cold() {  # label file [env]
  export TRITON_CACHE_DIR=$(mktemp -d) TORCHINDUCTOR_CACHE_DIR=$(mktemp -d)
  s=$(date +%s%N); env $3 kernel-lsp check $2 --device cuda --no-cache --timings > /tmp/o.txt 2>&1; e=$(date +%s%N)
  echo "== $1 $2 $(( (e - s) / 1000000 )) ms" >> $OUT/cold.txt; cat /tmp/o.txt >> $OUT/cold.txt
}
S=tasks/Fusion/scale_causal_softmax_triton.py; G=tasks/Activation/gelu_triton.py; L=tasks/Normalization/layer_norm_triton.py
cold warmer $S; cold no-warmer $S KERNEL_LSP_COMPILE_WARMER=0; cold warmer $S
cold warmer $G; cold no-warmer $G KERNEL_LSP_COMPILE_WARMER=0; cold warmer $G
cold warmer $L; cold no-warmer $L KERNEL_LSP_COMPILE_WARMER=0; cold warmer $L
wait
grep -E "^==|Checked" $OUT/cold.txt; grep -E "BEST|FAILED" $OUT/conv1d.txt; grep -E "x[0-9.]+ compile" $OUT/conv1d.txt | cut -c1-150
