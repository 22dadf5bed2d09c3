"""The measure stage on a real GPU (marked `gpu`: skipped without CUDA; run on an H200). Fixtures: tests/fixtures/perf
(relu(2x + 1) on 32M fp32 elements, four implementations)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES, ROOT, errors_beyond_speed, run_cli, speed_verdicts

PERF = FIXTURES / "perf"
pytestmark = pytest.mark.gpu


def check(path, *extra: str) -> dict:
    proc = run_cli("check", str(path), "--device", "cuda", "--format", "json", "--no-cache", *extra, timeout=900)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return json.loads(proc.stdout)


def measurement(doc: dict) -> dict | None:
    return next((k["measurement"] for k in doc["files"][0]["kernels"].values() if "measurement" in k), None)


def codes(doc: dict) -> list[str]:
    return [d["code"] for d in doc["diagnostics"]]


def test_gpu_one_element_per_program_is_slower_than_eager():
    doc = check(PERF / "one_per_program.py")
    m = measurement(doc)
    assert m is not None and "KL400" in codes(doc), doc["diagnostics"]
    eager = next(s for s in m["speedups"] if s["against"] == "eager")
    assert eager["high"] < 0.5
    kl400 = next(d for d in doc["diagnostics"] if d["code"] == "KL400")
    from kernel_lsp.checker.measure.perf_rules import short_gpu
    import torch
    gpu = short_gpu(torch.cuda.get_device_name())  # the GPU it ran on, named (an H200, an H100, ...)
    assert kl400["message"].startswith("slower than PyTorch eager: ") and f"on {gpu}" in kl400["message"], kl400


def test_gpu_fused_kernel_is_not_flagged_and_near_the_roofline():
    doc = check(PERF / "tuned.py")
    m = measurement(doc)
    assert m is not None and "KL400" not in codes(doc) and "KL403" not in codes(doc), doc["diagnostics"]
    eager = next(s for s in m["speedups"] if s["against"] == "eager")
    assert eager["low"] > 1.5  # one pass instead of three
    assert m["roofline"]["bound"] == "memory" and 50 < m["roofline"]["percent"] <= 105
    assert m["provenance"]["timer"] == "cuda events" and m["provenance"]["cache"] == "cold"
    assert any(s["side"] == "torch.compile" for s in m["sides"])


def test_gpu_side_stream_kernel_is_timed_in_full():
    side, same = measurement(check(PERF / "side_stream.py")), measurement(check(PERF / "tuned.py"))
    t_side = next(s for s in side["sides"] if s["side"] == "triton")["median_us"]
    t_same = next(s for s in same["sides"] if s["side"] == "triton")["median_us"]
    assert 0.8 * t_same < t_side < 1.5 * t_same, (t_side, t_same)


def test_gpu_unsynchronized_side_stream_work_escapes_the_events_and_is_caught():
    """The timer itself: work left running on a side stream is invisible to events on the caller's stream; the
    host clock sees it, and the honest time is the work's. The work is a GPU spin calibrated to 5 ms (a Triton loop
    of multiply-adds finished beside the cushion on an H100, 2026-12-06: its length depends on the GPU): side-stream
    work shorter than the timer's 300 us cushion runs beside the cushion and neither clock sees it (a limit written up
    in docs/performance-method.md; the impossible-speed rule, KL403, is the backstop where the data crosses HBM)."""
    import torch

    from kernel_lsp.checker.measure.stats import median
    from kernel_lsp.checker.measure.timing import CudaClock, escaped, honest_times, time_sides

    clock = CudaClock("cold")
    cycles = clock._cycles_for(5000.0)
    side = torch.cuda.Stream()

    def on_side():
        with torch.cuda.stream(side):
            torch.cuda._sleep(cycles)

    def on_current():
        torch.cuda._sleep(cycles)

    out = time_sides({"side": on_side, "current": on_current}, clock, min_rounds=20, max_rounds=40)
    empty = time_sides({"e": lambda: None}, clock, min_rounds=20, max_rounds=20)["e"]
    overhead = median([h - e for h, e in zip(empty.host_us, empty.event_us)])
    tail = median(empty.tail_us)
    assert median(out["current"].event_us) > 2000, out["current"].event_us[:5]  # the spin is milliseconds long
    assert escaped(out["side"], tail) and not escaped(out["current"], tail), (out["side"].tail_us[:5], tail)
    honest, timer = honest_times(out["side"], overhead, tail)
    assert timer == "host clock" and median(honest) > 0.7 * median(out["current"].event_us)


def test_gpu_cached_result_is_caught_once_its_timed_buffers_are_refilled():
    """A result cached per input tensor: the verifier's call on the same buffers refilled in place gets the stale
    output (KL206), so it is never timed. Where a cache escapes that call, the timed loop replays it and the timed
    buffers refilled after the loop get the stale output (KL405); either way no time is reported (before both, the
    replay's impossible speed was the only sign: KL403)."""
    doc = check(PERF / "cached.py")
    caught = {"KL206", "KL405"} & set(codes(doc))
    assert caught, doc["diagnostics"]
    if "KL405" in caught:
        kl405 = next(d for d in doc["diagnostics"] if d["code"] == "KL405")
        assert "wrong once warmed up" in kl405["message"]
    assert not {"KL402", "KL403"} & set(codes(doc))  # no speedup is claimed, and nothing was timed to judge
    if "KL206" in caught:
        assert measurement(doc) is None  # failed verification: never timed


def test_gpu_three_runs_of_one_task_agree_within_their_intervals():
    """Three fresh processes agree within their intervals, on each side's median and on the speedup. Before the
    GPU-side cushion ahead of the start event (timing.py), about one process in three measured gelu's Triton side
    6-27% slower with a tight interval: its host took longer to launch the call than the L2 flush lasted."""
    task = ROOT / "tasks" / "Activation" / "gelu_triton.py"
    runs = [measurement(check(task)) for _ in range(3)]
    assert all(runs)
    meds = [next(s for s in m["sides"] if s["side"] == "triton") for m in runs]
    ratios = [next(s for s in m["speedups"] if s["against"] == "eager") for m in runs]
    for a in range(3):
        for b in range(a + 1, 3):
            assert meds[a]["low_us"] <= meds[b]["high_us"] and meds[b]["low_us"] <= meds[a]["high_us"], meds
            assert ratios[a]["low"] <= ratios[b]["high"] and ratios[b]["low"] <= ratios[a]["high"], ratios


def test_gpu_worker_survives_an_illegal_address():
    """A kernel that stores to a wild address poisons the CUDA context of the process it runs in: its player, not the
    worker (the implementation never runs in the checker's process). The fault is reported, and the next file runs
    in the same pool on the same worker, whose context the fault never touched."""
    from kernel_lsp.check import CheckRequest, check_file
    from kernel_lsp.config import Settings
    from kernel_lsp.run.executor import WorkerPoolExecutor

    with WorkerPoolExecutor.local_gpus("cuda", gpus=["0"]) as pool:
        settings = Settings(device="cuda", timeout=300)
        bad = check_file(CheckRequest(PERF / "illegal_address.py", settings, PERF, executor=pool))
        first_pid = pool.workers[0].info.get("pid")
        assert any("illegal" in f.message.lower() for f in bad.findings), [f.message for f in bad.findings]
        good = check_file(CheckRequest(PERF / "tuned.py", settings, PERF, executor=pool))
        assert [f.code for f in good.findings if f.severity <= 2] == [], [f.message for f in good.findings]
        assert pool.workers[0].info.get("pid") == first_pid  # not replaced: the fault was the player's
        assert any(k.measurement for k in good.kernels.values())


def test_gpu_tune_makes_a_mistuned_matmul_faster_and_keeps_it_verified(tmp_path):
    """`optimize --mode tune` on a matmul with 16x32x16 tiles and one warp: it searches the launch literals, verifies
    and times the survivors, races the fastest against the current kernel, and applies it only as a real win."""
    import shutil
    for name in ("mistuned_matmul.py", "matmul_problem.py"):
        shutil.copy(PERF / name, tmp_path / name)
    path = tmp_path / "mistuned_matmul.py"
    before = path.read_text()
    proc = run_cli("optimize", str(path), "--mode", "tune", "--rounds", "2", "--candidates", "12", "--apply",
                   "--device", "cuda", "--format", "json", "-q", timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    p = json.loads(proc.stdout)
    assert p["accepted"], p["summary"]
    winner = next(c for c in p["candidates"] if c["verdict"] == "accepted")
    assert winner["speedup"]["low"] > 1.0 and winner["speedup"]["ratio"] > 1.5, winner
    after = path.read_text()
    assert after != before and len([1 for a, b in zip(before.splitlines(), after.splitlines()) if a != b]) <= 4
    doc = check(path)
    assert [d["code"] for d in doc["diagnostics"] if d["severity"] in ("error", "warning") and
            not d["code"].startswith("KL4")] == [], doc["diagnostics"]


def test_gpu_a_stream_of_writes_above_the_copy_rate_is_not_called_impossible():
    """tasks/LinearAlgebra/outer writes 537 MB and reads 96 KB; it and torch.compile's version both ran above the
    copy ceiling (4.42 and 4.47 TB/s against 4.22), which called it impossible (KL403) until the write rate was
    measured too (ceilings.measure_write)."""
    from kernel_lsp.checker.measure.ceilings import load_or_measure
    ceilings, _ = load_or_measure()
    assert ceilings.get("write").value > ceilings.get("copy").value
    doc = check(ROOT / "tasks" / "LinearAlgebra" / "outer_triton.py")
    assert measurement(doc) is not None and "KL403" not in codes(doc), doc["diagnostics"]


def test_gpu_a_cold_check_waits_for_its_compile_warmer_and_still_times_torch_compile(tmp_path):
    """A cold check starts a compile warmer beside its worker (run/compile_warmer.py): the measure stage waits
    for it (and says so where the warmer still runs then: with empty caches, its compile of the reference usually
    does), then compiles from the caches it filled, and torch.compile is timed as without one. That the stage waits
    on the warmer's lock is tested on the CPU (tests/run/test_compile_warmer.py)."""
    env = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"), "TRITON_CACHE_DIR": str(tmp_path / "triton")}
    proc = run_cli("check", str(PERF / "tuned.py"), "--device", "cuda", "--no-cache", "--timings", env=env,
                   timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert (tmp_path / "inductor").is_dir() and any((tmp_path / "inductor").rglob("*.py"))
    from kernel_lsp.checker.measure.compiled import MARKS
    assert any((tmp_path / "inductor" / MARKS).iterdir())  # the worker's compile marked it: no warmer next time
    off = run_cli("check", str(PERF / "tuned.py"), "--device", "cuda", "--no-cache", "--timings", "--format", "json",
                  env={**env, "KERNEL_LSP_COMPILE_WARMER": "0"}, timeout=900)
    assert "waiting for the compile warmer" not in off.stdout + off.stderr
    assert any(s["side"] == "torch.compile" for s in measurement(json.loads(off.stdout))["sides"])


def test_gpu_back_to_back_agrees_with_do_bench_on_five_tasks(tmp_path):
    """kernel-lsp's timer against independent ones on five tasks whose host launch is near or over their GPU time
    (benchmarks/do_bench_compare.py; the recorded run is benchmarks/results/do_bench_agreement.json), in one process
    on the same callables and in the check itself. Where the GPU bounds a side: back-to-back times within 10% of a
    plain 200-call loop, GPU times within 10% of triton.testing.do_bench. Where the host bounds it, do_bench's L2
    flush lets the host get ahead by the flush's length, so do_bench reads less than a loop pays (H200, 2026-12-02:
    rms_norm's torch.compile 42 us in do_bench's loop, 71 us in a plain one): compared with the plain loop only, as
    loosely as a noisy host requires (below)."""
    import subprocess
    import sys
    out = tmp_path / "agreement.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "do_bench_compare.py"), "--json", str(out)],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    print(proc.stdout)  # the table (pytest -s shows it)
    rows = [r for r in json.loads(out.read_text())["rows"] if "loop_us" in r]
    assert len({r["task"] for r in rows}) == 5 and len(rows) == 15, proc.stdout
    near = lambda a, b, by=0.1: 1 - by <= a / b <= 1 + by  # noqa: E731
    gpu = [r for r in rows if r["bound"] == "gpu"]
    host = [r for r in rows if r["bound"] == "host"]
    # Where the GPU bounds a side, every timer reads its GPU time: here, in the check's worker, and do_bench.
    off = [r for r in gpu if not (near(r["kl_wall_us"], r["loop_us"]) and near(r["wall_us"], r["loop_us"])
                                  and near(r["kl_gpu_us"], r["do_bench_us"]) and near(r["gpu_us"], r["do_bench_us"]))]
    # Where the host does, the time is the host's, and a noisy host moves it: on a second H200 the same day two
    # plain loops in one process differed by up to 36% (layer_norm's Triton side, 55.6 against 41.0 us;
    # docs/performance-method.md). The test requires what holds on any host: kernel-lsp's loop, here and in the
    # check, reads no less than the GPU's time (0.8 of it: the GPU time is cold-L2, a loop's warm), and here within
    # 40% of the 200-call loop.
    off += [r for r in host if not (near(r["kl_wall_us"], r["loop_us"], 0.4) and r["kl_wall_us"] >= 0.8 * r["kl_gpu_us"]
                                    and r["wall_us"] >= 0.8 * r["gpu_us"])]
    assert not off, proc.stdout


# Correct kernels of tests/corpus of each kind the timer meets: elementwise, a row reduction, a matmul, an in-place
# update, a scatter. Eight processes time them one at a time, so each file adds eight measure stages to the test.
CLEAN_GPU = ["ok_add_fp32.py", "ok_softmax_fp32.py", "ok_matmul_fp16.py", "ok_sgd_momentum_inplace.py",
             "ok_index_add_no_float64.py"]


def test_gpu_eight_checks_at_once_give_the_verdicts_of_one_alone(tmp_path):
    """Eight `kernel-lsp check --device cuda` processes at once on one GPU (a language server, CLI runs and CI jobs
    on one machine): no warning or error beyond KL400/KL401 that the same check alone does not give, and for each
    kernel and baseline the speed verdicts (perf_rules.verdict) never contradict: slower in one and faster in the
    other. Load may widen an interval to inconclusive. They time one at a time (the GPU's lease), and a check that
    waited says so in its progress."""
    import subprocess
    import sys
    from tests.conftest import CORPUS
    files = [str(CORPUS / n) for n in CLEAN_GPU]
    cmd = [sys.executable, "-m", "kernel_lsp.cli", "check", *files, "--device", "cuda", "--format", "json",
           "--no-cache", "-j", "1"]
    alone = json.loads(subprocess.run(cmd, capture_output=True, text=True, timeout=900).stdout)
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(8)]
    docs = [json.loads(p.communicate(timeout=1800)[0]) for p in procs]

    baseline, lone = errors_beyond_speed(alone), speed_verdicts(alone)
    assert lone, "nothing was timed alone"
    for doc in docs:
        for path, found in errors_beyond_speed(doc).items():
            assert found <= baseline[path], (path, found, baseline[path])
        assert speed_verdicts(doc).keys() == lone.keys(), "the runs timed other kernels"
        for key, v in speed_verdicts(doc).items():
            assert {v, lone.get(key, v)} != {"slower", "faster"}, (key, v, lone[key])
    stages = [stage for doc in docs for f in doc["files"] for _, stage, detail in f["stats"].get("timeline", [])
              if "waiting for GPU" in detail]
    assert stages, "no check ever waited for the GPU's lease"


def test_gpu_a_stopped_players_queued_work_is_waited_out_or_seen(tmp_path):
    """`CudaClock.gpu_ours` after `Player.stop`: a player's thread that queued about a millisecond at a time leaves the
    GPU to the checker within the wait; one that keeps the launch queue full does not, and is seen. Once the player
    is gone the GPU is the checker's again."""
    import time

    import torch

    from kernel_lsp.checker.player import Player
    from kernel_lsp.jobs import SandboxOptions
    from kernel_lsp.player.clock import CudaClock
    from kernel_lsp.run.players import PlayerServer
    clock = CudaClock("hot")
    assert clock.gpu_ours()
    server = PlayerServer("cuda")
    try:
        for mode, ours in ((1, True), (2, False)):
            player = Player(server.fork(SandboxOptions(writable=[str(tmp_path)])), "cuda")
            player.holder = server.hold
            player.load(str(FIXTURES / "player" / "background.py"))
            spin = player.build("function", "spin")
            folder = torch.tensor(list(str(tmp_path / str(mode)).encode()), dtype=torch.uint8)
            (tmp_path / str(mode)).mkdir()
            spin(torch.ones(2, device="cuda"), folder, torch.tensor(mode))
            time.sleep(0.3)
            assert player.stop() == 0
            t0 = time.perf_counter()
            assert clock.gpu_ours() is ours, (mode, time.perf_counter() - t0)
            player.close()
        assert clock.gpu_ours(wait_s=10.0)
    finally:
        server.close()
