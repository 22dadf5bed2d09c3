# One device call (one nvidia-h200, about 2 minutes): bash benchmarks/cand16/call.sh
# As run on 2026-12-03 the pointwise and gaussian_noise candidates were files here, beside the task files they
# replaced (`git log -- benchmarks/cand16` has both); they are the task files now.
# 1. cand16's candidates against the task files (benchmarks/cand11/sweep.py families pointwise16, index_add16,
#    noise16; each family's winner written into $OUT's copy).
# 2. Host issue time per call in a plain process (host_probe.py), against what the check reports.
# 3. `kernel-lsp check --device cuda` of the candidates and the task files they would replace, in one run.
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pyc PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/sweep.txt
timeout 240 python3 benchmarks/cand11/sweep.py pointwise16 index_add16 noise16 >> $OUT/sweep.txt 2>&1
grep -E "BEST|##|FAILED" $OUT/sweep.txt | cut -c1-250
cp tasks/Convolution/pointwise_conv2d_triton.py benchmarks/cand16/index_add_triton.py \
  tasks/Random/gaussian_noise_triton.py $OUT/
timeout 120 python3 benchmarks/cand16/host_probe.py tasks/Convolution/pointwise_conv2d_triton.py \
  tasks/LinearAlgebra/bmm_triton.py tasks/Normalization/layer_norm_triton.py \
  > $OUT/host.txt 2>&1; echo "host exit $?"
cat $OUT/host.txt | cut -c1-250
timeout 200 kernel-lsp check benchmarks/cand16/index_add_triton.py tasks/Convolution/pointwise_conv2d_triton.py \
  tasks/Index/index_add_triton.py tasks/Random/gaussian_noise_triton.py tasks/LinearAlgebra/bmm_triton.py \
  --device cuda --no-cache --timeout 180 --format json -o $OUT/check.json > $OUT/check.txt 2>&1; echo "check exit $?"
python3 benchmarks/tasks_table.py $OUT/check.json 2>&1 | tail -12 | cut -c1-300
grep -E "KL[0-9]+" $OUT/check.txt | cut -c1-300 | head -20
