"""Adversarial verification of an implementation against its PyTorch reference. Runs in the checker's process.

The Verifier plans and drives the runs; rules.py judges what they collected. For each input variant (see
variants.py): the truth is the reference in float64 and PyTorch's own error the reference in the task's dtype, both
computed here; the implementation runs in the player (checker/player.py), another process that holds nothing of
this one, twice, its allocations poisoned first with NaN and then with a finite sentinel drawn per check, so
unwritten elements are identified and repeatability is checked. The inputs come back as the call left them
(mutation), launches are counted (fallback), outputs of earlier calls are kept (stale results), and under the
interpreter every memory access is bounds-checked in the player (KL208, collected here). An implementation that
raises is KL209, also decided here.

Findings are aggregated per (code, line): the first failing variant gives the message, the others are
listed. The per-variant table goes to the kernel facts for hover and JSON.

The Verifier is a coordinator of five parts, each a class in a module of its own, built here over one shared
context (context.py: the check's inputs, the record every part writes, the sizes the schedule settles on):
the schedule (schedule.py, VariantSchedule) plans and drives the variants; the runs (runs.py, VariantRuns) run one
variant and gather its evidence record; the reference side (truth.py, ReferenceTruth) gives the reference's outputs,
their float64 truth and the error budget's parts; the shrinking (shrink.py, Shrinking) re-runs a failure at smaller
sizes and names a layout failure's inputs; the findings (findings.py, Findings) place, preview and report the
findings and the per-variant table. Each part is handed the parts it calls, and nothing else.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from .context import Failure, VerifyContext, VerifyState
from .findings import Findings
from .rules import judge, judge_random, same
from .runs import VariantRuns, screen_on_cpu
from .schedule import VariantSchedule
from .shrink import Shrinking
from .truth import ReferenceTruth

# judge, judge_random and same stay importable here: run/tamper.py watches them under this module's name, beside the
# modules that call them (schedule.py, shrink.py, truth.py). screen_on_cpu: tests import it from here.
__all__ = ["Failure", "Verifier", "VerifyState", "judge", "judge_random", "same", "screen_on_cpu", "verify_problem"]


class Verifier:
    """One verification: its parts, built over one context, and the order they run in (run)."""

    def __init__(self, problem, player, rep, job):
        recorder = player.recorder
        self.ctx = VerifyContext(problem, player, rep, job, recorder,
                                 interpreted=os.environ.get("TRITON_INTERPRET") == "1",
                                 state=VerifyState(launch_mark=len(recorder.launches)))
        self.findings = Findings(self.ctx)
        self.truth = ReferenceTruth(self.ctx)
        self.runs = VariantRuns(self.ctx, self.truth, self.findings)
        self.shrinking = Shrinking(self.ctx, self.runs)
        self.schedule = VariantSchedule(self.ctx, self.runs, self.findings, self.truth,
                                        self.shrinking.name_layout_culprits)

    def run(self, before_report: Callable[[], Any] | None = None) -> None:
        """Every variant (each failure previewed as it is found), `before_report` (the compile stage, when it runs
        after the variants: pipeline.py), the failures shrunk, then the final findings and the kernel facts."""
        seconds = self.schedule.run_variants()
        if before_report is not None:
            before_report()
        if not self.truth.unrepeatable:
            self.shrinking.shrink_failures()
        self.findings.report(seconds, self.truth.unrepeatable)

    # What the evidence runs that follow read of the verification (pipeline.py).
    @property
    def base(self) -> dict:
        """The knobs of the value and layout variants (the CPU sizes)."""
        return self.ctx.sizing.base

    @property
    def sizes(self) -> Any:
        """The size plan (shapes.size_plan); None before the variants are planned."""
        return self.ctx.sizing.sizes

    @property
    def sign_free(self) -> list[str] | None:
        """The sign-free decompositions the reference calls (signs.py); None when never asked."""
        return self.truth.sign_free


def verify_problem(problem, player, rep, job, captured_output: Any = None,
                   before_report: Callable[[], Any] | None = None) -> "Verifier":
    """Verify; `before_report` runs after the variants and before the final findings (which replace the previews
    shown as failures were found). The capture run's output (`captured_output`) is never an "earlier call" for the
    stale-result rule: under the interpreter it is dry (no kernel ran), so any output would "equal" it by accident."""
    v = Verifier(problem, player, rep, job)
    v.run(before_report)
    return v
