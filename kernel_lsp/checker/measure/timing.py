"""Timing methods: one small function per method, each taking callables and budgets and returning plain numbers.
Runs in a worker on a GPU (the statistics are in stats.py, the roofline in roofline.py).

One timed call, on every side alike (`CudaClock.time`), starting from an idle GPU (the previous call ended with a
device-wide synchronize):
1. cold L2 (the default): a write of max(2 x L2, 256 MB) is queued, evicting the previous call's data; then a
   spin of CUSHION_US on the GPU (both modes). While the GPU runs them, the host records the start event and
   launches the call, so the launch overhead overlaps with them as in triton.testing.do_bench. The flush alone
   (about 65 us on an H200) did not always cover it: in 3 of 12 fresh processes the host took longer to launch
   a Triton call than the GPU took to flush, and gelu measured 6-27% slower with a tight interval, while eager
   (launched from C++) did not move (docs/performance-method.md);
2. a CUDA event on the current stream, the call, a second event;
3. a wait for the second event (the caller's stream alone), then a device-wide synchronize, so work on any stream
   has finished before the next call. The time the device-wide synchronize still waits (the tail) is work this
   process left on other streams: when it is much longer than an empty launch's, work ran outside the caller's
   stream and the host clock around 1-3 is the honest number. Another process busy on the same GPU slows the
   calls but leaves no tail: contention is not taken for escaped work.

`time_back_to_back` is the other clock a user meets, in three passes per batch: calls issued back to back with an
event pair around each and the flush between them, as `triton.testing.do_bench` times (the events' view, for the
escaped-work rule); the host's time to issue each call with the GPU idle (the Python wrapper, for KL404; in the first
ISSUE_ROUNDS rounds only); and a plain
loop, with no flush and no event pair between its calls, timed to its final synchronize by the host and by one
event pair around the whole loop (the longer counts): what a loop that calls the side pays per call, the host's
launch included. The flush gives the host a head start of its own length
(about 61 us on an H200) on every timed call, so do_bench reads a wrapper that takes up to that much longer than its
kernels as its kernels' time, which a loop without flushes does not (H200, 2026-12-02: rms_norm's torch.compile
42 us in do_bench's loop, 71 us per call in a plain loop); the plain loop runs with the L2 as a loop leaves it (warm
where the data fits).

`time_sides` interleaves the sides (A B C, B C A, C A B, ...) so a change of clocks hits all alike, after a
warm-up, until each side has enough samples and the budget is spent. Each side may have several copies of its
inputs (at different addresses); calls rotate through them so the result does not hang on one memory placement,
and each sample records its copy, for the clustered bootstrap in stats.py. `time_graph` replays a CUDA graph of the
call (launch overhead gone; no L2 flush inside the graph, so it is hot by nature). `HostClock` exists for tests
of the loop on machines without a GPU; its numbers are never reported.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ...player.clock import (CUSHION_US, ESCAPE_FRACTION, ESCAPE_MIN_US, FLUSH_MIN_BYTES, PLAIN_LONG_US,  # noqa: F401
                             PLAIN_PER_BATCH, BackToBack, CudaClock, HostClock, Side, empty_launch, plain_calls,
                             plain_loop_us, time_graph)


@dataclass
class Samples:
    event_us: list[float] = field(default_factory=list)
    host_us: list[float] = field(default_factory=list)
    copy: list[int] = field(default_factory=list)  # which input copy each sample used
    last_output: Any = None
    tail_us: list[float] = field(default_factory=list)  # what the device-wide synchronize waited after the stream

    def add(self, event_us: float, host_us: float, copy: int = 0, tail_us: float = 0.0) -> None:
        self.event_us.append(event_us)
        self.host_us.append(host_us)
        self.copy.append(copy)
        self.tail_us.append(tail_us)




def time_sides(sides: dict[str, Side | list[Side]], clock, *, warmup: int = 3, min_rounds: int = 10,
               max_rounds: int = 200, budget_s: float = 1.0, precision: float = 0.0,
               impl: str = "triton") -> dict[str, Samples]:
    """Interleaved samples of every side: each round calls every side once, the order rotating by one each round.
    A side given as a list of callables (one per input copy) uses copy `round % len` in each round.

    With `precision` > 0 the rounds also stop, from PRECISE_MIN_ROUNDS on, once every side's 95% interval of its
    median (clustered by input copy, as the report computes it) lies within +-precision of that median, or once
    every speedup of `impl` over another side is settled (`_settled`): more samples would only narrow intervals
    that already decide nothing at that scale."""
    copies = {name: (fn if isinstance(fn, list) else [fn]) for name, fn in sides.items()}
    for fns in copies.values():
        for fn in fns:
            for _ in range(warmup):
                fn()
    clock.sync()
    names = list(sides)
    out = {name: Samples() for name in names}
    start = time.monotonic()
    rounds = 0
    while rounds < max_rounds and (rounds < min_rounds or time.monotonic() - start < budget_s):
        for k in range(len(names)):
            name = names[(rounds + k) % len(names)]
            copy = rounds % len(copies[name])
            event_us, host_us, result = clock.time(copies[name][copy])
            out[name].add(event_us, host_us, copy, getattr(clock, "last_tail_us", 0.0))
            out[name].last_output = result
        rounds += 1
        if precision > 0 and rounds >= PRECISE_MIN_ROUNDS and rounds % PRECISE_CHECK_EVERY == 0 and (
                all(_precise(out[name], precision) for name in names) or _settled(out, impl, precision)):
            break
    return out


PRECISE_MIN_ROUNDS = 30  # a precision stop needs this many rounds: 30 samples per side, spread over the copies
PRECISE_CHECK_EVERY = 10


SETTLED_MARGIN = 0.03  # a speedup whose whole interval is this far from 1 has its verdict (perf_rules.verdict)


def _settled(out: dict[str, Samples], impl: str, precision: float) -> bool:
    """Every speedup of `impl` over another side, computed as the report computes it (stats.ratio_of_medians, clustered
    by input copy): its 95% interval within +-2 x precision of the ratio (the ratio is shown to two decimals), or
    wholly beyond SETTLED_MARGIN from 1, where more rounds would narrow it but not change its verdict. The margin
    keeps the stop from ending on a chance excursion of two sides that are equal (stopping at the first interval
    that misses 1 would make "slower" and "faster" out of noise); a noisy side whose ratio is neither keeps the
    rounds going to the budget, as before. No stop from here without `impl` and another side."""
    from .stats import ratio_of_medians
    others = [name for name in out if name != impl]
    if impl not in out or not others:
        return False
    for name in others:
        ci = ratio_of_medians(out[name].event_us, out[impl].event_us, resamples=500,
                              numerator_groups=out[name].copy, denominator_groups=out[impl].copy)
        narrow = max(ci.high - ci.estimate, ci.estimate - ci.low) <= 2 * precision * ci.estimate
        if not (narrow or ci.low > 1 + SETTLED_MARGIN or ci.high < 1 - SETTLED_MARGIN):
            return False
    return True


def _precise(samples: Samples, precision: float) -> bool:
    from .stats import median_interval
    ci = median_interval(samples.event_us, groups=samples.copy, resamples=500)
    return ci.estimate > 0 and max(ci.high - ci.estimate, ci.estimate - ci.low) <= precision * ci.estimate


def escaped(samples: Samples, tail_overhead_us: float) -> bool:
    """Did work run outside the timed stream? After the caller's stream was done, the device-wide synchronize still
    waited much longer than it does after an empty launch (`tail_overhead_us`, timed the same way): this process had
    work pending on another stream. Another process on the GPU does not make a tail."""
    from .stats import median
    gap = median(samples.tail_us) - tail_overhead_us if samples.tail_us else 0.0
    return gap > max(ESCAPE_MIN_US, ESCAPE_FRACTION * median(samples.event_us))


def honest_times(samples: Samples, overhead_us: float, tail_overhead_us: float = 0.0) -> tuple[list[float], str]:
    """The samples to report and the timer they came from. `overhead_us`: the host-minus-events gap of an empty
    launch (taken off the host clock's times)."""
    if escaped(samples, tail_overhead_us):
        return [max(h - overhead_us, e) for h, e in zip(samples.host_us, samples.event_us)], "host clock"
    return list(samples.event_us), "cuda events"


QUEUE_WARMUP = 4  # the first calls of a batch start from an idle GPU; a loop's steady state comes after them
BATCH_GPU_US = 5000.0  # about the GPU time of one back-to-back batch, past which a batch has fewer calls


def back_to_back_calls(samples: dict[str, Samples] | None, most: int = 24, least: int = 12) -> int:
    """Calls per back-to-back batch: `most` for calls of up to BATCH_GPU_US / most each, fewer (down to `least`) for
    longer ones, by the slowest side's interleaved median, the same for every side. A long call's time barely moves
    between calls and its host is ahead after the first few, so the extra calls only held the GPU (matmul_fp32 on an
    H100, 2026-12-06: 3.4 s back to back of an 8 s lease)."""
    from .stats import median
    medians = [median(s.event_us) for s in (samples or {}).values() if s.event_us]
    if not medians:
        return most
    return max(least, min(most, int(BATCH_GPU_US / max(max(medians), 1e-3))))


ISSUE_ROUNDS = 2  # the rounds whose batches also take each call's issue time (the host's time: their median)


def time_back_to_back(sides: dict[str, list[Side]], clock, *, rounds: int = 6,
                      calls: int = 24) -> dict[str, BackToBack]:
    """Each side's back-to-back times: `rounds` batches of `calls` calls per side, the sides' batches interleaved
    (rotating order), so a change of clocks hits all alike. The first QUEUE_WARMUP calls of each batch are left out
    of the samples: after the batch's synchronize the GPU is idle and the host has not got ahead yet, which a loop
    (or do_bench's hundreds of calls) is past. Only the first ISSUE_ROUNDS rounds take the calls' issue times: their
    median (the Python wrapper's time, KL404) is settled by then, and each pass holds the GPU for a batch's calls
    with a flush and a synchronize apiece."""
    names = list(sides)
    out = {name: BackToBack() for name in names}
    for r in range(rounds):
        for k in range(len(names)):
            name = names[(r + k) % len(names)]
            batch = clock.back_to_back(sides[name], calls, issue=r < ISSUE_ROUNDS)
            skip = min(QUEUE_WARMUP, max(0, len(batch.wall_us) - 1))
            out[name].wall_us += batch.wall_us[skip:]
            out[name].issue_us += batch.issue_us[skip:]
            out[name].copy += batch.copy[skip:]
            out[name].batch_us += batch.batch_us
            out[name].wait_us += batch.wait_us
            out[name].plain_us += batch.plain_us
            out[name].batch_calls = len(batch.wall_us)
    return out


