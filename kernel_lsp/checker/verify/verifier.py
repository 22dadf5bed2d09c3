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

The Verifier is this module's state (its __init__) and one mixin per part, each a module of its own:
schedule.py plans and drives the variants (VariantSchedule), runs.py runs one variant and gathers its evidence
record (VariantRuns), truth.py computes its reference side: the reference's outputs, their float64 truth and the
error budget's parts (ReferenceTruth), shrink.py shrinks a failure and names a layout failure's inputs (Shrinking),
findings.py places, previews and reports the findings and the per-variant table (Findings).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable

from ...model import VariantRow
from .findings import Failure, Findings
from .plan.variants import Variant
from .rules import draw_sentinel, judge, judge_random, same
from .runs import VariantRuns, screen_on_cpu
from .schedule import VariantSchedule
from .shrink import Shrinking
from .truth import ReferenceTruth

# judge, judge_random and same stay importable here: run/tamper.py watches them under this module's name, beside the
# modules that call them (schedule.py, shrink.py, truth.py). screen_on_cpu: tests import it from here.
__all__ = ["Failure", "Verifier", "VerifyState", "judge", "judge_random", "same", "screen_on_cpu", "verify_problem"]


@dataclass
class VerifyState:
    failures: list[Failure] = field(default_factory=list)
    rows: list[VariantRow] = field(default_factory=list)
    outputs: list[list] = field(default_factory=list)  # recent implementation outputs, for the stale check
    prints: dict = field(default_factory=dict)  # fingerprints of all earlier informative outputs -> their variant
    sketches: list = field(default_factory=list)  # and their sketches, at positions drawn by `positions`
    positions: Any = None  # a torch.Generator seeded from the system's randomness, once per verification


class Verifier(VariantSchedule, VariantRuns, ReferenceTruth, Shrinking, Findings):
    """One verification: the state its parts share (__init__; the mixins' modules, above, say what each does)."""

    def __init__(self, problem, player, rep, job):
        self.first_cpu_seconds = 0.0  # CPU time of the first variant (reported)
        self.first_ops = 0  # interpreter operations of the first variant, which decide CPU sizes
        self.reductions: set[str] = set()  # knobs that size only a reduction (shortened last)
        self.at_least = 0  # the largest small int argument of the call: sizes never shrink below it
        self.impl_runs = 0  # calls of the implementation so far (the planner counts operations per call)
        self.problem, self.player, self.rep, self.job = problem, player, rep, job
        self.ran: list[Variant] = []  # the variants run, in order
        self.ties_reference = None  # the ties variant's fresh model, its float state at powers of two
        self.sign_free: list[str] | None = None  # the sign-free decompositions the reference calls (signs.py)
        self.module_built_at: tuple[dict, dict] = ({}, {})  # the same-module variant's model: (knobs, setting) built at
        self.recorder = player.recorder
        self.interpreted = os.environ.get("TRITON_INTERPRET") == "1"
        # On a GPU the interpreter's bounds guard does not exist: guard bytes around every tensor catch stores.
        self.gpu_guards = not self.interpreted
        self.sentinel = draw_sentinel()  # the second run's poison, drawn per check: no fixed value to look for
        self.budget: int | None = None  # interpreter operations one call may take (a block-size variant's budget)
        self.ops = 0  # interpreter operations of the implementation's calls so far
        self.writers: list | None = None  # per output of the last first run: the line that stored each element
        self.store_lines: list | None = None
        self.state = VerifyState()
        recorder = self.recorder
        self.launch_mark = len(recorder.launches)  # launches before it belong to earlier variants
        self.captured = {launch.spec.name for launch in recorder.launches}  # what the problem's own inputs ran
        self.skipped: list[tuple[str, str]] = []
        self.profile: list[str | None] = []  # the sign of each input in the problem's own distribution
        self.outside: dict[str, str] = {}  # variant -> how its inputs leave that distribution
        self.probing = False  # re-runs that explain a finding (probes.py) show nothing live
        self.configs: dict[str, tuple[str, int, int, str]] = {}  # config variant -> (kernel, index, of, config)
        # The reference called twice on the same inputs (once per check): None until then, "" when it repeated,
        # else where it changed (KL007: no value is judged against a reference that does not repeat itself).
        self.unrepeatable: str | None = None
        self.limits: dict[str, list[str]] = {}  # the interpreter's limit -> the variants it stopped
        # Block-size variants stopped past their operations budget: (variant, budget, names of the kernels launched
        # in it).
        self.stopped: list[tuple[str, int, set[str]]] = []
        self.fresh_draws: bool | None = None  # random ops: the reference draws new numbers on every call
        self.before_report: Callable[[], Any] | None = None  # runs between the variants and the final findings

    # Placement: the tl.store that wrote the bad element, else the launch site, else the kernel def.
    def launch_line(self) -> int | None:
        return self.rep.launch_line(self.recorder)

    def problem_reference_file(self) -> str:
        return self.job.link.reference


def verify_problem(problem, player, rep, job, captured_output: Any = None,
                   before_report: Callable[[], Any] | None = None) -> "Verifier":
    """Verify; `before_report` runs after the variants and before the final findings (which replace the previews
    shown as failures were found)."""
    v = Verifier(problem, player, rep, job)
    v.before_report = before_report
    v.run(captured_output)
    return v
