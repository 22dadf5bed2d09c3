"""Planning and driving the variants: the size plan (plan/), each planned variant run and judged (rules.py) in turn,
the CPU sizes adapted to the interpreter's operations, then the variants run after them (moved parameters, no_grad,
training mode, the problem's own rows, aligned sizes, block sizes within an operations budget, one module at two
sizes, every autotune config). One part of the Verifier (verifier.py), the one that drives the others."""

from __future__ import annotations

import functools
import time
from typing import Callable

from ...player.devmem import trim_cache
from ..measure.gpu_lease import let_timing_in
from ..problem.errors import UserCodeError
from .autotune_configs import verify_configs
from .context import Failure, VerifyContext
from .findings import Findings, where
from .plan.blocks import block_variants
from .plan.shapes import int_floor, size_plan
from .plan.variants import (CPU_ELEMENT_BUDGET, Variant, aligned_knobs, base_knobs, keep_signs, plan, shrink_knobs,
                            sign_profile, special_values)
from .rules import CONFIRMED_FINDINGS, fingerprint, informative, judge, judge_random, sketch
from .runs import (NO_GRAD, PARAMETERS, SAME_MODULE, TRAIN_MODE, BudgetStop, VariantRuns, has_parameters,
                   trains_differently,
                   judged_randomly)
from .truth import ReferenceTruth


# Interpreter operations (interpreter.py counts them) one variant should take, about a second here. Operations,
# not time: a verdict must not depend on the machine's speed or load (CPU time once shrank a reduction under load
# until an fp16 accumulation bug hid). Sizes shrink only after a first variant clearly above it.
OPS_PER_VARIANT = 10_000
SHRINK_AFTER_OPS = 3 * OPS_PER_VARIANT // 2
LARGER_OPS = 10 * OPS_PER_VARIANT  # the larger-size variant's most, under the interpreter
# The least one interpreter operation takes (about 33 us measured on CI's cores; a microsecond would be a machine
# 30 times faster): a stop reported sooner than the budget's operations at this pace was not the interpreter's. The
# count and the flag are the player's, so a stop claimed after waiting this long with the count set passes this
# test; its kernels are then reported not verified (KL104), as a kernel that really spends the operations is.
SECONDS_PER_OP_AT_LEAST = 1e-6
BLOCK_BUDGET_RUNS = 4  # a block-size variant's most, in runs at the verification's own sizes (LARGER_OPS at least)


