"""How one worker job ended, as the parent saw it: its events, and how the process behaved (exit status, signal,
timeout, cancel, a worker that never started). One type for cold children, forked children and long-lived
workers alike; check.py turns it into findings."""

from __future__ import annotations

import signal
from dataclasses import dataclass, field

from ..jobs import Done, Event, FindingEvent, Stage, Stat


@dataclass
class WorkerOutcome:
    events: list[Event] = field(default_factory=list)
    returncode: int | None = None
    timed_out: bool = False
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
