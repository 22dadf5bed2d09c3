#!/bin/bash
# Session 9, device call 6: launch constants of four tasks near parity (residual_layernorm_relu, index_add on GPU0;
# adam, sgd_momentum on GPU1): sweep, keep the fastest, check and time with kernel-lsp.
set -u
OUT=${OUT:-/tmp/out}; R=/tmp/r6; mkdir -p $R
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . > $R/install.log 2>&1 || tail -5 $R/install.log
(
  export CUDA_VISIBLE_DEVICES=1
  timeout 70 python3 benchmarks/cand9/sweep.py p6b > $R/sweep_b.txt 2>&1
  timeout 80 python3 -m kernel_lsp.cli check tasks/Optimizer/adam_triton.py tasks/Optimizer/sgd_momentum_triton.py --device cuda --no-cache --format json -o $R/b.json > /dev/null 2>&1
) &
BG=$!
export CUDA_VISIBLE_DEVICES=0
timeout 70 python3 benchmarks/cand9/sweep.py p6a > $R/sweep_a.txt 2>&1
timeout 80 python3 -m kernel_lsp.cli check tasks/Fusion/residual_layernorm_relu_triton.py tasks/Index/index_add_triton.py --device cuda --no-cache --format json -o $R/a.json > /dev/null 2>&1
wait $BG
mkdir -p $R/files; cp tasks/Optimizer/adam_triton.py tasks/Optimizer/sgd_momentum_triton.py tasks/Fusion/residual_layernorm_relu_triton.py tasks/Index/index_add_triton.py $R/files/
tar -czf $OUT/r6.tgz -C /tmp r6
grep -hE "^BEST|^##" $R/sweep_a.txt $R/sweep_b.txt
python3 -c "
import json
for f in ('$R/a.json', '$R/b.json'):
    try: d = json.load(open(f))
    except Exception as e: print(f, e); continue
    for fl in d['files']:
        print(fl['path'].split('tasks/')[1], [(x['code'], x['message'][:90]) for x in fl['findings']])
"
