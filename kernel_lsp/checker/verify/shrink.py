"""Failures explained by re-running their variant: each cause's first failure shrunk to the smallest failing sizes
found, and a failing layout variant re-run with one input at a time non-contiguous to name the inputs whose layout
the kernel depends on. Each re-run's own findings are dropped. One part of the Verifier (verifier.py): it re-runs
through the runs (runs.py) and cuts the shared record back after each re-run."""

from __future__ import annotations

import dataclasses

from ..problem.errors import DeviceFault, raise_device_fault
from .context import Failure, VerifyContext
from .findings import _cause
from .plan.variants import Variant
from .probes import only_input
from .rules import judge, judge_random
from .runs import BudgetStop, VariantRuns, judged_randomly
from .schedule import BLOCK_BUDGET_RUNS, LARGER_OPS


SHRINK_TRIES = 8  # re-runs to shrink one failure's sizes
SHRINK_CAUSES = 3  # failures shrunk per check (one per cause, the first ones)


class Shrinking:
    """Shrink the failures (shrink_failures) and name a layout failure's inputs (name_layout_culprits)."""

    def __init__(self, ctx: VerifyContext, runs: VariantRuns):
        self.ctx, self.runs = ctx, runs

    def shrink_failures(self) -> None:
        """Each cause's first failure, shrunk as property-based testing shrinks a failing example: its variant (the
        same values, layout, mode and seed) re-run with one size at a time (a size knob, or every input dimension of
        one size together where sizes are read from the inputs, shapes.py) set to its floor, else halved, the
        largest first, keeping every smaller size that still fails with the same code, until none does or
        SHRINK_TRIES runs are spent (an operation budget under the interpreter). The finding then names the
        smallest failing inputs found beside the ones it failed on first. Each re-run's own findings are dropped."""
        if self.ctx.problem.random:
            return  # a distribution test at smaller sizes is a weaker test, not the same failure smaller
        groups: dict[tuple, Failure] = {}
        for f in self.ctx.state.failures:
            if f.severity is None and f.code != "KL209" and not judged_randomly(self.ctx.problem, f.variant):
                groups.setdefault((f.code, f.line, _cause(f.code, f.variant)), f)
        for first in list(groups.values())[:SHRINK_CAUSES]:
            axes = self.size_axes(first.variant)
            if not axes:
                continue
            current, shapes, tries = {name: n for name, (_, n) in axes.items()}, None, 0
            improved = True
            while improved and tries < SHRINK_TRIES:
                improved = False
                floor = max(1, self.ctx.sizing.at_least)
                for name in sorted(current, key=lambda a: -current[a]):
                    for target in sorted({floor, max(floor, current[name] // 2)}):
                        if target >= current[name] or tries >= SHRINK_TRIES:
                            continue
                        tries += 1
                        got = self.fails_at(self.resized(first.variant, axes, {**current, name: target}), first.code)
                        if got is not None:
                            current, shapes, improved = {**current, name: target}, got, True
                            break
                    if improved:
                        break
            if shapes is not None:
                first.message += f"; the smallest failing inputs found: {shapes}"
                first.data["shrunk"] = shapes

    def size_axes(self, v: Variant) -> dict[str, tuple[list, int]]:
        """What shrinking moves, by name: each size knob, or (a problem whose sizes are read from its inputs) each
        size of the inputs' dimensions with every position of that size; each with its members and current size."""
        if v.knobs:
            return {k: ([k], n) for k, n in v.knobs.items() if isinstance(n, int) and n > 1}
        from .plan.shapes import positions
        try:
            p = self.ctx.problem
            pos = positions(p.make_inputs(v.seed, v.knobs, v.setting),
                            p.init(v.knobs, {q: n for q, n in (v.setting or {}).items() if q[0] == "init"}))
        except Exception:
            return {}
        axes: dict[str, tuple[list, int]] = {}
        for position, n in pos.items():
            if n > 1:
                axes.setdefault(f"size {n}", ([], n))[0].append(position)
        return axes

    def resized(self, v: Variant, axes: dict[str, tuple[list, int]], sizes: dict[str, int]) -> Variant:
        if v.knobs:
            return dataclasses.replace(v, knobs={**v.knobs, **sizes})
        setting = dict(v.setting or {})
        for name, (members, _) in axes.items():
            setting.update({position: sizes[name] for position in members})
        return dataclasses.replace(v, setting=setting)

    def fails_at(self, v: Variant, code: str) -> str | None:
        """The inputs' shapes where variant `v` fails with `code`, else None (nothing it finds is kept)."""
        state = self.ctx.state
        marks = state.mark()
        state.probing = True
        budget = state.budget
        if self.ctx.interpreted and self.ctx.sizing.first_ops > 0:
            state.budget = max(LARGER_OPS, BLOCK_BUDGET_RUNS * self.ctx.sizing.first_ops)
        try:
            evidence = self.runs.collect(v)
            if evidence is None:
                return None
            judged = judge_random(evidence) if self.ctx.problem.random else judge(evidence)
            found = [f.code for f in judged.findings if f.severity is None]
            found += [f.code for f in state.failures[marks[0]:] if f.severity is None]  # bounds, while collecting
            return evidence.shapes if code in found else None
        except BudgetStop:
            return None
        except DeviceFault:
            raise
        except Exception as e:  # noqa: BLE001  (a smaller size the reference or a judge cannot take: not smaller)
            raise_device_fault(e)
            return None
        finally:
            state.budget = budget
            state.probing = False
            state.cut(marks)

    def name_layout_culprits(self, v: Variant, failures: list[Failure]) -> None:
        """A layout variant failed: re-run it with one input at a time non-contiguous, and name the inputs whose
        layout the kernel depends on (each re-run's own findings are dropped)."""
        import torch
        inputs = self.ctx.problem.make_inputs(v.seed, v.knobs, v.setting)
        floats = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.is_floating_point()]
        if len(floats) < 2 or v.transform is None:
            return
        culprits = []
        state = self.ctx.state
        state.probing = True
        try:
            for i in floats:
                marks = state.mark()
                evidence = self.runs.collect(dataclasses.replace(v, transform=only_input(v.transform, i)))
                if evidence is not None and state.draws_confirmed:
                    evidence.more_draws = None  # a random op's finding stood on more draws already (schedule.py)
                failed = len(state.failures) > marks[0] or (evidence is not None and any(
                    f.severity is None for f in (judge_random(evidence) if self.ctx.problem.random
                                                 else judge(evidence)).findings))
                state.cut(marks)
                if failed:
                    culprits.append(i)
        finally:
            state.probing = False
        if len(culprits) == 1:
            note = (f"; input {culprits[0]} alone non-contiguous fails too: the kernel assumes input {culprits[0]} "
                    "is contiguous")
        elif culprits:
            names = ", ".join(map(str, culprits[:-1])) + f" and {culprits[-1]}"
            note = f"; inputs {names} each fail alone non-contiguous: the kernel assumes they are contiguous"
        else:
            note = "; no input alone non-contiguous fails: it takes several together"
        for f in failures:
            f.message += note
            f.data["layout_inputs"] = culprits
