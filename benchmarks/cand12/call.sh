# One device call for issue 28's second batch (one nvidia-h200, about 7 minutes with the cold start):
#   bash benchmarks/cand12/call.sh   (from the repository root, as the device tool runs it)
# Sweeps conv1d (the task's tiles and the fused-split candidate) and max_pool1d (program size) with kernel-lsp's
# timer, writes each family's fastest accurate settings into its file, copies the files to $OUT and checks them
# with `kernel-lsp check --device cuda`. A winner goes into tasks/ only if the check is clean and faster there.
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pyc
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt
timeout 330 python3 benchmarks/cand11/sweep.py conv1d conv1d_fused max_pool1d > $OUT/sweep.txt 2>&1
cp benchmarks/cand12/conv1d_fused_triton.py tasks/Convolution/conv1d_triton.py tasks/Pooling/max_pool1d_triton.py $OUT/
timeout 150 kernel-lsp check tasks/Convolution/conv1d_triton.py benchmarks/cand12/conv1d_fused_triton.py \
  tasks/Pooling/max_pool1d_triton.py --device cuda --no-cache --format json > $OUT/check.json 2> $OUT/check.err
grep -E "BEST|##|FAILED" $OUT/sweep.txt
python3 -c "
import json;d=json.load(open('$OUT/check.json'))
for f in d['files']:
    for k in f['kernels'].values():
        for s in (k.get('measurement') or {}).get('speedups', []): print(f['path'].split('/')[-1], s)
for x in d['diagnostics']: print(x['path'].split('/')[-1], x['code'], x['message'][:230])
" 2>&1 | tail -20
