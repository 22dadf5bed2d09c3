"""The timing loop's logic without a GPU: interleaving, rounds, and the escaped-work rule (checker/measure/timing.py).
HostClock exists for exactly these tests; no reported number ever comes from it."""

from __future__ import annotations

from kernel_lsp.checker.measure.timing import (PLAIN_LONG_US, HostClock, Samples, escaped, honest_times, plain_calls,
                                      time_sides)


def test_timing_sides_are_interleaved_with_a_rotating_order():
    calls: list[str] = []
    sides = {name: (lambda n=name: calls.append(n)) for name in ("triton", "eager", "torch.compile")}
    out = time_sides(sides, HostClock(), warmup=2, min_rounds=3, max_rounds=3, budget_s=0.0)
    assert calls[:6] == ["triton"] * 2 + ["eager"] * 2 + ["torch.compile"] * 2  # warm-up first
    assert calls[6:] == ["triton", "eager", "torch.compile", "eager", "torch.compile", "triton",
                         "torch.compile", "triton", "eager"]
    assert all(len(s.event_us) == 3 for s in out.values())


def test_timing_keeps_each_sides_last_output():
    counter = iter(range(100))
    out = time_sides({"a": lambda: next(counter)}, HostClock(), warmup=1, min_rounds=4, max_rounds=4)
    assert out["a"].last_output == 4


def test_timing_work_outside_the_stream_is_detected_and_the_host_time_used():
    # The device-wide synchronize waits 4 us after an empty launch's stream is done (the usual tail).
    inside = Samples([10.0] * 20, [22.0] * 20, tail_us=[4.0] * 20)
    assert not escaped(inside, 4.0) and honest_times(inside, 12.0, 4.0) == ([10.0] * 20, "cuda events")
    outside = Samples([10.0] * 20, [1012.0] * 20, tail_us=[990.0] * 20)  # 1 ms more on another stream
    times, timer = honest_times(outside, 12.0, 4.0)
    assert escaped(outside, 4.0) and timer == "host clock" and times == [1000.0] * 20


def test_timing_another_process_on_the_gpu_is_not_escaped_work():
    """Contention slows the flush and the call (the host clock sees 5x the events) but leaves nothing of this
    process on another stream: no tail, so no KL406 (8 checks at once gave false ones with the host-clock rule)."""
    contended = Samples([40.0] * 20, [900.0] * 20, tail_us=[5.0] * 20)
    assert not escaped(contended, 4.0) and honest_times(contended, 12.0, 4.0)[1] == "cuda events"


def test_timing_back_to_back_rotates_sides_and_input_copies():
    from kernel_lsp.checker.measure.timing import time_back_to_back
    calls: list[tuple[str, int]] = []
    sides = {name: [lambda n=name, k=k: calls.append((n, k)) for k in range(2)] for name in ("triton", "eager")}
    out = time_back_to_back(sides, HostClock(), rounds=2, calls=6)
    # Per batch: 6 timed calls, then twice the plain loop's 3 and 6 calls, each rotating through the copies.
    batch = lambda name: [(name, k % 2) for k in (*range(6), *(*range(3), *range(6)) * 2)]  # noqa: E731
    assert calls == batch("triton") + batch("eager") + batch("eager") + batch("triton")
    # The first calls of each batch start from an idle GPU: left out, as a loop is past them.
    assert out["triton"].copy == [0, 1, 0, 1] and len(out["eager"].wall_us) == 4 and out["eager"].batch_calls == 6
    # Two plain-loop samples per batch, clustered by batch (each used every copy).
    assert len(out["triton"].plain_us) == 4 and out["triton"].loop_groups() == [0, 0, 1, 1]