class VariantSchedule:
    """Plan the variants and run each (run_variants, run_one), judging and recording what each collected
    (run_variant). It drives the runs (runs.py), records through the findings (findings.py), stops when the
    reference does not repeat itself (truth.py), and writes the sizes it settles on into the context's `sizing`.
    `name_layout_culprits` is called with a layout variant and its failures (shrink.py's, which re-runs it)."""

    def __init__(self, ctx: VerifyContext, runs: VariantRuns, findings: Findings, truth: ReferenceTruth,
                 name_layout_culprits: Callable[[Variant, list[Failure]], None]):
        self.ctx, self.runs, self.findings, self.truth = ctx, runs, findings, truth
        self.name_layout_culprits = name_layout_culprits
        self.ran: list[Variant] = []  # the variants run, in order
        self.captured = {launch.spec.name for launch in ctx.recorder.launches}  # what the problem's own inputs ran

    def measure(self, knobs: dict) -> int:
        """Elements of the inputs at these knobs (the sizes' cost), a huge count where they cannot be made."""
        try:
            return self.ctx.problem.elements(knobs)
        except Exception:
            return 1 << 62

    def run_variants(self) -> float:
        """Every variant, each failure previewed as it is found; returns the seconds they took."""
        variants = self.plan_variants()
        start = time.monotonic()
        self.run_planned(variants)
        if not self.truth.unrepeatable:
            self.run_later(variants)
        return time.monotonic() - start

    def plan_variants(self) -> list[Variant]:
        """The planned variants (plan/variants.py) at the sizes chosen here, their transforms bound to the problem's
        own signs and the ties the runs build."""
        p, sizing, measure = self.ctx.problem, self.ctx.sizing, self.measure
        interpreted = self.ctx.interpreted
        self.ctx.rep.w.stage("verify", "planning the variants (sizes, layouts, value distributions)")
        sizing.reductions = p.reduction_knobs(p.size_knobs) if interpreted and p.size_knobs else set()
        try:
            sizing.at_least = int_floor(p.meta_inputs(), p.init())
        except Exception:
            sizing.at_least = 0
        base = base_knobs(p.size_knobs, measure({}), measure, interpreted, sizing.reductions, sizing.at_least)
        sizes = sizing.sizes = size_plan(p, base, interpreted)
        variants = plan(p.size_knobs, base, measure, interpreted, sizes, sizing.reductions, sizing.at_least)
        sizing.base = base
        try:
            self.runs.profile = sign_profile(p.make_inputs(1, base, sizes.base))
        except Exception:
            self.runs.profile = []
        for v in variants:
            if v.name == "special":
                v.transform = functools.partial(special_values, profile=self.runs.profile)
            elif v.name in ("large", "tiny", "structured"):
                v.transform = keep_signs(v.transform, self.runs.profile)
            elif v.name == "ties":
                v.transform = functools.partial(self.runs.ties, v)
        return variants

    def run_planned(self, variants: list[Variant]) -> None:
        """The planned variants in turn, the CPU sizes adapted after a first variant clearly over the operations one
        should take."""
        p, sizing, runs = self.ctx.problem, self.ctx.sizing, self.runs
        adaptations = 0
        for i, v in enumerate(variants):
            if self.truth.unrepeatable:
                break
            cpu0, ops0, runs0 = time.process_time(), runs.ops, runs.impl_runs
            self.run_one(v)
            per_run = (runs.ops - ops0) // max(1, runs.impl_runs - runs0)
            if i == 0:
                sizing.first_cpu_seconds, sizing.first_ops = time.process_time() - cpu0, per_run
            # Deterministic sizing: by the operations one run of the implementation took, re-measured on the
            # next variant until they fit (at most three times).
            if (self.ctx.interpreted and p.size_knobs and v.kind == "values" and v.knobs == sizing.base
                    and per_run > SHRINK_AFTER_OPS and adaptations < 3):
                variants[i + 1:] = self.adapt_sizes(variants[i + 1:], per_run)
                adaptations += 1

    def run_later(self, variants: list[Variant]) -> None:
        """The variants run after the planned ones: moved parameters, no_grad, training mode, the problem's own
        rows, aligned sizes, block sizes, one module at two sizes, every autotune config."""
        p, sizing, measure = self.ctx.problem, self.ctx.sizing, self.measure
        if has_parameters(p):
            self.run_one(Variant(PARAMETERS, "values", 19, sizing.base, None, "the models' parameters and buffers "
                                 "moved off their initial values (a norm's weight of ones, a bias of zeros)",
                                 sizing.sizes.base))
        # Every other call has autograd on, as a plain call does; inference callers do not. Its own seed: inputs no
        # other variant draws (the stale-result rule takes equal outputs on equal inputs for a cache).
        if not self.truth.unrepeatable:
            self.run_one(Variant(NO_GRAD, "values", 21, sizing.base, None, "called under torch.no_grad(), as "
                                 "inference code calls it (a path taken only without autograd)", sizing.sizes.base))
        # A model is built in training mode, and a user's `ModelNew(...)` is called so: the implementation as built,
        # against the reference in training mode where that differs (its norms, dropouts or own code), else as
        # judged everywhere (an implementation that takes another path while training is wrong there).
        if not self.truth.unrepeatable and (trains_differently(p) or p.init_inputs is not None):
            what = [w for w, on in (("batch statistics where it normalizes", getattr(p, "trains", False)),
                                    ("dropout's draws, judged by their distribution", getattr(p, "drops", False)),
                                    ("what its code does where it reads self.training; judged by the outputs' "
                                     "distribution where the reference draws there",
                                     getattr(p, "trains_in_code", False))) if on]
            self.run_one(Variant(TRAIN_MODE, "values", 18, sizing.base, None, "the module in training mode (its "
                                 f"default: {' and '.join(what) or 'both models as built'})",
                                 sizing.sizes.base))
        if not self.truth.unrepeatable:
            self.run_own_rows()
            self.run_aligned()
            self.ctx.rep.w.stage("verify", "planning sizes past the kernels' block constants")
            for v in block_variants(self.ctx, variants, measure):
                self.run_within_budget(v)
            self.run_same_module()
            verify_configs(self.ctx, self.findings.configs, self.run_one, variants)

    def run_same_module(self) -> None:
        """A model is built per size (KernelBench's models may take sizes at init), so each is called at one size:
        here one model is called at a second size its init does not change, as a caller's module sees batches of
        several sizes: the model built and first called at the base sizes, at the largest size variant run when that
        is larger; else (on a GPU the base sizes are the problem's own, the largest) the model built and first called
        at the smallest size variant run, at the base sizes. State a model works out on its first call and keeps (a
        grid, a buffer, a descriptor) must follow the size; a grid kept from a larger first call covers a smaller
        one, so the second call is the larger. Then the same model at its first sizes with only the row length
        changed, and with only the other sizes changed (run_one_size_changed)."""
        p, sizing, measure = self.ctx.problem, self.ctx.sizing, self.measure
        if self.ctx.job.link.kind != "kernelbench" or not p.size_knobs:
            return  # a plain function is one object across the variants' sizes already (base {}: the own sizes)

        def init(knobs, setting):
            return p.init(knobs, {q: n for q, n in (setting or {}).items() if q[0] == "init"})
        try:
            own = init(sizing.base, sizing.sizes.base)
            sizes = [v for v in self.ran if v.kind == "size" and v.knobs and v.knobs != sizing.base
                     and repr(init(v.knobs, v.setting)) == repr(own)]
        except Exception:
            return
        if not sizes:
            return
        largest = max(sizes, key=lambda v: measure(v.knobs))
        if measure(largest.knobs) > measure(sizing.base):
            self.runs.module_built_at = (sizing.base, sizing.sizes.base)
            self.run_within_budget(Variant(SAME_MODULE, "size", largest.seed, largest.knobs, largest.transform,
                                           "the model built and first called at the base sizes", largest.setting))
            first, second, settings = sizing.base, largest.knobs, (sizing.sizes.base, largest.setting)
        else:
            smallest = min(sizes, key=lambda v: measure(v.knobs))
            self.runs.module_built_at = (smallest.knobs, smallest.setting)
            at = ", ".join(f"{k} = {n}" for k, n in smallest.knobs.items())
            self.run_within_budget(Variant(SAME_MODULE, "size", 23, sizing.base, None,
                                           f"the model built and first called at smaller sizes ({at})",
                                           sizing.sizes.base))
            first, second, settings = smallest.knobs, sizing.base, (smallest.setting, sizing.sizes.base)
        if not any(settings):  # sizes from knobs alone: a knob can change by itself
            self.run_one_size_changed(first, second, init, own)

    def run_one_size_changed(self, first: dict, second: dict, init, own) -> None:
        """The same-module variant's model called at its first sizes with only the row length (the last dimension
        of the largest input) changed to the second sizes', then with only the other sizes changed: state kept per
        part of the shape (a block cached per batch size, a grid per row length) is stale where the key stays and
        the rest moves, which a second call where every size changes never shows. Its own seeds; each runs when
        the model's init inputs stay the same there and, under the interpreter, its inputs are no larger than the
        larger of the two sizes'."""
        p = self.ctx.problem
        first, second = {**dict(p.size_knobs), **first}, {**dict(p.size_knobs), **second}  # {}: the own sizes
        rows = set(_row_knobs(p, second))
        changed = [k for k in second if second[k] != first[k]]
        built = ", ".join(f"{k} = {n}" for k, n in first.items() if k in changed)
        for i, (label, moved) in enumerate((("the row length changes", [k for k in changed if k in rows]),
                                            ("the other sizes change", [k for k in changed if k not in rows]))):
            if not moved or len(moved) == len(changed):
                return  # only one part changes: the variant above was this one
            knobs = {**first, **{k: second[k] for k in moved}}
            if self.ctx.interpreted and self.measure(knobs) > max(self.measure(first), self.measure(second)):
                continue  # the first call's batch with the second's rows can exceed both: past the CPU's sizes
            try:
                if repr(init(knobs, {})) != repr(own):
                    continue
            except Exception:
                continue
            to = ", ".join(f"{k} = {knobs[k]}" for k in moved)
            self.run_within_budget(Variant(f"{SAME_MODULE}-{i + 1}", "size", 46 + i, knobs, None,
                                           f"the model built and first called at {built} (then only {label}: "
                                           f"{to})", {}))

    def run_own_rows(self) -> None:
        """On the CPU, the problem's own row length (the last dimension of its largest input), the other sizes shrunk
        to make room, when the CPU sizes shortened it: a path a kernel takes only for rows longer than a block (a
        softmax that loops over chunks) is otherwise never run here. Said as skipped when even one row is too much
        for the interpreter (a check with --device cuda runs it)."""
        p, sizing, measure = self.ctx.problem, self.ctx.sizing, self.measure
        if not self.ctx.interpreted or not p.size_knobs or not sizing.base:
            return
        own, base = dict(p.size_knobs), dict(sizing.base)
        inner = _row_knobs(p, own)
        if not inner or all(base.get(k, own[k]) == own[k] for k in inner):
            return  # the rows are at their own length already
        knobs = {**base, **{k: own[k] for k in inner}}
        names = ", ".join(f"{k} = {own[k]}" for k in inner)
        limit = 4 * max(measure(base), CPU_ELEMENT_BUDGET)
        others = [k for k in knobs if k not in inner]
        while measure(knobs) > limit:
            name = max(others, key=lambda k: knobs[k], default=None)
            floor = max(1, sizing.at_least)
            if name is None or knobs[name] <= floor:
                self.ctx.state.skipped.append(("own-rows", f"the problem's own row length ({names}) is too large for "
                                               "the CPU interpreter even with one row: a check with --device cuda "
                                               "runs it"))
                return
            knobs[name] = max(floor, knobs[name] // 2)
        self.run_one(Variant("own-rows", "size", 19, knobs, None, f"the problem's own row length ({names}), the other "
                             "sizes small"))

    def run_aligned(self) -> None:
        """On the CPU, when the problem's own inputs launched a kernel that no variant ran (the shrunk, odd sizes
        took another path), one more variant at aligned sizes (variants.aligned_knobs) gives that path a run."""
        sizing, measure = self.ctx.sizing, self.measure
        if not self.ctx.interpreted or not self.captured - self.findings.ran_kernels():
            return
        knobs = aligned_knobs(self.ctx.problem.size_knobs, sizing.base, sizing.at_least)
        limit = 4 * max(measure(sizing.base), CPU_ELEMENT_BUDGET)
        while knobs and measure(knobs) > limit:  # small sizes rounded up to 16: halve the largest to make room
            name = max(knobs, key=knobs.get)
            if knobs[name] // 2 < 16 or knobs[name] % 32:
                return
            knobs[name] //= 2
        setting = {} if knobs else sizing.sizes.aligned  # sizes read from the inputs, for literal sizes
        if not knobs and not setting:
            return
        self.run_one(Variant("aligned-size", "size", 40, knobs or sizing.base, None, "sizes rounded to multiples of a "
                             "power of two the problem's own sizes share (the path aligned sizes take)", setting))

    def run_within_budget(self, v: Variant) -> None:
        """A block-size variant, stopped under the interpreter once a run of the implementation has taken
        BLOCK_BUDGET_RUNS times the operations of the first variant's run (LARGER_OPS at least): the dry run counts
        the programs a launch starts, not the tiles each walks, and a persistent kernel's few programs walk them all
        (a conv1d on 4 programs took 65 s there, past the check's timeout). A stopped variant is not a pass: what it
        found and launched is dropped, and every kernel it launched is reported not verified (KL104), so a kernel
        cannot hide a failure there by spending operations; a GPU check runs it whole."""
        state, first_ops, launches = self.ctx.state, self.ctx.sizing.first_ops, self.ctx.recorder.launches
        if not (self.ctx.interpreted and first_ops > 0):
            self.run_one(v)
            return
        budget = max(LARGER_OPS, BLOCK_BUDGET_RUNS * first_ops)
        marks, launch_mark = state.mark(), len(launches)
        state.budget, stopped = budget, None
        try:
            self.run_one(v)
        except BudgetStop as e:
            stopped = e
        finally:
            state.budget = None
        if stopped is not None:
            launched = {launch.spec.name for launch in launches[launch_mark:]}
            state.cut(marks)
            del launches[launch_mark:]
            if stopped.ops < budget or not launched or stopped.seconds < budget * SECONDS_PER_OP_AT_LEAST:
                # The stop is the player's word, and the implementation runs in the player: a stop with fewer
                # operations than the budget, no kernel launched, or sooner than that many operations can run was
                # claimed by the implementation (it set the interpreter's flag), not made by the interpreter.
                self.findings.fail("KL209", v, f"the implementation's call was reported stopped by the interpreter's "
                                   f"operation budget ({budget:,} operations) after {stopped.ops:,} operations, "
                                   f"{len(launched)} kernel(s) launched and {stopped.seconds * 1000:.1f} ms: a stop "
                                   "the implementation claimed, not the interpreter's; "
                                   f"{where(v, None)}", self.ctx.launch_line())
                return
            self.findings.stopped.append((v.name, budget, launched))
            state.skipped.append((v.name, f"stopped after {budget:,} interpreter operations in one run of the "
                                  f"implementation (the most a block-size variant may take: {BLOCK_BUDGET_RUNS} times "
                                  f"the first variant's {first_ops:,}, {LARGER_OPS:,} at least): too slow for the "
                                  "CPU interpreter at these sizes; a check with --device cuda runs it"))

    def run_one(self, v: Variant) -> None:
        """Run one variant: its stage event, the reason it was skipped, and its row's seconds."""
        state = self.ctx.state
        # On a GPU: a timing waiting for it goes first, so it waits for one variant, not for the rest of this check.
        let_timing_in(lambda: self.ctx.rep.w.wait("verify", f"waiting for the GPU before variant {v.name}: another "
                                                              "check is timing on it"))
        t0, rows = time.monotonic(), len(state.rows)
        self.ran.append(v)
        self.ctx.rep.w.stage("verify", f"variant {v.name}: {v.description}")
        try:
            self.run_trimmed(v)
        except UserCodeError as e:
            state.skipped.append((v.name, str(e)))
        if len(state.rows) > rows:
            state.rows[-1].seconds = round(time.monotonic() - t0, 4)

    def run_trimmed(self, v: Variant) -> None:
        """Run the variant; on a GPU, where other checks verify beside this one, give back afterwards what this
        process caches unused beyond a GiB (the player does so after every request), so that one variant's largest
        blocks are not held through the rest of the check."""
        try:
            self.run_variant(v)
        finally:
            if not self.ctx.interpreted:
                trim_cache()

    def adapt_sizes(self, rest: list[Variant], ops_per_run: int) -> list[Variant]:
        """The interpreter's cost grows with the operations it runs (programs times their work), not with
        elements: when a run of the implementation took clearly more than OPS_PER_VARIANT, shrink the knobs of
        the value and layout variants in proportion (outputs' sizes first, reductions last) and re-plan the split
        sizes."""
        sizing, measure = self.ctx.sizing, self.measure
        knobs = self.ctx.problem.size_knobs
        elements = max(1, measure(sizing.base or {}))
        budget = max(64, int(elements * OPS_PER_VARIANT / ops_per_run))
        cost = lambda v: ops_per_run * measure(v.knobs) // elements  # noqa: E731  (operations per call, estimated)
        for v in [v for v in rest if v.name == "odd-size" and v.knobs]:
            if cost(v) > SHRINK_AFTER_OPS:  # odd sizes within the same budget as the others
                odd = shrink_knobs(v.knobs, measure, budget, sizing.reductions,
                                   [k for k, n in v.knobs.items() if n >= 16], sizing.at_least)
                v.knobs = {**v.knobs, **odd}
        # Sizes beyond the problem's own cost in proportion: past LARGER_OPS operations they are left out, saying
        # so (a kernel this costly per element would take minutes there; the isolated re-run's larger set and a
        # GPU check still try larger sizes).
        for v in [v for v in rest if v.name == "larger-size"]:
            if cost(v) > LARGER_OPS:
                rest.remove(v)
                self.ctx.state.skipped.append((v.name, f"about {cost(v):,} interpreter operations per call at these "
                                               f"sizes ({ops_per_run:,} at the problem's own): too slow for the CPU "
                                               "interpreter"))
        smaller = shrink_knobs({**knobs, **sizing.base}, measure, budget, sizing.reductions,
                               [k for k, v in knobs.items() if v >= 16], sizing.at_least)
        if not smaller:
            return rest
        old, new_base = sizing.base, {**sizing.base, **smaller}
        for v in rest:
            if v.kind in ("values", "layout") and v.knobs == old:
                v.knobs = new_base
        sizing.base = new_base
        splits = [v for v in rest if v.name.startswith("split-sizes")]
        if not splits:
            return rest
        fresh = [Variant(f"split-sizes-{i}", "size", 12 + i, new_base, None, splits[0].description, setting)
                 for i, setting in enumerate(size_plan(self.ctx.problem, new_base, True).splits, 1)]
        at = rest.index(splits[0])
        kept = [v for v in rest if v not in splits]
        return kept[:at] + fresh + kept[at:]

    def run_variant(self, v: Variant) -> None:
        """Run one variant, judge what it collected (rules.py), and record the findings with their lines."""
        state, runs, findings = self.ctx.state, self.runs, self.findings
        before = len(state.failures)
        state.launch_mark = len(self.ctx.recorder.launches)
        try:
            evidence = runs.collect(v)
            if evidence is None:
                return
            random = judged_randomly(self.ctx.problem, v)
            if random and state.draws_confirmed:
                # A finding already stood on CONFIRM_DRAWS more of the reference's draws: the check fails, and
                # later variants' findings are judged on the first draws alone (confirming each cost a wrong
                # kernel's check 56 more reference calls per variant).
                evidence.more_draws = None
            judgement = judge_random(evidence) if random else judge(evidence)
            if random and evidence.confirmed and any(set(f.data) & CONFIRMED_FINDINGS for f in judgement.findings):
                state.draws_confirmed = True  # judge_random drew more and a finding stood on them
            for f in judgement.findings:
                line = findings.place(f, evidence, runs.writers, runs.store_lines)
                findings.fail(f.code, v, f.message, line, f.severity, **f.data)
        finally:
            if v.kind == "layout" and len(state.failures) > before:
                self.name_layout_culprits(v, state.failures[before:])
        if judgement.verdict == "structure" and random:
            return  # as before the split: a random op with the wrong output count gets no table row
        if judgement.verdict != "structure" and not random:
            state.outputs = evidence.earlier[-3:] + [[x.clone() if hasattr(x, "clone") else x
                                                      for x in evidence.outputs]]
            # No second call made (rerun_launches None): `rerun` holds the first run's own tensors.
            self.remember(v, evidence.outputs + (evidence.rerun if evidence.rerun_launches is not None else []))
        findings.row(v, evidence.shapes, judgement.verdict, judgement.worst)

    def remember(self, v: Variant, outputs: list) -> None:
        """Fingerprint and sketch each informative output not seen before (the stale-result rules, rules.py)."""
        import secrets

        import torch
        state = self.ctx.state
        if state.positions is None:
            state.positions = torch.Generator().manual_seed(secrets.randbits(62))
        for y in outputs:
            if not informative(y):
                continue
            key = fingerprint(y)
            if key not in state.prints:
                state.prints[key] = v.name
                sk = sketch(y, v.name, state.positions)
                if sk is not None:
                    state.sketches.append(sk)


def _row_knobs(p, knobs: dict) -> list[str]:
    """The knobs that size the row length at `knobs`: the last dimension of the largest input moves with them.
    None known (an empty list) where the inputs cannot be made on the meta device."""
    try:
        inputs = p.meta_inputs(knobs)
        # By position: `list.index` compares tensors with ==, which a meta tensor cannot answer as a bool.
        at, largest = max(((i, x) for i, x in enumerate(inputs) if hasattr(x, "shape") and len(x.shape)),
                          key=lambda ix: ix[1].numel())
        return [k for k in knobs if knobs[k] >= 2 and
                p.meta_inputs({**knobs, k: knobs[k] - 1})[at].shape[-1] != largest.shape[-1]]
    except Exception:
        return []
