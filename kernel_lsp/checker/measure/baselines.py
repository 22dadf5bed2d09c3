"""The baselines a verified implementation is timed against, registered the way tritonbench registers an operator's
baselines: one decorated function per baseline builds its calls, and the stage (stage.py, sides.py), the findings
(perf_rules.py) and the report (report.py) take their list, names, labels and codes from here. Adding a baseline is
one function in this module, one code in codes.py for its "slower than" finding, and its name in the output schema.

A builder gets a BaselineContext and returns the baseline's k calls, each on input copies of its own; it may record
its first call's cost (torch.compile's compile) in `ctx.first_call`. One registered with `may_fail` (torch.compile,
whose compiler can refuse a reference) that raises is left out of the measurement with a KL407 that says why, and
the others are timed as usual; any other error, out of memory included, ends the stage as before. Its side's name
also appears in schemas/check-output.schema.json. No torch at import: perf_rules stays a pure module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class BaselineContext:
    """What a builder may use: the job, the reporter (progress), the reference, pristine inputs to copy, the number
    of calls k, the clock, and where the measured kernels are launched."""
    job: Any
    rep: Any
    ref: Callable
    pristine: list
    k: int
    clock: Any
    first_call: tuple[float, bool] | None = None  # (seconds, cached) of a first call paid once, e.g. a compile

    def copies(self) -> list[list]:
        """The inputs' k copies (input_copies)."""
        return input_copies(self.pristine, self.k)


def input_copies(pristine: list, k: int) -> list[list]:
    """k copies of the inputs at different addresses, which a side's calls use in turn: a timing then does not hang
    on one memory placement (docs/performance-method.md, rotated input copies)."""
    from ..verify.plan.variants import clone_inputs
    return [clone_inputs(pristine) for _ in range(k)]


@dataclass(frozen=True)
class Baseline:
    name: str  # the side's name in the measurement, its JSON and the report ("eager")
    label: str  # how a finding names it ("PyTorch eager")
    what: str  # what failed when it cannot be built ("torch.compile of the reference")
    slower_code: str  # the finding when the implementation's whole speedup interval over it lies below 1
    build: Callable[[BaselineContext], list[Callable[[], Any]]]
    wanted: Callable[[Any], bool] = field(default=lambda opts: True)  # from the job's MeasureOptions
    severity_set_by_compile_severity: bool = False  # measure.compile-severity sets its slower finding's severity
    may_fail: bool = False  # a build that raises leaves it out (KL407) instead of ending the stage


BASELINES: dict[str, Baseline] = {}


def baseline(name: str, label: str, what: str, slower_code: str, wanted: Callable[[Any], bool] = lambda opts: True,
             severity_set_by_compile_severity: bool = False, may_fail: bool = False):
    """Register the decorated builder as a baseline (in registration order: the order of the sides)."""
    def register(build):
        BASELINES[name] = Baseline(name, label, what, slower_code, build, wanted, severity_set_by_compile_severity,
                                   may_fail)
        return build
    return register


def wanted(opts) -> list[Baseline]:
    """The baselines this job's measure options ask for, in order."""
    return [b for b in BASELINES.values() if b.wanted(opts)]


def label(side: str) -> str:
    """How a finding names a side: a baseline's label, the implementation, or the other version in a race."""
    if side in BASELINES:
        return BASELINES[side].label
    return {"triton": "the implementation", "current": "the current version"}.get(side, side)


@baseline("eager", "PyTorch eager", "the reference", "KL400")
def _eager(ctx: BaselineContext) -> list:
    return [lambda c=c: ctx.ref(*c) for c in ctx.copies()]


@baseline("torch.compile", "torch.compile", "torch.compile of the reference", "KL401",
          wanted=lambda opts: opts.compile, severity_set_by_compile_severity=True, may_fail=True)
def _torch_compile(ctx: BaselineContext) -> list:
    """torch.compile of the reference (default mode), compiled once per reference content in this worker
    (compiled.py), its first call's time and whether it was cached reported apart."""
    import os
    from .compiled import _reference_key, compiled_key, compiled_reference
    inputs = ctx.copies()
    compiled, seconds, cached = compiled_reference(
        ctx.ref, _reference_key(ctx.job, {}), inputs[0], ctx.clock.local, ctx.job.measure.warm_lock,
        lambda: ctx.rep.w.wait("measure", "waiting for the compile warmer"),
        os.environ.get("TORCHINDUCTOR_CACHE_DIR"),  # pinned in every worker's environment (run/sandbox.py)
        kept_as=compiled_key(ctx.job))
    ctx.first_call = (seconds, cached)
    return [lambda c=c: compiled(*c) for c in inputs]
