# Issue 28, after the tasks table (one nvidia-h200, about 4 minutes with the cold start): bash benchmarks/cand13/call4.sh
# pointwise_conv2d with the weight and bias rounded in the kernel (RAW: no conversion launches, the wrapper's host
# time under the kernel's) against the wrapper's conversions, and embedding_bag_sum's smaller programs, in place;
# then both files checked and timed by kernel-lsp. RAW lost (benchmarks/cand13/README.md) and was taken out of the
# task file, with its sweep family: this script is the record of the call as it ran.
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pyc PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/sweep4.txt
timeout 100 python3 benchmarks/cand11/sweep.py pointwise_raw embedding_bag_small >> $OUT/sweep4.txt 2>&1
grep -E "BEST|##|FAILED" $OUT/sweep4.txt | cut -c1-250
cp tasks/Convolution/pointwise_conv2d_triton.py tasks/Index/embedding_bag_sum_triton.py $OUT/
timeout 200 kernel-lsp check tasks/Convolution/pointwise_conv2d_triton.py tasks/Index/embedding_bag_sum_triton.py \
  --device cuda --no-cache --format json -o $OUT/check4.json > $OUT/check4.log 2>&1; echo "check exit $?"
python3 benchmarks/tasks_table.py $OUT/check4.json 2>&1 | grep -E "^\| (Conv|Index)"
python3 -c "
import json; d = json.load(open('$OUT/check4.json'))
for x in d['diagnostics']: print(x['path'].split('/')[-1], x['code'], x['message'][:200])"
