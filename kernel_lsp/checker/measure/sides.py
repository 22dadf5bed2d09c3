"""The sides the measure stage times, and their timing: the implementation in the player (RemoteSide, timed there
through SplitClock), PyTorch eager and torch.compile of the reference here. Under the GPU's lease (gpu_lease.py): an
empty launch, the sides interleaved and then each back to back (once more when another process used the GPU
meanwhile), CUDA-graph replays of short calls, and each side's times with the launch overhead taken off. GPU only.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from ...jobs import CheckJob
from . import baselines, neighbours
from ..problem.errors import is_device_fault, is_out_of_memory
from .report import SOURCE
from .stats import median
from .timing import BackToBack, back_to_back_calls, honest_times, time_back_to_back, time_graph, time_sides, empty_launch
from ..verify.plan.variants import clone_inputs

GRAPH_BELOW_US = 40.0  # calls shorter than this are also replayed as CUDA graphs, to tell launch overhead apart


class RemoteSide:
    """A side timed in the player (player/timed.py): the implementation (or another version of it, built there), its
    input copies sent once; its calls are `RemoteCall`s, which `SplitClock` times there."""

    def __init__(self, player, impl, copies: list, cache: str):
        self.player, self.impl = player, impl
        answer = player.time({"do": "setup", "model": impl.id, "copies": copies, "cache": cache})
        if answer.get("error"):
            raise _remote(answer["error"])
        self.calls = [RemoteCall(self, i) for i in range(len(copies))]

    def ask(self, do: str, **more) -> dict:
        answer = self.player.time({"do": do, "model": self.impl.id, **more})
        if answer.get("error"):
            raise _remote(answer["error"])
        return answer


def _remote(info: dict):
    from ..player import remote_error
    return remote_error(info)


class RemoteCall:
    """Copy `copy` of a remote side: called plainly (a warm-up), or timed by `SplitClock`."""

    def __init__(self, side: RemoteSide, copy: int):
        self.side, self.copy = side, copy

    def __call__(self):
        self.side.ask("call", copy=self.copy)


class SplitClock:
    """The clock of the sides this process times (eager, torch.compile), and the player's for a remote side: one
    timed call, a back-to-back batch and a graph replay each run in the process that holds the side, by the same
    clock code (player/clock.py), while the other process waits on the wire.

    Before each side of its own (after the player's turn), `quiet` stops the player's processes (the implementation's
    threads, whatever it started: run/players.py `Hold`) until the player's next turn, and waits until the GPU is
    this process's (`gpu_ours`: work they queued before they stopped has run out). What did not stop is kept in
    `not_stopped`, a GPU that stayed busy in `gpu_busy`: `held_up` says them once NVML has said whose the GPU's other
    work was."""

    def __init__(self, local, player=None):
        self.local, self.cache, self.l2_bytes = local, local.cache, getattr(local, "l2_bytes", 0)
        self.last_tail_us = 0.0
        self.player = player if hasattr(player, "stop") else None  # (the stage's CPU tests pass stand-ins)
        self.not_stopped: list[str] = []
        self.gpu_busy = False

    def quiet(self) -> None:
        if self.player is None or self.player.held:
            return
        running = self.player.stop()
        if running:
            what = f"{running} of the implementation's processes did not stop within a second"
            if what not in self.not_stopped:
                self.not_stopped.append(what)
        ours = getattr(self.local, "gpu_ours", None)
        if ours is not None and self.player.holder is not None and not ours():
            self.gpu_busy = True

    def reset(self) -> None:
        self.not_stopped, self.gpu_busy = [], False

    def held_up(self, others_busy: bool) -> list[str]:
        """What of the implementation's went on outside its calls: processes that did not stop, and a GPU that stayed
        busy once they had stopped, unless NVML named another process than the implementation's that used it
        (`others_busy`: then it is that process's, KL408)."""
        busy = ["the GPU stayed busy after the implementation's processes had stopped (work they had queued)"]
        return self.not_stopped + (busy if self.gpu_busy and not others_busy else [])

    def time(self, fn):
        if isinstance(fn, RemoteCall):
            r = fn.side.ask("once", copy=fn.copy)
            self.last_tail_us = float(r.get("tail_us") or 0.0)
            return float(r["event_us"]), float(r["host_us"]), None
        self.quiet()
        out = self.local.time(fn)
        self.last_tail_us = getattr(self.local, "last_tail_us", 0.0)
        return out

    def back_to_back(self, fns, calls: int, issue: bool = True) -> BackToBack:
        if isinstance(fns[0], RemoteCall):
            return BackToBack(**fns[0].side.ask("b2b", calls=calls, issue=issue)["b2b"])
        self.quiet()
        return self.local.back_to_back(fns, calls, issue)

    def graph(self, fn) -> list[float] | None:
        if isinstance(fn, RemoteCall):
            return fn.side.ask("graph").get("graph")
        self.quiet()
        return time_graph(fn, self.local)

    def flush_us(self) -> float:
        self.quiet()
        return self.local.flush_us()

    def sync(self) -> None:
        self.local.sync()


def _sides_to_time(problem, player, opts, impl, pristine: list, k: int) -> tuple[dict, RemoteSide]:
    """The implementation's side, k calls on copies of the inputs of its own held by the player, and the other
    version of the implementation when measure.against names one. Returns them and the implementation's
    RemoteSide; the baselines join them (_add_baselines)."""
    remote = RemoteSide(player, impl, baselines.input_copies(pristine, k), opts.cache)
    sides = {"triton": remote.calls}
    if opts.against is not None and problem.build_other is not None:
        current = problem.build_other(opts.against)
        sides["current"] = RemoteSide(player, current, baselines.input_copies(pristine, k), opts.cache).calls
    return sides, remote


def _add_baselines(sides: dict, rep, job: CheckJob, ref, pristine: list, k: int, clock,
                   where) -> dict[str, tuple[float, bool]]:
    """Add each baseline the job asks for (baselines.py) to the sides, k calls on copies of the inputs of their own,
    and return the first-call costs they recorded by side; a baseline registered with `may_fail` that cannot be
    built is left out and said (KL407)."""
    first_calls: dict[str, tuple[float, bool]] = {}
    failed: list[tuple[baselines.Baseline, BaseException]] = []
    for b in baselines.wanted(job.measure):
        ctx = baselines.BaselineContext(job, rep, ref, pristine, k, clock)
        try:
            sides[b.name] = b.build(ctx)
        except Exception as e:
            if not b.may_fail or is_device_fault(e) or is_out_of_memory(e):
                raise
            failed.append((b, e))
            continue
        if ctx.first_call is not None:
            first_calls[b.name] = ctx.first_call
    built = [b.label for b in baselines.BASELINES.values() if b.name in sides] or ["no baseline"]
    for b, e in failed:
        rep.add("KL407", f"{b.what} failed ({type(e).__name__}: "
                f"{str(e).splitlines()[0][:200] if str(e) else ''}); compared with {', '.join(built)} only",
                where, source=SOURCE)
    return first_calls


def _time_empty_launch(rep, clock) -> tuple:
    """Time an empty Triton launch: the floor any call pays. Returns its timing, the median host-minus-events gap
    of a call that launches nothing, and the median of its tail."""
    rep.w.stage("measure", "an empty launch")
    clock.quiet()
    empty = time_sides({"empty": empty_launch()}, clock.local, min_rounds=20, max_rounds=50,
                       budget_s=0.05)["empty"]
    overhead = median([h - e for h, e in zip(empty.host_us, empty.event_us)])
    tail_overhead = median(empty.tail_us) if empty.tail_us else 0.0
    return empty, overhead, tail_overhead


def _time_sides_undisturbed(rep, player, sides: dict, clock, opts, lease_note: dict) -> tuple:
    """Time the sides interleaved, then each back to back, and once more when another process used the GPU
    meanwhile or the implementation's work went on outside its calls. Returns the interleaved samples, the
    back-to-back timings, the other processes that used the GPU, the processes the implementation started that did
    (`_whose`; what else of its went on, the clock keeps: SplitClock.held_up), and None;
    when the implementation raises during the timed calls, None for the samples and what it raised instead (a device
    fault propagates)."""
    disturbed: list = []
    started: list[str] = []
    back: dict = {}
    try:
        for attempt in range(2):  # once more when another process used the GPU meanwhile
            mine = {os.getpid(), *player.host_pids()}  # the player times its side: not a neighbour
            watch = neighbours.start(lease_note.get("uuid"), mine)
            if attempt:
                clock.reset()  # (the first attempt keeps what the empty launch's quiet saw)
            samples = time_sides(sides, clock, budget_s=opts.budget_s, precision=opts.precision)
            rep.w.stage("measure", "each side back to back (host launch included)")
            back = time_back_to_back(sides, clock, calls=back_to_back_calls(samples))
            rep.w.stage("measure", "whether another process used the GPU meanwhile")
            disturbed, started = _whose(neighbours.disturbers(watch, mine), player)
            held = clock.held_up(bool(disturbed)) + started
            if not disturbed and not held:
                break
            rep.w.stage("measure", "timing again: " + "; ".join(
                [f"another process used the GPU ({'; '.join(n.describe() for n in disturbed)})"] * bool(disturbed)
                + held))
    except Exception as e:
        if is_device_fault(e):
            raise
        return None, back, disturbed, started, (f"the implementation raised during the timed calls: "
                                                f"{type(e).__name__}: {e}")
    return samples, back, disturbed, started, None


def _whose(found: list, player) -> tuple[list, list[str]]:
    """The processes NVML saw on the GPU during the timing, told apart: another's (KL408), and what the implementation
    started (its work outside its calls, KL406), said."""
    tree = set(player.tree_pids())
    started = [n for n in found if n.pid in tree]
    others = [n for n in found if n.pid not in tree]
    said = ["a process the implementation started used the GPU (" + "; ".join(n.describe() for n in started) + ")"]
    return others, said if started else []


def _graph_replays(rep, clock, sides: dict, samples) -> dict[str, list[float] | None]:
    """Each side's CUDA-graph replay times when the implementation's call is short enough to be launch-bound (on a
    GPU, after timings that succeeded); otherwise none."""
    import torch
    graphs_needed = samples is not None and torch.cuda.is_available()
    graphs: dict[str, list[float] | None] = {}
    if graphs_needed and median(samples["triton"].event_us) < GRAPH_BELOW_US:
        rep.w.stage("measure", "CUDA graph replay")
        graphs = {name: clock.graph(fns[0]) for name, fns in sides.items()}
    return graphs


def _honest_side_times(samples, back: dict, overhead: float, tail_overhead: float, flush_us: float) -> tuple:
    """Each side's times with the empty launch's overhead taken off, and the timers they come from: the host clock
    replaces the events for a side whose events saw far less than the host did back to back."""
    times, timers = {}, set()
    for name, s in (samples or {}).items():
        times[name], timer = honest_times(s, overhead, tail_overhead)
        if name in back and back[name].events_under_report(flush_us):
            timer = "host clock"  # the events saw far less than the host: another stream, or a patched timer
            times[name] = [max(h - overhead, e) for h, e in zip(s.host_us, s.event_us)]
        timers.add(timer)
    return times, timers


@contextlib.contextmanager
def _gpu_lease(rep, job: CheckJob, torch):
    """Hold this GPU's timing lease (gpu_lease.py) around the timed calls; on a machine without CUDA (the stage's
    CPU tests) there is nothing to hold."""
    note: dict[str, Any] = {}  # the GPU's uuid and index, the seconds waited
    if not torch.cuda.is_available():
        yield note
        return
    from . import gpu_lease
    uuid, index = gpu_lease.gpu_identity()
    note.update(uuid=uuid, index=index)

    def waiting(holder: str):
        return rep.w.wait("measure", f"waiting for GPU {index}: another check is timing"
                          + (f" ({holder})" if holder else ""))
    with gpu_lease.lease(uuid, f"timing {os.path.basename(job.path)}", waiting) as waited:
        note["waited"] = round(waited, 3) if waited >= 0.05 else None
        yield note