def test_timing_back_to_back_takes_issue_times_in_the_first_rounds_only():
    """The calls' issue times (the wrapper's time, a median) come from the first ISSUE_ROUNDS rounds; every round
    gives its timed calls and plain loops."""
    from kernel_lsp.checker.measure.timing import ISSUE_ROUNDS, time_back_to_back
    sides = {name: [lambda: None, lambda: None] for name in ("triton", "eager")}
    out = time_back_to_back(sides, HostClock(), rounds=ISSUE_ROUNDS + 2, calls=8)
    for side in out.values():  # 8 calls a batch, of which the first QUEUE_WARMUP (4) are left out
        assert len(side.wall_us) == 4 * (ISSUE_ROUNDS + 2) and len(side.issue_us) == 4 * ISSUE_ROUNDS
        assert len(side.plain_us) == 2 * (ISSUE_ROUNDS + 2)


def test_timing_rotates_through_input_copies_and_records_them():
    used: list[int] = []
    copies = [lambda k=k: used.append(k) for k in range(3)]
    out = time_sides({"triton": copies}, HostClock(), warmup=1, min_rounds=6, max_rounds=6)
    assert used[3:] == [0, 1, 2, 0, 1, 2] and out["triton"].copy == [0, 1, 2, 0, 1, 2]


class _ScriptedClock:
    """A clock whose event times come from a list per side (each side's callable returns its name): the early-stop
    rule sees exactly these samples."""

    def __init__(self, **times):
        self.times = {name: iter(ts) for name, ts in times.items()}

    def sync(self):
        pass

    def time(self, fn):
        name = fn()
        t = next(self.times[name])
        return t, t + 5.0, name


def _sides():
    return {"a": lambda: "a", "b": lambda: "b"}


def test_timing_stops_early_once_every_interval_is_within_the_precision():
    import random
    rng = random.Random(0)
    steady = [[100.0 + rng.uniform(-0.2, 0.2) for _ in range(300)] for _ in range(2)]
    out = time_sides(_sides(), _ScriptedClock(a=steady[0], b=steady[1]), warmup=0, max_rounds=200, budget_s=60.0,
                     precision=0.005)
    assert len(out["a"].event_us) == 30  # the first check: both sides' intervals are within +-0.5%


def test_timing_runs_on_while_one_sides_interval_is_wide():
    import random
    rng = random.Random(0)
    a = [100.0 + rng.uniform(-0.2, 0.2) for _ in range(300)]
    b = [100.0 * rng.uniform(0.5, 1.5) for _ in range(300)]
    out = time_sides(_sides(), _ScriptedClock(a=a, b=b), warmup=0, max_rounds=120, budget_s=60.0, precision=0.005)
    assert len(out["a"].event_us) == 120  # never precise enough: the whole round limit is used
    out = time_sides(_sides(), _ScriptedClock(a=a, b=a), warmup=0, max_rounds=120, budget_s=60.0, precision=0.0)
    assert len(out["a"].event_us) == 120  # 0: the early stop is off, however steady the samples


def test_timing_stops_once_each_speedup_is_settled_though_a_side_stays_noisy():
    """A noisy baseline (+-20%) never gets its own interval to +-0.5%; where the implementation is clearly faster than
    it (about 2x) the speedup's verdict is settled at the first check, and the rounds stop there. Where the two are
    equal, the ratio's interval stays wide around 1 and the rounds run to the limit: no verdict out of noise."""
    import random

    from kernel_lsp.checker.measure.timing import _settled
    rng = random.Random(1)
    noisy = [100.0 * rng.uniform(0.8, 1.2) for _ in range(300)]
    steady = [50.0 + rng.uniform(-0.2, 0.2) for _ in range(300)]
    sides = {"triton": lambda: "triton", "eager": lambda: "eager"}
    out = time_sides(sides, _ScriptedClock(triton=steady, eager=noisy), warmup=0, max_rounds=120, budget_s=60.0,
                     precision=0.005)
    assert len(out["eager"].event_us) == 30 and _settled(out, "triton", 0.005)
    equal = [100.0 * rng.uniform(0.8, 1.2) for _ in range(300)]
    out = time_sides(sides, _ScriptedClock(triton=equal, eager=noisy), warmup=0, max_rounds=120, budget_s=60.0,
                     precision=0.005)
    assert len(out["eager"].event_us) == 120 and not _settled(out, "triton", 0.005)
    # The same noisy pair with no implementation side named: only the per-side precision stops the rounds.
    out = time_sides(sides, _ScriptedClock(triton=steady, eager=noisy), warmup=0, max_rounds=120, budget_s=60.0,
                     precision=0.005, impl="none")
    assert len(out["eager"].event_us) == 120


