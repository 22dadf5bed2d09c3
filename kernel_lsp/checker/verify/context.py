"""What the verifier's parts share (verifier.py puts them together): the check's fixed inputs (`VerifyContext`: the
problem, the player and its launch recorder, the reporter, the job), the record every part writes as the variants
run (`VerifyState`: failures, table rows, skipped variants, earlier outputs, the current variant's launch mark, the
probing flag, the operation budget) and the sizes the schedule settles on (`Sizing`). Each field says who writes it;
no judgement is made here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...model import VariantRow
from .plan.variants import Variant


@dataclass
class Failure:
    code: str
    variant: Variant
    message: str
    line: int | None
    data: dict[str, Any] = field(default_factory=dict)
    severity: str | None = None  # "warning" to lower the code's own severity (no float64 truth)


@dataclass
class VerifyState:
    """The record the parts write as the variants run; a re-run that explains a failure (shrink.py) cuts back what
    it added."""

    failures: list[Failure] = field(default_factory=list)  # Findings.fail
    rows: list[VariantRow] = field(default_factory=list)  # Findings.row; the schedule sets each row's seconds
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (variant, why): any part
    outputs: list[list] = field(default_factory=list)  # recent implementation outputs, for the stale check
    prints: dict = field(default_factory=dict)  # fingerprints of all earlier informative outputs -> their variant
    sketches: list = field(default_factory=list)  # and their sketches, at positions drawn by `positions`
    positions: Any = None  # a torch.Generator seeded from the system's randomness, once per verification
    launch_mark: int = 0  # launches before it belong to earlier variants (the schedule sets it per variant)
    probing: bool = False  # re-runs that explain a finding (shrink.py) show nothing live
    budget: int | None = None  # interpreter operations one call may take (a block-size variant's budget)
    draws_confirmed: bool = False  # a random op's finding stood on more of the reference's draws (rules.judge_random)

    def mark(self) -> tuple[int, int, int]:
        """Where the failures, rows and skipped variants end: `cut` drops what is added after it."""
        return len(self.failures), len(self.rows), len(self.skipped)

    def cut(self, mark: tuple[int, int, int]) -> None:
        del self.failures[mark[0]:], self.rows[mark[1]:], self.skipped[mark[2]:]


@dataclass
class Sizing:
    """The sizes the schedule (schedule.py) settles on, read by the block-size plan, the shrinking, the report and the
    evidence runs."""

    base: dict = field(default_factory=dict)  # the knobs of the value and layout variants
    sizes: Any = None  # the size plan (shapes.size_plan): sizes read from the inputs
    reductions: set[str] = field(default_factory=set)  # knobs that size only a reduction (shortened last)
    at_least: int = 0  # the largest small int argument of the call: sizes never shrink below it
    first_ops: int = 0  # interpreter operations of the first variant's run, which decide CPU sizes
    first_cpu_seconds: float = 0.0  # CPU time of the first variant (reported)


@dataclass
class VerifyContext:
    """One verification's fixed inputs, with the record and the sizes its parts share."""

    problem: Any
    player: Any
    rep: Any  # the Reporter (reporter.py)
    job: Any  # the CheckJob
    recorder: Any  # the player's launch recorder (RemoteRecorder)
    interpreted: bool  # Triton's CPU interpreter (TRITON_INTERPRET=1), else a GPU
    state: VerifyState = field(default_factory=VerifyState)
    sizing: Sizing = field(default_factory=Sizing)

    def launch_line(self) -> int | None:
        """Placement when no store is known: the launch site, else the kernel def."""
        return self.rep.launch_line(self.recorder)

    def launched(self) -> list:
        """The launches of the current variant (since the state's launch mark)."""
        return self.recorder.launches[self.state.launch_mark:]
