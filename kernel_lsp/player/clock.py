"""The clocks: one timed call from an idle GPU, a back-to-back batch, a plain loop, a CUDA graph's replay. Runs
where the timed code runs: in the player for the implementation, in the checker for the baselines (eager,
torch.compile), so that both sides are timed by the same code (checker/measure/timing.py interleaves them and says
how each method works). Imports nothing of kernel_lsp: the player runs this file as a plain module, imported before
the implementation's, so the clock functions it holds are the ones the process started with.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

# The clocks as they were when the worker started, before any checked code ran: code that replaces
# `time.perf_counter`, `torch.cuda.synchronize` or `torch.cuda.Event.elapsed_time` (a Python subclass's method) to
# report less time changes what it sees, not what the timer reads. The events' C methods cannot be replaced.
_perf_counter = time.perf_counter
try:
    import torch as _torch
    _event_base = _torch._C._CudaEventBase
    _record_on, _elapsed, _event_sync = _event_base.record, _event_base.elapsed_time, _event_base.synchronize
    _current_stream = _torch.cuda.current_stream
    # The C function itself: `torch.cuda.synchronize` looks `torch._C._cuda_synchronize` up on every call, so
    # holding the Python wrapper would not keep a replacement of the C attribute out.
    _device_sync = getattr(_torch._C, "_cuda_synchronize", None) or _torch.cuda.synchronize

    def _record(event) -> None:
        _record_on(event, _current_stream())
except (ImportError, AttributeError):  # no torch, or a build without CUDA events: nothing here is used then
    _record = _elapsed = _event_sync = _device_sync = _current_stream = None

FLUSH_MIN_BYTES = 256 << 20
CUSHION_US = 300.0  # GPU time queued before the start event, covering the host's launch of the timed call
ESCAPE_MIN_US = 20.0  # host time beyond the events' that means work escaped the stream...
ESCAPE_FRACTION = 0.25  # ...when also this fraction of the events' time


@dataclass
class BackToBack:
    """One side timed as a loop calls it: per call, the event time (GPU idle waiting for the host included) and the
    host's time to issue the call."""

    wall_us: list[float] = field(default_factory=list)
    issue_us: list[float] = field(default_factory=list)
    copy: list[int] = field(default_factory=list)
    batch_us: list[float] = field(default_factory=list)  # the host clock over each whole batch (a final sync included)
    # of which the final synchronize: how long the GPU still ran after the host had issued the last call
    wait_us: list[float] = field(default_factory=list)
    batch_calls: int = 0  # calls issued per batch (those left out of the samples included)
    plain_us: list[float] = field(default_factory=list)  # per call in a plain loop: two samples per batch

    def loop_us(self) -> list[float]:
        """What a loop that calls the side pays per call: the plain loop's samples (host launch included, no flush
        giving the host a head start). Without them (a clock that took none), the larger of each call's event time
        and the host's time to issue it."""
        if self.plain_us:
            return list(self.plain_us)
        # Issue times exist for the first rounds only (timing.ISSUE_ROUNDS): the later calls are their events' time.
        return [max(w, i) for w, i in zip(self.wall_us, self.issue_us)] + self.wall_us[len(self.issue_us):]

    def loop_groups(self) -> list[int]:
        """The clusters of `loop_us` for the bootstrap: the plain-loop samples of one batch together (taken one after
        the other, under the same conditions; each went through every input copy); a per-call sample belongs to its
        copy."""
        return [i // PLAIN_PER_BATCH for i in range(len(self.plain_us))] if self.plain_us else list(self.copy)

    def events_under_report(self, flush_us: float) -> bool:
        """The events claim far less time than the GPU took over the same batches: work ran where the events do not
        see it (another stream), or the timer was tampered with. The GPU's time is what the final synchronize waited
        after the host had issued the last call, never the host's own issuing: a host slowed by other processes
        (eight checks on 16 cores, H200 2026-12-02) made an in-place SGD's batch read as escaped work. Each call
        may add its flush and some launch overhead (20 us) the events leave out."""
        waits = self.wait_us or self.batch_us
        if not waits or not self.wall_us:
            return False
        calls = self.batch_calls or len(self.wall_us) / len(waits)
        per_call = sorted(self.wall_us)[len(self.wall_us) // 2]
        waited = sorted(waits)[len(waits) // 2]
        return waited > 2.0 * calls * (per_call + flush_us) + calls * 20.0


def plain_loop_us(fns: list[Callable[[], Any]], calls: int, sync: Callable[[], Any],
                  events: tuple | None = None) -> float:
    """Per call, what a plain loop pays: a loop of `calls` calls and one of twice as many (rotating through `fns`), each
    from an idle GPU to its final `sync`, by the host clock; the difference leaves out what both pay once (the
    first call's launch onto an idle GPU, the last call's run after the host is done). With `events` (a start and
    an end CUDA event), each loop is also bracketed on the GPU and waited for through the end event's own C method,
    and its time is the longer of the two clocks: a `sync` that returned early (replaced by checked code) cannot
    make a loop shorter than the GPU took. A difference that a hiccup of the host made negative falls back to the
    longer loop's time per call."""
    calls = max(1, calls)
    totals = []
    for n in (calls, 2 * calls):
        sync()
        t0 = _perf_counter()
        if events is not None:
            _record(events[0])
        for i in range(n):
            fns[i % len(fns)]()
        if events is not None:
            _record(events[1])
            _event_sync(events[1])
        sync()
        host = (_perf_counter() - t0) * 1e6
        totals.append(max(host, _elapsed(events[0], events[1]) * 1e3) if events is not None else host)
    diff = (totals[1] - totals[0]) / calls
    return diff if diff > 0 else totals[1] / (2 * calls)


# A call this long is the GPU's time in any loop: a short plain loop measures it. Each of its per-call samples is a
# difference of two loops' clocks over 4 calls, a few us of synchronize jitter on 400 us or more (1-2%); longer loops
# of such calls only held the GPU (on an H200 the back-to-back step was 26 s of the 42 s for which a check of tasks/
# held the GPU alone, 2026-12-06: benchmarks/results/check-tasks-gpu-h200.json).
PLAIN_LONG_US = 100.0
PLAIN_PER_BATCH = 2  # plain-loop samples per back-to-back batch


def plain_calls(calls: int, gpu_us: list[float]) -> int:
    """The plain loop's length: half a batch, or 4 calls when the batch's calls took PLAIN_LONG_US or more (median
    of their GPU times, in us)."""
    times = sorted(gpu_us)
    return 4 if times and times[len(times) // 2] >= PLAIN_LONG_US else max(1, calls // 2)


# A tiny launch that takes longer than this from its launch to its end waited for another CUDA context to give the
# GPU up (contexts take turns by time slices of a millisecond or more); two in a row within it: the GPU is this
# process's. Given up on after GPU_OURS_WAIT_S.
GPU_OURS_PROBE_US = 250.0
GPU_OURS_WAIT_S = 0.05


class CudaClock:
    """Times single calls on the current CUDA device; the flush buffer and the events are made once."""

    def __init__(self, cache: str = "cold"):
        import torch
        self.torch = torch
        self.cache = cache
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        self.l2_bytes = int(getattr(props, "L2_cache_size", 0) or 0)
        nbytes = max(2 * self.l2_bytes, FLUSH_MIN_BYTES)
        self.flush_buffer = torch.empty(nbytes // 4, dtype=torch.int32, device="cuda") if cache == "cold" else None
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)
        self.cushion_cycles = self._cycles_for(CUSHION_US)
        self.last_tail_us = 0.0

    def _cycles_for(self, us: float) -> int:
        """GPU clock cycles that `torch.cuda._sleep` spins for about `us` microseconds, calibrated here."""
        torch = self.torch
        cycles = 1 << 20
        torch.cuda._sleep(cycles)  # the first call loads the kernel
        self.start.record()
        torch.cuda._sleep(cycles)
        self.end.record()
        torch.cuda.synchronize()
        per_us = cycles / max(self.start.elapsed_time(self.end) * 1e3, 1.0)
        return int(per_us * us)

    def time(self, fn: Callable[[], Any]) -> tuple[float, float, Any]:
        """(event microseconds, host microseconds, the call's result) of one call."""
        torch = self.torch
        t0 = _perf_counter()
        if self.flush_buffer is not None:
            self.flush_buffer.zero_()
        torch.cuda._sleep(self.cushion_cycles)
        _record(self.start)
        out = fn()
        _record(self.end)
        _event_sync(self.end)  # the caller's stream is done
        t1 = _perf_counter()
        _device_sync()  # and any other stream this process used
        t2 = _perf_counter()
        self.last_tail_us = (t2 - t1) * 1e6
        return _elapsed(self.start, self.end) * 1e3, (t2 - t0) * 1e6, out

    def back_to_back(self, fns: list[Callable[[], Any]], calls: int, issue: bool = True) -> BackToBack:
        """`calls` calls issued back to back (rotating through `fns`, one per input copy), each between its own pair
        of events after the flush (cold L2), the way triton.testing.do_bench times; one synchronize at the end.
        Then, with `issue`, each call's issue time with the GPU idle, and the plain loops."""
        torch = self.torch
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
        _device_sync()
        batch_start = _perf_counter()
        for i in range(calls):
            if self.flush_buffer is not None:
                self.flush_buffer.zero_()
            _record(starts[i])
            fns[i % len(fns)]()
            _record(ends[i])
        issued = _perf_counter()
        _device_sync()
        done = _perf_counter()
        batch_us, wait_us = (done - batch_start) * 1e6, (done - issued) * 1e6
        gpu_us = [_elapsed(s, e) * 1e3 for s, e in zip(starts, ends)]
        plain = plain_calls(calls, gpu_us)
        # The host's time to issue each call, taken apart with the GPU idle (flushed, then synchronized): in the
        # batch above a wrapper that synchronizes (`.item()`, a size read from the data) would also wait out the
        # flush queued before it, which a loop without flushes never pays.
        issue_us = []
        for i in range(calls if issue else 0):
            if self.flush_buffer is not None:
                self.flush_buffer.zero_()
            _device_sync()
            t0 = _perf_counter()
            fns[i % len(fns)]()
            issue_us.append((_perf_counter() - t0) * 1e6)
        _device_sync()
        return BackToBack(gpu_us, issue_us,
                          [i % len(fns) for i in range(calls)], [batch_us], wait_us=[wait_us],
                          plain_us=[plain_loop_us(fns, plain, _device_sync, (self.start, self.end))
                                    for _ in range(PLAIN_PER_BATCH)])

    def flush_us(self) -> float:
        """The GPU time of one L2 flush (0 when hot): what a back-to-back batch spends between the timed calls."""
        if self.flush_buffer is None:
            return 0.0
        times = []
        for _ in range(5):
            _record(self.start)
            self.flush_buffer.zero_()
            _record(self.end)
            _device_sync()
            times.append(_elapsed(self.start, self.end) * 1e3)
        return sorted(times)[len(times) // 2]

    def sync(self) -> None:
        self.torch.cuda.synchronize()

    def gpu_ours(self, wait_s: float = GPU_OURS_WAIT_S) -> bool:
        """Whether the GPU is this process's alone: a tiny launch, synchronized, again until two in a row take no
        more than GPU_OURS_PROBE_US (work of another process's, queued before it stopped, has run out meanwhile),
        or False once `wait_s` has passed."""
        sleep = self.torch.cuda._sleep
        _device_sync()
        deadline = _perf_counter() + wait_s
        clean = 0
        while clean < 2:
            t0 = _perf_counter()
            sleep(1)
            _device_sync()
            t1 = _perf_counter()
            clean = clean + 1 if (t1 - t0) * 1e6 <= GPU_OURS_PROBE_US else 0
            if clean < 2 and t1 > deadline:
                return False
        return True


class HostClock:
    """The host clock alone, for tests of the loop without a GPU. Never used for a reported number."""

    cache = "hot"
    l2_bytes = 0
    last_tail_us = 0.0

    def time(self, fn: Callable[[], Any]) -> tuple[float, float, Any]:
        t0 = time.perf_counter()
        out = fn()
        us = (time.perf_counter() - t0) * 1e6
        return us, us, out

    def back_to_back(self, fns: list[Callable[[], Any]], calls: int, issue: bool = True) -> BackToBack:
        out = BackToBack()
        for i in range(calls):
            t0 = time.perf_counter()
            fns[i % len(fns)]()
            us = (time.perf_counter() - t0) * 1e6
            out.wall_us.append(us)
            if issue:
                out.issue_us.append(us)
            out.copy.append(i % len(fns))
        out.batch_us.append(sum(out.wall_us))
        out.plain_us += [plain_loop_us(fns, calls // 2, lambda: None) for _ in range(PLAIN_PER_BATCH)]
        return out

    def flush_us(self) -> float:
        return 0.0

    def sync(self) -> None:
        pass


Side = Callable[[], Any]


def time_graph(fn: Side, clock, rounds: int = 50) -> list[float] | None:
    """Event times of replaying `fn` captured as a CUDA graph; None when it cannot be captured (a host sync,
    a CPU tensor, an allocation the graph cannot own)."""
    import torch
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        torch.cuda.synchronize()
    except Exception:
        torch.cuda.synchronize()
        return None
    times = []
    for _ in range(rounds):
        event_us, _, _ = clock.time(graph.replay)
        times.append(event_us)
    return times


_EMPTY = None


def empty_launch() -> Callable[[], None]:
    """A launch of an empty Triton kernel: the least any kernel call costs, timed the same way as the sides."""
    global _EMPTY
    if _EMPTY is None:
        import triton

        @triton.jit
        def _kernel_lsp_empty():
            pass

        _EMPTY = _kernel_lsp_empty
    kernel = _EMPTY
    return lambda: kernel[(1,)]()
