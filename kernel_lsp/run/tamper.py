"""Did a job's code change the process a long-lived worker keeps for the next job? Worker side.

The implementation runs in a player (player/tamper.py watches it there); the reference and its input factory run in
the worker, and a long-lived GPU worker runs every job's reference in one process. Code that replaces a function of torch, Triton or the
clock there (`torch.cuda.Event.elapsed_time`, `torch.allclose`, `time.perf_counter`) would still be in place for the
next file, which it could make pass or look fast. `Snapshot` records what those functions are before the first job;
`changed()` after each job lists the ones that are no longer the same objects, and the worker then retires
(serve.py), so the next job starts in a fresh process. The list is what a verdict or a timing rests on, not every
attribute (torch.compile itself sets some of those as it warms up).

kernel-lsp's own modules and classes are listed as the imported objects, and named from them (`where`): a module
that moves or a class that is renamed changes its entry with it, instead of leaving a dotted string that resolves to
nothing and silently watches nothing. Importing this module imports the checker (and torch): worker side only.
"""

from __future__ import annotations

import types

from .. import jobs
from ..checker import pipeline, reporter
from ..checker.verify import rules, schedule, shrink, truth, verifier
from ..player import tamper as base
from . import protocol


def where(obj: types.ModuleType | type) -> str:
    """The dotted name the player's resolver finds `obj` by (player/tamper.py `_resolve`): a module's name, or a
    class's module and qualified name (`__main__.StreamSink` for serve.py run as `python -m`)."""
    return obj.__name__ if isinstance(obj, types.ModuleType) else f"{obj.__module__}.{obj.__qualname__}"


# The player's list (what a kernel's call could bend), and kernel-lsp's own channel and judges in this process: a
# reference that drops the findings on their way out, or passes every comparison, replaces one of these.
OWN_FUNCTIONS: list[tuple[types.ModuleType, list[str]]] = [
    (rules, ["judge", "judge_random", "same"]),
    (verifier, ["judge", "judge_random", "same"]),
    (schedule, ["judge", "judge_random"]),  # the Verifier's parts that call them (verifier.py re-exports them)
    (shrink, ["judge", "judge_random"]),
    (truth, ["same"]),
]
OWN_CLASSES: list[tuple[type, list[str]]] = [
    (jobs.Sink, ["stage", "wait", "finding", "preview", "kernel", "stat"]),
    (protocol.EventWriter, ["emit"]),
    (reporter.Reporter, ["add", "preview"]),
    (pipeline.StageTracker, ["emit"]),
]
WATCHED = {**base.WATCHED, **{where(module): names for module, names in OWN_FUNCTIONS}}
CLASSES = {**base.CLASSES, **{where(cls): names for cls, names in OWN_CLASSES}}


class Snapshot(base.Snapshot):
    def __init__(self, *more: tuple[type, list[str]]) -> None:
        """`more`: (class, method names) of the caller's own module, which cannot be imported here: serve.py's
        StreamSink (serve.py imports this module, and runs as `python -m`, so its module is `__main__`)."""
        super().__init__(WATCHED, {**CLASSES, **{where(cls): names for cls, names in more}})


def finding_for(replaced: list[str], path: str, anchor, who: str = "the checked code"):
    """KL223 for a job whose code replaced watched functions, or None."""
    if not replaced:
        return None
    from ..checker.reporter import replaced_text
    from ..codes import severity_of
    from ..model import Finding
    return Finding(path, anchor, severity_of("KL223"), "KL223", replaced_text(replaced, who),
                   source="kernel-lsp.worker", data={"replaced": replaced})


class TimerCheck:
    """Do the GPU's events still tell time? Calibrated before any job (a sleep kernel of about 2 ms, on the events
    and the host clock), checked after each: code that patched the CUDA runtime below Python (its GOT entries for
    cudaEventElapsedTime, say) would make every later job's timings lie."""

    def __init__(self) -> None:
        import torch
        self.torch = torch
        self.cycles = 1 << 22
        torch.cuda._sleep(1 << 10)
        self.us = self._events_us()

    def _events_us(self) -> float:
        torch = self.torch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        torch.cuda._sleep(self.cycles)
        end.record()
        torch.cuda.synchronize()
        return torch._C._CudaEventBase.elapsed_time(start, end) * 1e3

    def broken(self) -> bool:
        try:
            return self._events_us() < 0.5 * self.us
        except Exception:
            return True