def test_timing_a_loop_pays_the_hosts_issue_time_when_it_is_longer_than_the_gpus():
    """The L2 flush between timed calls lets the host get ahead, so events alone hid a wrapper's launch (H200: a
    torch.compile wrapper issuing for 63 us read 41 us back to back; do_bench, 77 us): per call, a loop pays the
    larger of the two; the plain loop's samples, where there are, are what it pays."""
    from kernel_lsp.checker.measure.timing import BackToBack
    b = BackToBack(wall_us=[41.0, 42.0, 130.0], issue_us=[63.0, 64.0, 35.0], copy=[0, 1, 0])
    assert b.loop_us() == [63.0, 64.0, 130.0] and b.loop_groups() == [0, 1, 0]
    assert BackToBack(wall_us=[5.0]).loop_us() == [5.0]
    # Issue times from the first rounds only: the later calls count their events' time, none is dropped.
    assert BackToBack(wall_us=[41.0, 42.0, 130.0], issue_us=[63.0], copy=[0, 1, 0]).loop_us() == [63.0, 42.0, 130.0]
    assert BackToBack(wall_us=[41.0], issue_us=[63.0], plain_us=[71.0, 70.0]).loop_us() == [71.0, 70.0]


def test_timing_the_plain_loop_leaves_out_what_every_loop_pays_once():
    """A host that takes 50 us per call and a final synchronize that waits 300 us (the last call's run): a loop of n
    calls takes 50 n + 300 us, and the difference of two loops gives 50 us per call, not 50 + 300 / n."""
    from kernel_lsp.player import clock as timing  # the clocks live where the timed code runs
    clock = {"now": 0.0}
    timing_perf, timing._perf_counter = timing._perf_counter, lambda: clock["now"] / 1e6
    try:
        def call():
            clock["now"] += 50.0

        def sync():
            clock["now"] += 300.0
        assert timing.plain_loop_us([call], 12, sync) == 50.0
        # A host hiccup in the shorter loop (1 ms) makes the difference negative: the longer loop's time per call,
        # never 0 us (a zero sample would read as an infinite speedup).
        calls = {"n": 0}

        def slow_once():
            clock["now"] += 50.0 + (1000.0 if calls["n"] == 0 else 0.0)
            calls["n"] += 1
        assert abs(timing.plain_loop_us([slow_once], 12, sync) - (24 * 50.0 + 300.0) / 24) < 1e-9
    finally:
        timing._perf_counter = timing_perf


def test_the_plain_loop_is_half_a_batch_or_four_long_calls():
    assert plain_calls(12, [20.0] * 12) == 6
    assert plain_calls(1, [20.0]) == 1
    assert plain_calls(12, [PLAIN_LONG_US] * 7 + [1.0] * 5) == 4  # the median call is long: 4 calls measure it
    assert plain_calls(12, [PLAIN_LONG_US] * 5 + [1.0] * 7) == 6


def test_a_slow_host_is_not_taken_for_events_that_under_report():
    """Escaped work (another stream) or a patched timer: the GPU ran far longer than the events say, which the
    batch's final synchronize waits out after the host issued the last call. A host slowed by other processes
    (eight checks at once on an H200: an in-place SGD's batch took 4.8 ms to issue 24 calls of 10 us) makes the
    batch long but that wait short."""
    from kernel_lsp.checker.measure.timing import BackToBack
    slow_host = BackToBack(wall_us=[10.0] * 24, issue_us=[190.0] * 24, batch_us=[24 * 200.0] * 6,
                           wait_us=[15.0] * 6, batch_calls=24)
    assert not slow_host.events_under_report(flush_us=65.0)
    escaped = BackToBack(wall_us=[10.0] * 24, issue_us=[8.0] * 24, batch_us=[24 * 400.0] * 6,
                         wait_us=[24 * 390.0] * 6, batch_calls=24)
    assert escaped.events_under_report(flush_us=65.0)


