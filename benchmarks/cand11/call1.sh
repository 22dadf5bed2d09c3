python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pyc
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt
timeout 420 python3 benchmarks/cand11/sweep.py depthwise_split pointwise bmm > $OUT/sweep.txt 2>&1
cp benchmarks/cand11/*_triton.py tasks/Convolution/depthwise_conv2d_triton.py tasks/Convolution/pointwise_conv2d_triton.py tasks/LinearAlgebra/bmm_triton.py $OUT/
timeout 150 kernel-lsp check tasks/Convolution/depthwise_conv2d_triton.py tasks/Convolution/pointwise_conv2d_triton.py benchmarks/cand11/pointwise_tma_triton.py tasks/LinearAlgebra/bmm_triton.py --device cuda --no-cache --format json > $OUT/check.json 2> $OUT/check.err
grep -E "BEST|##|FAILED" $OUT/sweep.txt
python3 -c "
import json;d=json.load(open('$OUT/check.json'))
for x in d['diagnostics']: print(x['path'].split('/')[-1], x['code'], x['message'][:230])
" 2>&1 | tail -20
