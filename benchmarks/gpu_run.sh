#!/usr/bin/env bash
# One device call (docs/benchmarks.md): install kernel-lsp without dependencies (the GPU image has torch, triton,
# matplotlib and nvidia-ml-py), then, on GPU 0, the GPU-marked tests and the save->diagnostic latency, while GPU 1
# (when there is one) checks and times every task of tasks/ with kernel-lsp itself. Everything lands in $OUT.
#   GPU_TESTS=0 skips the tests, GPU_LATENCY=0 the latency, GPU_TASKS=0 the tasks; VERIFY_LATENCY=1 adds the LSP
#   save -> verdict benchmark on the GPU (needs the .whl/ wheels below); TASKS_DIR picks a subfolder
#   (or a space-separated list of files); GPU_TEST_K selects tests by pytest -k, GPU_TEST_FILES the test files
#   (both by default; tests/test_gpu.py alone takes about 320 s); SMOKE_FILES, a fresh check of those files first;
#   WIRE_COST=1, benchmarks/wire_cost.py (the player's wire, device arenas against host memory); COLD_CHECK=1 times a fresh
#   `check FILE --device cuda` per file of COLD_FILES (issue 13). With one GPU the tasks run first,
#   alone (timings taken beside the tests would be disturbed), then the tests and the latency.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
# The device image has no pygls (nor lsprotocol, cattrs, watchdog): `kernel-lsp serve`, and so
# benchmarks/verify_latency.py, need them. Carry them as wheels in .whl/ (run's `carry: [".whl"]`; fetched here
# with the device README's `pip download --python-version 3.12 ...` line).
if [ -d .whl ]; then python3 -m pip install -q --no-deps --no-index .whl/*.whl >>"$OUT/install.log" 2>&1; fi
python3 -m pip install -q --no-deps --no-build-isolation -e . >>"$OUT/install.log" 2>&1 || tail -5 "$OUT/install.log"
python3 -c "import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.device_count(), torch.cuda.get_device_name())"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu,driver_version --format=csv,noheader
ngpu=$(nvidia-smi -L | wc -l)
tasks_gpu=$(( ngpu > 1 ? 1 : 0 ))
if [ "${GPU_TASKS:-1}" = 1 ]; then
  # The tasks run in their own session so they outlive this call if it ends first; the next call collects them.
  # shellcheck disable=SC2086
  CUDA_VISIBLE_DEVICES=$tasks_gpu setsid nohup timeout ${TASKS_TIMEOUT:-1500} python3 -m kernel_lsp.cli check \
    ${TASKS_DIR:-tasks} --device cuda --no-cache --timeout 400 --format json -o /tmp/tasks.json \
    --report /tmp/report >/tmp/tasks.log 2>&1 &
  echo "tasks started on GPU $tasks_gpu"
  if [ "$ngpu" = 1 ]; then
    t0=$(date +%s.%N); wait $!; rc=$?; t1=$(date +%s.%N)
    echo "tasks exit $rc seconds=$(python3 -c "print(round($t1 - $t0, 1))")" | tee "$OUT/tasks_wall.txt"
  fi
fi
export CUDA_VISIBLE_DEVICES=0
python3 -c "from kernel_lsp.checker.measure.ceilings import load_or_measure; import json; c, hit = load_or_measure(); print(json.dumps(c.to_dict()))" \
  | tee "$OUT/ceilings.json"
if [ "${WIRE_COST:-0}" = 1 ]; then
  # What a call's crossing to the player costs, through device arenas and through host memory.
  timeout 120 python3 benchmarks/wire_cost.py --json "$OUT/wire-cost.json" >/dev/null 2>"$OUT/wire-cost.err"
  echo "wire_cost exit $?"; cat "$OUT/wire-cost.json" 2>/dev/null | head -40; tail -5 "$OUT/wire-cost.err"
fi
if [ -n "${SMOKE_FILES:-}" ]; then
  # A first look before the tests: a fresh check of a few files on the GPU, with where its time went (SMOKE_PROFILE=1:
  # a cProfile of each worker job too, in $OUT/smoke-profiles.tgz).
  # shellcheck disable=SC2086
  ${SMOKE_PROFILE:+env KERNEL_LSP_PROFILE=/tmp/smoke-prof} timeout ${SMOKE_TIMEOUT:-150} python3 -m kernel_lsp.cli check \
    $SMOKE_FILES --device cuda --no-cache --timings >"$OUT/smoke.txt" 2>&1; echo "smoke exit $?"; tail -40 "$OUT/smoke.txt"
  [ -d /tmp/smoke-prof ] && tar -czf "$OUT/smoke-profiles.tgz" -C /tmp smoke-prof
fi
if [ "${GPU_TESTS:-1}" = 1 ]; then
  timeout ${TESTS_TIMEOUT:-330} python3 -m pytest -v --durations=15 -p no:cacheprovider -rA ${GPU_TEST_K:+-k "$GPU_TEST_K"} \
    ${GPU_TEST_FILES:-tests/test_gpu_measure.py tests/test_gpu.py} >"$OUT/gpu_tests.txt" 2>&1; echo "tests exit $?"
  tail -15 "$OUT/gpu_tests.txt"
fi
if [ "${GPU_LATENCY:-1}" = 1 ]; then
  timeout ${LATENCY_TIMEOUT:-240} python3 benchmarks/gpu_latency.py --json "$OUT/latency.json" 2>"$OUT/latency.err" | tee "$OUT/latency.md"
  if [ -n "${LATENCY_PROFILE:-}" ]; then
    # A cProfile of each worker job of a few warm saves of LATENCY_PROFILE (a task's path under tasks/), the last
    # save's printed in $OUT/latency_profile.txt: where a save's steps go.
    KERNEL_LSP_PROFILE=/tmp/lprof timeout 120 python3 benchmarks/gpu_latency.py --repeats 2 "$LATENCY_PROFILE" >/dev/null 2>&1
    python3 -c "import glob, os, pstats; fs = sorted(glob.glob('/tmp/lprof/*.prof'), key=os.path.getmtime); [pstats.Stats(f).sort_stats('cumulative').print_stats(60) for f in fs[-2:]]" \
      2>&1 | head -c 80000 >"$OUT/latency_profile.txt"
  fi
fi
if [ "${COLD_CHECK:-0}" = 1 ]; then
  # Issue 13's cold target: a fresh process per file (imports, CUDA init, compile, verification), as a user's
  # first `kernel-lsp check FILE --device cuda` runs; with and without the measure stage. --timings says where the
  # time went, and KERNEL_LSP_PROFILE keeps a cProfile of each worker job. COLD_MODES, any of:
  #   first: Triton's and Inductor's caches empty (the first check ever on this machine);
  #   used:  those caches as checks of other files left them (kernel-lsp used before; this kernel still new);
  #   warm:  this machine's own caches as the tasks' check (GPU_TASKS=1, first) left them: issue 41's cold check
  #          ("a fresh process with warm on-disk caches"), the compile's marks included.
  # COLD_PROFILE=0 times the checks without the cProfile of each worker job (KERNEL_LSP_PROFILE), which slows them.
  # COLD_PYC=1 first writes .pyc files for every module a check imports (PYTHONPYCACHEPREFIX): the device image's
  # torch has none and cannot get them beside its sources, so without it every process compiles torch's Python.
  # A worker writes its own start's imports there, but not torch.compile's (Inductor's), which it imports once
  # confined (the sandbox does not let it write the prefix): a plain process imports those first, as a user's
  # installed torch has them compiled.
  python3 -c "import os, torch; d = os.path.dirname(torch.__file__); c = os.path.join(d, '__pycache__'); print('torch .pyc beside its sources:', len(os.listdir(c)) if os.path.isdir(c) else 'none', '; writable:', os.access(d, os.W_OK))" | tee -a "$OUT/cold_check.txt"
  env | grep -E '^PYTHON(DONTWRITEBYTECODE|PYCACHEPREFIX)=' | tee -a "$OUT/cold_check.txt"
  if [ "${COLD_PYC:-0}" = 1 ]; then
    unset PYTHONDONTWRITEBYTECODE  # the device image sets it: no process there ever writes a .pyc
    export PYTHONPYCACHEPREFIX=/tmp/pyc
    python3 -c "import importlib, torch._dynamo; from kernel_lsp.checker.measure.compiled import COMPILER_MODULES; [importlib.import_module(m) for m in COMPILER_MODULES]"
    TRITON_CACHE_DIR=$(mktemp -d) TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) python3 -m kernel_lsp.cli check \
      tasks/Activation/silu_triton.py --device cuda --no-cache >/dev/null 2>&1
    echo "pyc written: $(find /tmp/pyc -name '*.pyc' | wc -l) files" | tee -a "$OUT/cold_check.txt"
  fi
  used_triton=$(mktemp -d) used_inductor=$(mktemp -d)
  case " ${COLD_MODES:-first} " in *" used "*)
    TRITON_CACHE_DIR=$used_triton TORCHINDUCTOR_CACHE_DIR=$used_inductor python3 -m kernel_lsp.cli check \
      tasks/Activation/silu_triton.py tasks/Reduce/row_sum_triton.py --device cuda --no-cache >/dev/null 2>&1 ;;
  esac
  for mode in ${COLD_MODES:-first}; do
    for f in ${COLD_FILES:-tasks/Activation/gelu_triton.py tasks/Normalization/layer_norm_triton.py tasks/Fusion/scale_causal_softmax_triton.py}; do
      for measure in "--no-measure" ""; do
        [ "$mode" = warm ] || export TRITON_CACHE_DIR=$(mktemp -d) TORCHINDUCTOR_CACHE_DIR=$(mktemp -d)
        if [ "$mode" = used ]; then
          cp -r "$used_triton/." "$TRITON_CACHE_DIR/"; cp -r "$used_inductor/." "$TORCHINDUCTOR_CACHE_DIR/"
        fi
        prof=""
        [ "${COLD_PROFILE:-1}" = 1 ] && prof=/tmp/prof/$mode-$(basename "$f" .py)${measure:+-no-measure}
        s0=$(date +%s.%N)
        KERNEL_LSP_PROFILE=$prof python3 -m kernel_lsp.cli check "$f" \
          --device cuda --no-cache --timings $measure >/tmp/cold.txt 2>/tmp/cold.err; rc=$?
        s1=$(date +%s.%N)
        echo "cold[$mode${PYTHONPYCACHEPREFIX:+, pyc}] $f ${measure:-with-measure} rc=$rc seconds=$(python3 -c "print(round($s1 - $s0, 2))") $(tail -1 /tmp/cold.txt | cut -c1-120)" | tee -a "$OUT/cold_check.txt"
        cat /tmp/cold.err >>"$OUT/cold_check.txt"
        grep -v "verify: variant" /tmp/cold.txt >>"$OUT/cold_check.txt"  # where the time went (--timings)
        unset TRITON_CACHE_DIR TORCHINDUCTOR_CACHE_DIR
      done
    done
  done
  [ -d /tmp/prof ] && tar -czf "$OUT/profiles.tgz" -C /tmp prof
fi
if [ "${VERIFY_LATENCY:-0}" = 1 ]; then
  timeout ${VERIFY_LATENCY_TIMEOUT:-300} python3 benchmarks/verify_latency.py --device cuda --stride ${VERIFY_STRIDE:-3} \
    --out "$OUT/verify_latency.json" >"$OUT/verify_latency.md" 2>"$OUT/verify_latency.err"; tail -8 "$OUT/verify_latency.md"
fi
if [ "${GPU_TASKS:-1}" = 1 ]; then
  for _ in $(seq 1 ${TASKS_WAIT:-60}); do [ -s /tmp/tasks.json ] && break; sleep 5; done
  [ -s /tmp/tasks.json ] && cp /tmp/tasks.json "$OUT/tasks.json" && python3 benchmarks/tasks_table.py /tmp/tasks.json | tee "$OUT/tasks.md"
  tail -3 /tmp/tasks.log
  [ -d /tmp/report ] && tar -czf "$OUT/report.tgz" -C /tmp report
fi