def test_timing_long_calls_get_shorter_back_to_back_batches():
    from kernel_lsp.checker.measure.timing import BATCH_GPU_US, Samples, back_to_back_calls

    def side(us: float) -> Samples:
        s = Samples()
        for _ in range(5):
            s.add(us, us + 5.0)
        return s
    assert back_to_back_calls({"triton": side(20.0), "eager": side(30.0)}) == 24  # short calls: full batches
    assert back_to_back_calls({"triton": side(2000.0), "eager": side(50.0)}) == 12  # the slowest side sets it
    assert back_to_back_calls({"triton": side(BATCH_GPU_US / 16)}) == 16
    assert back_to_back_calls(None) == 24


def test_timing_split_clock_stops_the_player_before_each_side_of_its_own_and_the_player_goes_on_before_its_turn():
    """sides.py `SplitClock`: a side this process times (eager, torch.compile, the flush) runs only with the player's
    processes stopped and the GPU its own; the player's turn (a request) lets them go on. What did not stop, and a GPU
    that stayed busy, are kept apart: the busy GPU is the implementation's unless NVML named another process."""
    from kernel_lsp.checker.measure.sides import RemoteCall, SplitClock
    log = []

    class Player:
        holder = object()
        held = False
        running = 0

        def stop(self):
            log.append("stop")
            self.held = True
            return self.running

        def go(self):
            if self.held:
                log.append("go")
            self.held = False

    class Side:
        def __init__(self, player):
            self.player = player

        def ask(self, do, **more):
            self.player.go()  # as Player.request does
            log.append(do)
            return {"event_us": 1.0, "host_us": 1.0}

    class Local(HostClock):
        busy = False

        def gpu_ours(self):
            log.append("ours?")
            return not self.busy

    player, local = Player(), Local()
    clock = SplitClock(local, player)
    remote = RemoteCall(Side(player), 0)
    eager = lambda: log.append("eager")  # noqa: E731
    for fn in (remote, eager, eager, remote, eager):
        clock.time(fn)
    assert log == ["once", "stop", "ours?", "eager", "eager", "go", "once", "stop", "ours?", "eager"]
    assert clock.held_up(False) == []
    player.running = 2
    clock.time(remote)
    clock.time(eager)
    assert clock.held_up(False) == ["2 of the implementation's processes did not stop within a second"]
    clock.reset()
    player.running, local.busy = 0, True
    clock.time(remote)
    clock.time(eager)
    busy = "the GPU stayed busy after the implementation's processes had stopped (work they had queued)"
    assert clock.held_up(False) == [busy]
    assert clock.held_up(True) == []  # NVML named another process: its work (KL408), not the implementation's
    player.holder = None  # no server to stop them: no wait for the GPU either
    clock.reset()
    clock.time(remote)
    clock.time(eager)
    assert clock.held_up(False) == []


def test_timing_nvml_s_other_processes_are_told_apart_from_what_the_implementation_started():
    """sides.py `_whose`: a process under the players' server that used the GPU is the implementation's work outside
    its calls (KL406, no speed verdict); any other is another process (KL408)."""
    from kernel_lsp.checker.measure.neighbours import Neighbour
    from kernel_lsp.checker.measure.sides import SplitClock, _whose

    class Player:
        holder = None
        held = False

        def stop(self):
            return 0

        def tree_pids(self):
            return {10, 11, 12}

    clock = SplitClock(HostClock(), Player())
    others, started = _whose([Neighbour(12, "python", 40), Neighbour(99, "train", 97)], Player())
    assert [n.pid for n in others] == [99]
    assert started == ["a process the implementation started used the GPU (pid 12, python, 40% of the SMs)"]
    clock.gpu_busy = True
    others, _ = _whose([Neighbour(99, "train", 97)], Player())
    assert clock.held_up(bool(others)) == []  # the busy GPU: the other process's
    others, _ = _whose([], Player())
    assert clock.held_up(bool(others)) == [
        "the GPU stayed busy after the implementation's processes had stopped (work they had queued)"]
