python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pyc
kernel-lsp check tasks/Convolution/conv1d_triton.py --device cuda --no-cache --format json > $OUT/conv1d.json 2> $OUT/conv1d.err
timeout 200 python3 -m pytest -q -m gpu tests/test_gpu_measure.py -rA -k "warmer or fused or slower or three_runs" > $OUT/gpu-tests-test_gpu_measure.txt 2>&1
timeout 200 kernel-lsp check tasks/Loss tasks/Normalization tasks/Reduce tasks/Quantization tasks/Optimizer --device cuda --no-cache > $OUT/subset.txt 2>&1
grep -E "FAILED|passed|failed" $OUT/gpu-tests-test_gpu_measure.txt | tail -n 6; grep -E "error|warning|Checked" $OUT/subset.txt | tail -n 8; python3 -c "import json;d=json.load(open('$OUT/conv1d.json'));print([x['message'][:150] for x in d['diagnostics']])"
