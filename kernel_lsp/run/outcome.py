"""How one worker job ended, as the parent saw it: its events, and how the process behaved (exit status, signal,
timeout, cancel, a worker that never started). One type for cold children, forked children and long-lived
workers alike; check.py turns it into findings."""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass, field

from ..codes import severity_of
from ..jobs import Done, Event, FindingEvent, Stage, Stat, crash_hint
from ..model import FileReport, Finding, Severity, Span


MAX_WAITED_S = 600.0  # the most of a job's waits its time limit leaves out (a GPU's lease is waited for 600 s at most)


class TimeLimit:
    """A job's time limit, counted as the checked code's time: the seconds since `start`, less the job's waits for
    something that is not the checked code, as the worker says them (a Stage with `wait` set, until its next stage:
    jobs.Sink.wait), MAX_WAITED_S of them at most. Eight checks at once on one GPU wait for each other's timings; a
    file's 60 s ran out in those waits (KL301, H200 2026-12-06)."""

    def __init__(self, seconds: float, start: float | None = None):
        self.seconds, self.start = seconds, time.monotonic() if start is None else start
        self.waited, self.since = 0.0, None

    def saw(self, event, now: float | None = None) -> None:
        """An event of the job, as it arrived."""
        if not isinstance(event, Stage):
            return
        now = time.monotonic() if now is None else now
        if self.since is not None:
            self.waited += now - self.since
            self.since = None
        if event.wait:
            self.since = now

    def left_out(self, now: float | None = None) -> float:
        """The seconds of waits left out so far."""
        now = time.monotonic() if now is None else now
        return min(self.waited + (now - self.since if self.since is not None else 0.0), MAX_WAITED_S)

    def passed(self, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        return now - self.start - self.left_out(now) > self.seconds


@dataclass
class WorkerOutcome:
    events: list[Event] = field(default_factory=list)
    returncode: int | None = None
    timed_out: bool = False
    waited_s: float = 0.0  # of its seconds, the waits its time limit left out (TimeLimit)
    cancelled: bool = False
    stderr_tail: str = ""
    seconds: float = 0.0
    warm: bool = False  # ran in a process that was already running (the zygote's fork, a long-lived worker)
    start_failed: str | None = None  # no worker could be started, and why
    start_seconds: float | None = None  # a worker had to start for this job: how long until it was ready
    startup: dict[str, float] = field(default_factory=dict)  # the worker's own account of its start (imports, CUDA)
    worker: str = ""  # which worker ran it: "local", "gpu-2", "runner-0" (the report says which GPU timed a file)

    @property
    def completed(self) -> bool:
        return any(isinstance(e, Done) for e in self.events)

    @property
    def signal_name(self) -> str | None:
        if self.returncode is not None and self.returncode < 0:
            try:
                return signal.Signals(-self.returncode).name
            except ValueError:
                return f"signal {-self.returncode}"
        return None

    def last_stage(self) -> Stage | None:
        stages = [e for e in self.events if isinstance(e, Stage)]
        return stages[-1] if stages else None

    def add_stat(self, stat: Stat) -> None:
        """A stat of how the job ran (`retried`), before its Done, as the worker's own stats are."""
        at = next((i for i, e in enumerate(self.events) if isinstance(e, Done)), len(self.events))
        self.events.insert(at, stat)

    def out_of_memory(self) -> bool:
        """Whether the job ended in a KL302 (out of GPU or host memory)."""
        return any(isinstance(e, FindingEvent) and e.finding.code == "KL302" for e in self.events)


def how_it_ended(outcome: WorkerOutcome, report: FileReport, anchor: Span, timeout_source: str = "",
                 verify: bool = False) -> list[Finding]:
    """The findings of how a job's process ended, judged from its outcome (the events already in `report`): none for
    a cancel or a job done with a verdict; KL300 for a job done without one (with verification on), or a worker that
    died; KL301 for a timeout; KL303 for no worker at all. Where the stage it died in is known, the message says it.
    """
    if outcome.cancelled:
        return []
    if outcome.completed:
        return _without_a_verdict(report, anchor) if verify else []
    if outcome.start_failed:
        return [Finding(report.path, anchor, severity_of("KL303"), "KL303",
                        f"no worker to run this file: {outcome.start_failed}",
                        source="kernel-lsp.worker", data={"stderr": outcome.stderr_tail[-2000:]})]
    stage = outcome.last_stage()
    during = f" during {stage.stage}" + (f" ({stage.detail})" if stage.detail else "") if stage else ""
    data = {"stage": stage.to_dict() if stage else None, "stderr": outcome.stderr_tail[-2000:]}
    if outcome.timed_out:
        return [Finding(report.path, anchor, severity_of("KL301"), "KL301",
                        f"the worker timed out after {outcome.seconds:.0f} s{during}"
                        + (f" ({outcome.waited_s:.0f} s of them waiting for the GPU or the compile warmer, which the "
                           f"limit leaves out)" if outcome.waited_s >= 1 else "") + "; "
                        f"raise {timeout_source or 'the timeout'} if the kernel is just slow",
                        source="kernel-lsp.worker", data=data)]
    sig = outcome.signal_name
    hint = crash_hint(outcome.stderr_tail)
    what = f"was killed by {sig}" if sig else f"exited with status {outcome.returncode}"
    return [Finding(report.path, anchor, severity_of("KL300"), "KL300",
                    f"the worker running this file {what}{during}{hint}", source="kernel-lsp.worker", data=data)]


def _without_a_verdict(report: FileReport, anchor: Span) -> list[Finding]:
    """A worker that says it is done, with verification on, must have verified something or said why not. Its
    output file is written from the process the checked code runs in: code that ends that process early after
    writing "done" there (or rewrites the file) would otherwise leave a clean report with nothing verified."""
    said = any(f.severity <= Severity.WARNING or f.code in ("KL104", "KL106", "KL210", "KL205")
               for f in report.findings)
    if said or any(k.verification is not None for k in report.kernels.values()):
        return []
    return [Finding(report.path, anchor, severity_of("KL300"), "KL300",
                    "the worker reported the check done without a verdict: the checked code ended its process or "
                    "rewrote what the worker reports", source="kernel-lsp.worker")]
