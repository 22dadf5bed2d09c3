"""Adversarial verification of an implementation against its PyTorch reference. Runs in the checker's process.

This module plans and drives the runs; rules.py judges what they collected. For each input variant (see
variants.py): the truth is the reference in float64 and PyTorch's own error the reference in the task's dtype, both
computed here; the implementation runs in the player (checker/player.py), another process that holds nothing of
this one, twice, its allocations poisoned first with NaN and then with a finite sentinel drawn per check, so
unwritten elements are identified and repeatability is checked. The inputs come back as the call left them
(mutation), launches are counted (fallback), outputs of earlier calls are kept (stale results), and under the
interpreter every memory access is bounds-checked in the player (KL208, collected here). An implementation that
raises is KL209, also decided here.

Findings are aggregated per (code, line): the first failing variant gives the message, the others are
listed. The per-variant table goes to the kernel facts for hover and JSON.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ...model import KernelFacts, Severity, SkippedVariant, Span, VariantRow, Verification
from .autotune_configs import configs_prefix, verify_configs
from .plan.blocks import block_variants
from .compare import Comparison, flatten_outputs, same_draws, same_finiteness
from ...player.state import float_state, perturb
from ..player import CallResult
from ..problem.errors import IMPLEMENTATION, DeviceFault, UserCodeError, deepest_line, raise_device_fault
from ..problem.problem import resizes_out
from ..compile.positions import api_note, readable
from .probes import constant_rounding, no_grad_call, only_input, reference_repeat, reference_spread, rng_state
from .signs import aligned, sign_free_calls
from .rules import (Evidence, RuleFinding, describe_variant, draw_sentinel, fingerprint, informative, judge,
                    judge_random, same, sketch)
from .plan.shapes import describe_init, int_floor, size_plan
from .plan.ties import NotApplicable, tie_inputs
from .plan.variants import (CPU_ELEMENT_BUDGET, Variant, absolute, aligned_knobs, base_knobs, clone_inputs,
                       describe_inputs, has_integers, input_dtype, keep_signs, outside_profile, plan, shrink_knobs,
                       sign_profile, special_values, upcast)

# Interpreter operations (interpreter.py counts them) one variant should take, about a second here. Operations,
# not time: a verdict must not depend on the machine's speed or load (CPU time once shrank a reduction under load
# until an fp16 accumulation bug hid). Sizes shrink only after a first variant clearly above it.
OPS_PER_VARIANT = 10_000
SHRINK_AFTER_OPS = 3 * OPS_PER_VARIANT // 2
LARGER_OPS = 10 * OPS_PER_VARIANT  # the larger-size variant's most, under the interpreter
BLOCK_BUDGET_RUNS = 4  # a block-size variant's most, in runs at the verification's own sizes (LARGER_OPS at least)


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
    failures: list[Failure] = field(default_factory=list)
    rows: list[VariantRow] = field(default_factory=list)
    outputs: list[list] = field(default_factory=list)  # recent implementation outputs, for the stale check
    prints: dict = field(default_factory=dict)  # fingerprints of all earlier informative outputs -> their variant
    sketches: list = field(default_factory=list)  # and their sketches, at positions drawn by `positions`
    positions: Any = None  # a torch.Generator seeded from the system's randomness, once per verification


TRAIN_MODE = "train-mode"
PARAMETERS = "parameters"
NO_GRAD = "no-grad"
SAME_MODULE = "same-module"
SHRINK_TRIES = 8  # re-runs to shrink one failure's sizes
SHRINK_CAUSES = 3  # failures shrunk per check (one per cause, the first ones)


def trains_differently(problem) -> bool:
    """The reference is a model that leaves a normalization in training mode as built (PyTorch's default; the checks
    run in eval mode): a batch norm computes batch statistics there instead of its running ones (loader._norms)."""
    return bool(getattr(problem, "trains", False))


class BudgetStop(BaseException):
    """A call of the implementation was stopped by its operation budget: the variant ends here (run_within_budget)."""


# The calls start from a random state other than the one the inputs were drawn from: on a GPU the input factory
# draws on the device, and a reference seeded alike would draw the same Philox stream again. On an H200 torch's
# dropout then kept the inputs' larger values (its mask made from the numbers that made them: output std 1.31 where
# an unbiased mask gives 1.16), and a correct dropout failed the distribution test.
CALL_SEED = 7919


class Verifier:
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

    def run(self, captured_output: Any = None) -> None:
        # The capture run's output is never an "earlier call" for the stale-result rule: under the interpreter it
        # is dry (no kernel ran), so any output would "equal" it by accident.
        p = self.problem

        def measure(knobs):
            try:
                return p.elements(knobs)
            except Exception:
                return 1 << 62

        seconds = self.run_variants(measure)
        if self.before_report is not None:
            self.before_report()  # the compile stage, when it runs after the variants (pipeline.py)
        if not self.unrepeatable:
            self.shrink_failures()
        self.report(seconds)

    def shrink_failures(self) -> None:
        """Each cause's first failure, shrunk as property-based testing shrinks a failing example: its variant (the
        same values, layout, mode and seed) re-run with one size at a time (a size knob, or every input dimension of
        one size together where sizes are read from the inputs, shapes.py) set to its floor, else halved, the
        largest first, keeping every smaller size that still fails with the same code, until none does or
        SHRINK_TRIES runs are spent (an operation budget under the interpreter). The finding then names the
        smallest failing inputs found beside the ones it failed on first. Each re-run's own findings are dropped."""
        if self.problem.random:
            return  # a distribution test at smaller sizes is a weaker test, not the same failure smaller
        groups: dict[tuple, Failure] = {}
        for f in self.state.failures:
            if f.severity is None and f.code != "KL209":
                groups.setdefault((f.code, f.line, _cause(f.code, f.variant)), f)
        for first in list(groups.values())[:SHRINK_CAUSES]:
            axes = self.size_axes(first.variant)
            if not axes:
                continue
            current, shapes, tries = {name: n for name, (_, n) in axes.items()}, None, 0
            improved = True
            while improved and tries < SHRINK_TRIES:
                improved = False
                floor = max(1, self.at_least)
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
            p = self.problem
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
        marks = len(self.state.failures), len(self.state.rows), len(self.skipped)
        self.probing = True
        budget = self.budget
        if self.interpreted and self.first_ops > 0:
            self.budget = max(LARGER_OPS, BLOCK_BUDGET_RUNS * self.first_ops)
        try:
            evidence = self.collect(v)
            if evidence is None:
                return None
            judged = judge_random(evidence) if self.problem.random else judge(evidence)
            found = [f.code for f in judged.findings if f.severity is None]
            found += [f.code for f in self.state.failures[marks[0]:] if f.severity is None]  # bounds, while collecting
            return evidence.shapes if code in found else None
        except BudgetStop:
            return None
        except DeviceFault:
            raise
        except Exception as e:  # noqa: BLE001  (a smaller size the reference or a judge cannot take: not smaller)
            raise_device_fault(e)
            return None
        finally:
            self.budget = budget
            self.probing = False
            del self.state.failures[marks[0]:], self.state.rows[marks[1]:], self.skipped[marks[2]:]

    def run_variants(self, measure) -> float:
        """Every variant, each failure previewed as it is found; returns the seconds they took."""
        p = self.problem
        self.rep.w.stage("verify", "planning the variants (sizes, layouts, value distributions)")
        self.reductions = p.reduction_knobs(p.size_knobs) if self.interpreted and p.size_knobs else set()
        try:
            self.at_least = int_floor(p.meta_inputs(), p.init())
        except Exception:
            self.at_least = 0
        base = base_knobs(p.size_knobs, measure({}), measure, self.interpreted, self.reductions, self.at_least)
        sizes = self.sizes = size_plan(p, base, self.interpreted)
        variants = plan(p.size_knobs, base, measure, self.interpreted, sizes, self.reductions, self.at_least)
        self.base = base
        try:
            self.profile = sign_profile(p.make_inputs(1, base, sizes.base))
        except Exception:
            self.profile = []
        for v in variants:
            if v.name == "special":
                v.transform = functools.partial(special_values, profile=self.profile)
            elif v.name in ("large", "tiny", "structured"):
                v.transform = keep_signs(v.transform, self.profile)
            elif v.name == "ties":
                v.transform = functools.partial(self.ties, v)
        start = time.monotonic()
        adaptations = 0
        for i, v in enumerate(variants):
            if self.unrepeatable:
                break
            cpu0, ops0, runs0 = time.process_time(), self.ops, self.impl_runs
            self.run_one(v)
            per_run = (self.ops - ops0) // max(1, self.impl_runs - runs0)
            if i == 0:
                self.first_cpu_seconds, self.first_ops = time.process_time() - cpu0, per_run
            # Deterministic sizing: by the operations one run of the implementation took, re-measured on the
            # next variant until they fit (at most three times).
            if (self.interpreted and p.size_knobs and v.kind == "values" and v.knobs == self.base
                    and per_run > SHRINK_AFTER_OPS and adaptations < 3):
                variants[i + 1:] = self.adapt_sizes(variants[i + 1:], measure, per_run)
                adaptations += 1
        if not self.unrepeatable and self.has_parameters():
            self.run_one(Variant(PARAMETERS, "values", 19, self.base, None, "the models' parameters and buffers "
                                 "moved off their initial values (a norm's weight of ones, a bias of zeros)",
                                 self.sizes.base))
        # Every other call has autograd on, as a plain call does; inference callers do not. Its own seed: inputs no
        # other variant draws (the stale-result rule takes equal outputs on equal inputs for a cache).
        if not self.unrepeatable:
            self.run_one(Variant(NO_GRAD, "values", 21, self.base, None, "called under torch.no_grad(), as inference "
                                 "code calls it (a path taken only without autograd)", self.sizes.base))
        if not self.unrepeatable and trains_differently(p):
            self.run_one(Variant(TRAIN_MODE, "values", 18, self.base, None, "the module in training mode (its "
                                 "default: batch statistics where it normalizes)", self.sizes.base))
        if not self.unrepeatable:
            self.run_own_rows(measure)
            self.run_aligned(measure)
            self.rep.w.stage("verify", "planning sizes past the kernels' block constants")
            for v in block_variants(self, variants, measure):
                self.run_within_budget(v)
            self.run_same_module(measure)
            verify_configs(self, variants)
        return time.monotonic() - start

    def ties(self, v: Variant, inputs: list) -> list:
        """The ties variant's inputs (ties.py); NotApplicable for a random op or a reference that does not round."""
        if self.problem.random:
            raise NotApplicable
        ref = self.ties_reference or self.problem.callables(v.knobs, v.setting)[0]
        return tie_inputs(ref, self.problem.float64(ref), inputs)

    def reference_rounds(self, v: Variant) -> bool:
        """The reference rounds (or casts to an integer dtype) on the problem's own inputs at these sizes."""
        from .plan.ties import rounded_values
        try:
            ref, _ = self.problem.callables(v.knobs, v.setting)
            return bool(rounded_values(ref, self.problem.make_inputs(v.seed, v.knobs, v.setting)))
        except Exception:
            return False

    def has_parameters(self) -> bool:
        """The reference is a model with float parameters or buffers (KernelBench's form): they can be moved."""
        import torch
        try:
            ref = self.problem.reference
        except Exception:
            return False
        return isinstance(ref, torch.nn.Module) and bool(float_state(ref))

    def run_same_module(self, measure) -> None:
        """A model is built per size (KernelBench's models may take sizes at init), so each is called at one size:
        here one model is called at a second size its init does not change, as a caller's module sees batches of
        several sizes: the model built and first called at the base sizes, at the largest size variant run when that
        is larger; else (on a GPU the base sizes are the problem's own, the largest) the model built and first called
        at the smallest size variant run, at the base sizes. State a model works out on its first call and keeps (a
        grid, a buffer, a descriptor) must follow the size; a grid kept from a larger first call covers a smaller
        one, so the second call is the larger."""
        p = self.problem
        if self.job.link.kind != "kernelbench" or not p.size_knobs:
            return  # a plain function is one object across the variants' sizes already (base {}: the own sizes)

        def init(knobs, setting):
            return p.init(knobs, {q: n for q, n in (setting or {}).items() if q[0] == "init"})
        try:
            own = init(self.base, self.sizes.base)
            sizes = [v for v in self.ran if v.kind == "size" and v.knobs and v.knobs != self.base
                     and repr(init(v.knobs, v.setting)) == repr(own)]
        except Exception:
            return
        if not sizes:
            return
        largest = max(sizes, key=lambda v: measure(v.knobs))
        if measure(largest.knobs) > measure(self.base):
            self.module_built_at = (self.base, self.sizes.base)
            self.run_within_budget(Variant(SAME_MODULE, "size", largest.seed, largest.knobs, largest.transform,
                                           "the model built and first called at the base sizes", largest.setting))
            return
        smallest = min(sizes, key=lambda v: measure(v.knobs))
        self.module_built_at = (smallest.knobs, smallest.setting)
        at = ", ".join(f"{k} = {n}" for k, n in smallest.knobs.items())
        self.run_within_budget(Variant(SAME_MODULE, "size", 23, self.base, None,
                                       f"the model built and first called at smaller sizes ({at})", self.sizes.base))

    def run_own_rows(self, measure) -> None:
        """On the CPU, the problem's own row length (the last dimension of its largest input), the other sizes shrunk
        to make room, when the CPU sizes shortened it: a path a kernel takes only for rows longer than a block (a
        softmax that loops over chunks) is otherwise never run here. Said as skipped when even one row is too much
        for the interpreter (a check with --device cuda runs it)."""
        p = self.problem
        if not self.interpreted or not p.size_knobs or not self.base:
            return
        own, base = dict(p.size_knobs), dict(self.base)
        try:
            inputs = p.meta_inputs(own)
            largest = max((x for x in inputs if hasattr(x, "shape") and len(x.shape)), key=lambda x: x.numel())
            inner = [k for k in own if own[k] >= 2 and
                     p.meta_inputs({**own, k: own[k] - 1})[inputs.index(largest)].shape[-1] != largest.shape[-1]]
        except Exception:
            return
        if not inner or all(base.get(k, own[k]) == own[k] for k in inner):
            return  # the rows are at their own length already
        knobs = {**base, **{k: own[k] for k in inner}}
        names = ", ".join(f"{k} = {own[k]}" for k in inner)
        limit = 4 * max(measure(base), CPU_ELEMENT_BUDGET)
        others = [k for k in knobs if k not in inner]
        while measure(knobs) > limit:
            name = max(others, key=lambda k: knobs[k], default=None)
            floor = max(1, self.at_least)
            if name is None or knobs[name] <= floor:
                self.skipped.append(("own-rows", f"the problem's own row length ({names}) is too large for the CPU "
                                     "interpreter even with one row: a check with --device cuda runs it"))
                return
            knobs[name] = max(floor, knobs[name] // 2)
        self.run_one(Variant("own-rows", "size", 19, knobs, None, f"the problem's own row length ({names}), the other "
                             "sizes small"))

    def run_aligned(self, measure) -> None:
        """On the CPU, when the problem's own inputs launched a kernel that no variant ran (the shrunk, odd sizes
        took another path), one more variant at aligned sizes (variants.aligned_knobs) gives that path a run."""
        if not self.interpreted or not self.captured - self.ran_kernels():
            return
        knobs = aligned_knobs(self.problem.size_knobs, self.base, self.at_least)
        limit = 4 * max(measure(self.base), CPU_ELEMENT_BUDGET)
        while knobs and measure(knobs) > limit:  # small sizes rounded up to 16: halve the largest to make room
            name = max(knobs, key=knobs.get)
            if knobs[name] // 2 < 16 or knobs[name] % 32:
                return
            knobs[name] //= 2
        setting = {} if knobs else self.sizes.aligned  # sizes read from the inputs, for literal sizes
        if not knobs and not setting:
            return
        self.run_one(Variant("aligned-size", "size", 40, knobs or self.base, None, "sizes rounded to multiples of a "
                             "power of two the problem's own sizes share (the path aligned sizes take)", setting))

    def run_within_budget(self, v: Variant) -> None:
        """A block-size variant, stopped under the interpreter once a run of the implementation has taken
        BLOCK_BUDGET_RUNS times the operations of the first variant's run (LARGER_OPS at least): the dry run counts
        the programs a launch starts, not the tiles each walks, and a persistent kernel's few programs walk them all
        (a conv1d on 4 programs took 65 s there, past the check's timeout). A stopped variant is not a pass: what it
        found and launched is dropped, and every kernel it launched is reported not verified (KL104), so a kernel
        cannot hide a failure there by spending operations; a GPU check runs it whole."""
        if not (self.interpreted and self.first_ops > 0):
            self.run_one(v)
            return
        budget = max(LARGER_OPS, BLOCK_BUDGET_RUNS * self.first_ops)
        marks = len(self.state.failures), len(self.state.rows), len(self.skipped), len(self.recorder.launches)
        self.budget, stopped = budget, False
        try:
            self.run_one(v)
        except BudgetStop:
            stopped = True
        finally:
            self.budget = None
        if stopped:
            launched = {launch.spec.name for launch in self.recorder.launches[marks[3]:]}
            del self.state.failures[marks[0]:], self.state.rows[marks[1]:], self.skipped[marks[2]:]
            del self.recorder.launches[marks[3]:]
            self.stopped.append((v.name, budget, launched))
            self.skipped.append((v.name, f"stopped after {budget:,} interpreter operations in one run of the "
                                 f"implementation (the most a block-size variant may take: {BLOCK_BUDGET_RUNS} times "
                                 f"the first variant's {self.first_ops:,}, {LARGER_OPS:,} at least): too slow for the "
                                 "CPU interpreter at these sizes; a check with --device cuda runs it"))

    def run_one(self, v: Variant) -> None:
        """Run one variant: its stage event, the reason it was skipped, and its row's seconds."""
        t0, rows = time.monotonic(), len(self.state.rows)
        self.ran.append(v)
        self.rep.w.stage("verify", f"variant {v.name}: {v.description}")
        try:
            self.run_variant(v)
        except UserCodeError as e:
            self.skipped.append((v.name, str(e)))
        if len(self.state.rows) > rows:
            self.state.rows[-1].seconds = round(time.monotonic() - t0, 4)

    def adapt_sizes(self, rest: list[Variant], measure, ops_per_run: int) -> list[Variant]:
        """The interpreter's cost grows with the operations it runs (programs times their work), not with
        elements: when a run of the implementation took clearly more than OPS_PER_VARIANT, shrink the knobs of
        the value and layout variants in proportion (outputs' sizes first, reductions last) and re-plan the split
        sizes."""
        knobs = self.problem.size_knobs
        elements = max(1, measure(self.base or {}))
        budget = max(64, int(elements * OPS_PER_VARIANT / ops_per_run))
        cost = lambda v: ops_per_run * measure(v.knobs) // elements  # noqa: E731  (operations per call, estimated)
        for v in [v for v in rest if v.name == "odd-size" and v.knobs]:
            if cost(v) > SHRINK_AFTER_OPS:  # odd sizes within the same budget as the others
                odd = shrink_knobs(v.knobs, measure, budget, self.reductions,
                                   [k for k, n in v.knobs.items() if n >= 16], self.at_least)
                v.knobs = {**v.knobs, **odd}
        # Sizes beyond the problem's own cost in proportion: past LARGER_OPS operations they are left out, saying
        # so (a kernel this costly per element would take minutes there; the isolated re-run's larger set and a
        # GPU check still try larger sizes).
        for v in [v for v in rest if v.name == "larger-size"]:
            if cost(v) > LARGER_OPS:
                rest.remove(v)
                self.skipped.append((v.name, f"about {cost(v):,} interpreter operations per call at these sizes "
                                     f"({ops_per_run:,} at the problem's own): too slow for the CPU interpreter"))
        smaller = shrink_knobs({**knobs, **self.base}, measure, budget, self.reductions,
                               [k for k, v in knobs.items() if v >= 16], self.at_least)
        if not smaller:
            return rest
        old, new_base = self.base, {**self.base, **smaller}
        for v in rest:
            if v.kind in ("values", "layout") and v.knobs == old:
                v.knobs = new_base
        self.base = new_base
        splits = [v for v in rest if v.name.startswith("split-sizes")]
        if not splits:
            return rest
        fresh = [Variant(f"split-sizes-{i}", "size", 12 + i, new_base, None, splits[0].description, setting)
                 for i, setting in enumerate(size_plan(self.problem, new_base, True).splits, 1)]
        at = rest.index(splits[0])
        kept = [v for v in rest if v not in splits]
        return kept[:at] + fresh + kept[at:]

    def run_variant(self, v: Variant) -> None:
        """Run one variant, judge what it collected (rules.py), and record the findings with their lines."""
        before = len(self.state.failures)
        self.launch_mark = len(self.recorder.launches)
        try:
            evidence = self.collect(v)
            if evidence is None:
                return
            random = self.problem.random
            judgement = judge_random(evidence) if random else judge(evidence)
            for f in judgement.findings:
                self.fail(f.code, v, f.message, self.place(f, evidence), f.severity, **f.data)
        finally:
            if v.kind == "layout" and len(self.state.failures) > before:
                self.name_layout_culprits(v, self.state.failures[before:])
        if judgement.verdict == "structure" and random:
            return  # as before the split: a random op with the wrong output count gets no table row
        if judgement.verdict != "structure" and not random:
            self.state.outputs = evidence.earlier[-3:] + [[x.clone() if hasattr(x, "clone") else x
                                                           for x in evidence.outputs]]
            # No second call made (rerun_launches None): `rerun` holds the first run's own tensors.
            self.remember(v, evidence.outputs + (evidence.rerun if evidence.rerun_launches is not None else []))
        self.row(v, evidence.shapes, judgement.verdict, judgement.worst)

    def remember(self, v: Variant, outputs: list) -> None:
        """Fingerprint and sketch each informative output not seen before (the stale-result rules, rules.py)."""
        import secrets

        import torch
        if self.state.positions is None:
            self.state.positions = torch.Generator().manual_seed(secrets.randbits(62))
        for y in outputs:
            if not informative(y):
                continue
            key = fingerprint(y)
            if key not in self.state.prints:
                self.state.prints[key] = v.name
                sk = sketch(y, v.name, self.state.positions)
                if sk is not None:
                    self.state.sketches.append(sk)

    def name_layout_culprits(self, v: Variant, failures: list[Failure]) -> None:
        """A layout variant failed: re-run it with one input at a time non-contiguous, and name the inputs whose
        layout the kernel depends on (each re-run's own findings are dropped)."""
        import torch
        inputs = self.problem.make_inputs(v.seed, v.knobs, v.setting)
        floats = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.is_floating_point()]
        if len(floats) < 2 or v.transform is None:
            return
        culprits = []
        self.probing = True
        try:
            for i in floats:
                marks = len(self.state.failures), len(self.state.rows), len(self.skipped)
                evidence = self.collect(dataclasses.replace(v, transform=only_input(v.transform, i)))
                failed = len(self.state.failures) > marks[0] or (evidence is not None and any(
                    f.severity is None for f in (judge_random(evidence) if self.problem.random
                                                 else judge(evidence)).findings))
                del self.state.failures[marks[0]:], self.state.rows[marks[1]:], self.skipped[marks[2]:]
                if failed:
                    culprits.append(i)
        finally:
            self.probing = False
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

    def collect(self, v: Variant) -> Evidence | None:
        """Run the reference and the implementation on this variant's inputs and gather the evidence. Returns
        None when the variant is skipped (the reference or the input factory rejects it) or the implementation
        raised (reported here as KL209, with its row). The variant's size knobs stay set throughout: a reference
        that reads a module-level size when called (`torch.zeros(ROWS, ...)` beside `randint(0, ROWS, ...)` in the
        input factory) sees the size its inputs were drawn for. (On a GPU, indices drawn for a larger ROWS than the
        reference used made index_add_ fail a device-side assert, which ends the whole job.)"""
        with self.problem.knobs_set(v.knobs):
            return self._collect(v)

    def _collect(self, v: Variant) -> Evidence | None:
        """One variant's evidence (collect, with the variant's size knobs set): its reference and implementation,
        its inputs, the reference's outputs and their truth, what the error budget is made of, and the
        implementation's two runs. None where one of them skips the variant or ends it."""
        built = self._variant_callables(v)
        if built is None:
            return None
        ref, impl = built
        drawn = self._variant_inputs(v, ref)
        if drawn is None:
            return None
        inputs, shapes = drawn
        call = _seeded_call(v)
        reference = self._reference_and_truth(v, ref, inputs, shapes, call)
        if reference is None:
            return None
        ref_inputs, draws, updated, r_flat, t_flat, truth_dtype = reference
        spread, constants, terms, a_flat = self._budget_inputs(v, ref, inputs, r_flat, t_flat, updated, truth_dtype,
                                                               call)
        if self._nothing_to_judge(v, r_flat, t_flat):
            return None
        runs = self._implementation_runs(v, impl, inputs, shapes, updated, draws)
        if runs is None:
            return None
        y1_flat, y2_flat, impl_inputs, launches, rerun_launches, result_line = runs
        # Kernels the interpreter computes wrongly, among those that ran here (a variant may launch one the
        # capture did not): values are not judged on this variant.
        ran = {launch.spec.qualname for launch in self.recorder.launches[self.launch_mark:]}
        untrusted = bool(ran & set(self.untrusted_kernels()))
        if self.sign_free:  # outputs defined up to sign (signs.py): both sides judged with the truth's signs
            y1_flat, r_flat = aligned(y1_flat, t_flat), aligned(r_flat, t_flat)
            y2_flat = aligned(y2_flat, t_flat, keep=self.sentinel)
        p = self.problem
        sample_message = None
        if p.random and p.sample_check is not None and len(y1_flat) == len(r_flat):
            sample_message = p.sample_check(inputs, y1_flat[0] if len(y1_flat) == 1 else y1_flat)
        return Evidence(v.name, v.kind, v.description, shapes, y1_flat, y2_flat, r_flat, t_flat, a_flat, truth_dtype,
                        launches, impl_inputs, ref_inputs, self.state.outputs, self.state.prints,
                        self.state.sketches, untrusted,
                        sample_message, result_line, updated, spread, terms, constants, inputs,
                        bool(self.fresh_draws), rerun_launches, self.sentinel, correlated=v.name == "structured")

    def _variant_callables(self, v: Variant) -> tuple[Any, Any] | None:
        """The reference and the implementation the variant calls: fresh models for the variants that change them,
        for the same-module variant the reference at its sizes beside the implementation built for the base, else
        the problem's own at the variant's sizes. None when the variant is skipped (a side other than the
        implementation cannot be built, or the models have no parameter in common) or the implementation raised
        while it was built (KL209, reported here)."""
        p = self.problem
        try:
            self.ties_reference = None
            if v.name in (TRAIN_MODE, PARAMETERS) or (v.name == "ties" and self.has_parameters()
                                                         and self.reference_rounds(v)):
                return self._fresh_models(v)
            if v.name == SAME_MODULE:  # the reference at these sizes, the implementation as built for the base
                ref, _ = p.callables(v.knobs, v.setting)
                _, impl = p.callables(*self.module_built_at)
            else:
                ref, impl = p.callables(v.knobs, v.setting)
            return ref, impl
        except UserCodeError as e:
            if e.side != IMPLEMENTATION:
                self.skipped.append((v.name, f"the {e.side} cannot be built at these sizes"))
                return None
            self.fail("KL209", v, f"{e}; {self.where(v, None)}", deepest_line(e.exc, self.job.path))
            return None

    def _fresh_models(self, v: Variant) -> tuple[Any, Any] | None:
        """Fresh models for a variant that changes them, since later variants read the ones they change: the
        reference in training mode, the ties variant's scales at powers of two on both sides, or the parameters
        moved alike on both sides. None when the implementation's parameters are not the reference's (the variant
        is skipped)."""
        import torch
        p = self.problem
        init = {q: n for q, n in (v.setting or {}).items() if q[0] == "init"}
        with p.knobs_set(v.knobs):
            ref, impl = p.build(v.knobs or {}, p.init(v.knobs, init) if init else None)
        if isinstance(ref, torch.nn.Module) and v.name == TRAIN_MODE:
            ref.train()
        elif isinstance(ref, torch.nn.Module) and v.name == "ties":
            # Scales the model holds (a quantizer's calibrated buffer) at powers of two on both sides, so
            # that the ties built from the inputs are ties there too (ties.py).
            moved = self.player.perturb(impl, v.seed, float_state(ref), mode="pow2")
            perturb(ref, v.seed, set(moved), mode="pow2")
            self.ties_reference = ref
        elif isinstance(ref, torch.nn.Module):
            moved = self.player.perturb(impl, v.seed, float_state(ref))
            if not moved:
                self.skipped.append((v.name, "the implementation's parameters are not the reference's (no "
                                             "name and shape in common)"))
                return None
            perturb(ref, v.seed, set(moved))
        return ref, impl

    def _variant_inputs(self, v: Variant, ref) -> tuple[list, str] | None:
        """The variant's inputs, drawn by the input factory and transformed from the variant's seed, and their
        description for messages; how they leave the problem's own distribution is noted. None when the variant
        does not apply to these inputs, the input factory rejects its sizes, or (on a GPU) the reference rejects
        its integers, which there would be a device-side assert that ends the check."""
        import torch
        p = self.problem
        try:
            inputs = own = p.make_inputs(v.seed, v.knobs, v.setting)
            if v.transform is not None:
                torch.manual_seed(v.seed)
                inputs = v.transform(inputs)
        except NotApplicable:
            return None
        except Exception as e:
            raise_device_fault(e)
            self.skipped.append((v.name, f"the input factory rejects these sizes ({type(e).__name__})"))
            return None
        if v.kind == "values" and v.name not in ("seed-1", "seed-2"):
            ood = outside_profile(inputs, self.profile)
            if ood:
                self.outside[v.name] = ood
        if v.name == "transposed" and not any(isinstance(x, torch.Tensor) and x.dim() >= 2 for x in inputs):
            return None  # for 1-D inputs this is the same as the strided variant
        if v.name.startswith("int-") and not has_integers(inputs):
            return None  # no integer input: the same as seed-1
        shapes = describe_inputs(inputs) + describe_init(p.init(v.knobs, v.setting), v.setting)
        if v.name.startswith("int-") and p.device != "cpu":
            refused = screen_on_cpu(ref, inputs, own)
            if refused:
                self.skipped.append((v.name, refused + "; on a GPU, integers the reference rejects are a device-side "
                                                       "assert, which would end the check"))
                return None
        return inputs, shapes

    def _reference_outputs(self, v: Variant, ref, inputs: list, shapes: str) -> tuple[Any, list, bool] | None:
        """The reference called on a copy of the inputs, from the random state every side starts from. Returns its
        output, that copy as the call left it, and whether the call drew random numbers though the problem is not
        random; for a random problem, whether the reference draws new numbers on every call is asked once. None when
        the variant is skipped: the reference rejects the inputs, or accepts them only by resizing an out= tensor."""
        import torch
        p = self.problem
        ref_inputs = clone_inputs(inputs)
        try:
            torch.manual_seed(v.seed + CALL_SEED)
            rng = rng_state()
            with resizes_out() as resized:
                r = no_grad_call(ref, ref_inputs)
            draws = not p.random and rng_state() != rng
            if resized:
                self.skipped.append((v.name, f"the reference accepts {shapes} only by resizing a mis-sized out= "
                                             "tensor, which PyTorch deprecates"))
                return None
        except Exception as e:
            raise_device_fault(e)
            if v.name.startswith("int-"):
                return None  # integers the reference has no use for (negative indices, labels): nothing to say
            where = deepest_line(e, self.problem_reference_file())
            at = f" (at {os.path.basename(self.problem_reference_file())}:{where + 1})" if where is not None else ""
            self.skipped.append((v.name, f"the reference rejects {shapes}: {type(e).__name__}: "
                                         f"{readable(str(e))[:200]}{at}"))
            return None
        if p.random and self.fresh_draws is None:
            # Called again without a new seed: a reference with no seed among its inputs draws new numbers.
            try:
                again = flatten_outputs(no_grad_call(ref, clone_inputs(inputs)))
                self.fresh_draws = not all(same(a, b) for a, b in zip(flatten_outputs(r), again))
            except Exception as e:
                raise_device_fault(e)
        return r, ref_inputs, draws

    def _reference_and_truth(self, v: Variant, ref, inputs: list, shapes: str, call: Callable) -> tuple | None:
        """The reference's outputs and their truth, the reference in float64 (in the task's dtype where that raises
        or draws other numbers). Returns the reference's copy of the inputs, whether it drew random numbers, the
        inputs it updates in place, the flat outputs of the reference and of the truth (each followed by those
        updated inputs), and the truth's dtype. None when the variant is skipped (_reference_outputs) or the
        reference does not repeat itself."""
        import torch
        p = self.problem
        ran = self._reference_outputs(v, ref, inputs, shapes)
        if ran is None:
            return None
        r, ref_inputs, draws = ran
        # Inputs the reference updates in place (an optimizer step, `out=`, running statistics) are outputs too.
        updated = [i for i, (a, b) in enumerate(zip(inputs, ref_inputs))
                   if isinstance(a, torch.Tensor) and not same(a, b)]
        truth_inputs = upcast(clone_inputs(inputs))
        r_flat = flatten_outputs(r) + [ref_inputs[i] for i in updated]
        if not p.random and self.unrepeatable is None and not self.probing:
            self.unrepeatable = reference_repeat(ref, inputs, r_flat, updated) or ""
            if self.unrepeatable:
                return None  # reported once, on the link (report): no implementation can match it element by element
        try:
            truth = call(self.problem.float64(ref), truth_inputs)
            truth_dtype = "float64"
            if draws and not same_draws(r_flat, flatten_outputs(truth) + [truth_inputs[i] for i in updated]):
                # A reference that draws random numbers in its own dtype (randn_like) draws other numbers in
                # float64: that is no truth for these outputs; the reference in the task's dtype is.
                truth, truth_dtype, truth_inputs = r, str(input_dtype(inputs)), ref_inputs
        except Exception as e:
            raise_device_fault(e)
            truth, truth_dtype, truth_inputs = r, str(input_dtype(inputs)), ref_inputs
        t_flat = flatten_outputs(truth) + [truth_inputs[i] for i in updated]
        return ref_inputs, draws, updated, r_flat, t_flat, truth_dtype

    def _reference_spread(self, v: Variant, ref, inputs: list, r_flat: list, updated: list[int], truth_dtype: str,
                          call: Callable) -> list | None:
        """How far the reference moves when its inputs move by about an ulp, per output (reference_spread): per
        element and row for the structured variant, else where it stands in for PyTorch's own error (no float64
        truth, or a float64 task); None otherwise. Which sign-free decompositions the reference calls is asked
        here, once."""
        import torch
        p = self.problem
        # A float64 problem's reference is its own float64 truth, so PyTorch's own error there is 0 by construction:
        # as without a float64 truth, how far it moves when its inputs move by one ulp stands in for it.
        floats = [o for o in r_flat if isinstance(o, torch.Tensor) and o.is_floating_point()]
        own_truth = bool(floats) and all(o.dtype == torch.float64 for o in floats)
        if self.sign_free is None:  # asked once: the same code at every size
            self.sign_free = [] if p.random else sign_free_calls(ref, inputs)
        signs = bool(self.sign_free)
        if v.name == "structured":
            # Rows conditioned very differently (a constant row's normalization is ill-conditioned, an ordinary one is
            # not): each element's budget is its own move when the inputs move by as much as a kernel's fp32 row
            # reduction moves them, sqrt(row length) ulps (a sum of n terms is backward stable to about sqrt(n) u).
            row = max((x.shape[-1] for x in inputs if isinstance(x, torch.Tensor) and x.is_floating_point()
                       and x.dim()), default=1)
            spread = reference_spread(ref, inputs, r_flat, updated, call, elementwise=True,
                                      ulps=max(1.0, math.sqrt(row)), signs=signs)
            # One structure per row: an element's budget is its row's largest move (random signs can cancel at one
            # element, x + r moved by +e and -e, where a kernel's own rounding does not).
            return [s.amax(dim=-1, keepdim=True).expand_as(s) if isinstance(s, torch.Tensor) and s.dim() else s
                    for s in spread]
        return (reference_spread(ref, inputs, r_flat, updated, call, signs=signs)
                if truth_dtype != "float64" or own_truth else None)

    def _budget_inputs(self, v: Variant, ref, inputs: list, r_flat: list, t_flat: list, updated: list[int],
                       truth_dtype: str, call: Callable) -> tuple[list | None, list | None, list, list]:
        """What the error budget of each output is made of (compare.py): the reference's spread
        (_reference_spread), the rounding of the float constants for kernels given them as fp32 scalars, the
        number of input terms that feed each output element, and the reference on absolute values (the
        accumulation floor; None per output where it cannot be had). Returned in that order, the absolute values
        last."""
        import torch
        spread = self._reference_spread(v, ref, inputs, r_flat, updated, truth_dtype, call)
        # The allowance for float constants is for kernels that receive them as fp32 scalars, and only for them.
        constants = (constant_rounding(self.problem.float64(ref), upcast(clone_inputs(inputs)), t_flat, updated,
                                       call) if truth_dtype == "float64" and self.takes_float_scalars() else None)
        fed = sum(x.numel() for x in inputs if isinstance(x, torch.Tensor) and x.is_floating_point())
        terms = [fed / out.numel() if isinstance(out, torch.Tensor) and out.numel() else 1.0 for out in r_flat]
        # A float64 output's floor has float64's roundoff (compare.py), where fed / out undercounts a reduction that
        # feeds every element (a softmax's row sum): its length is taken as the longest input dimension there.
        longest = max((max(x.shape) for x in inputs if isinstance(x, torch.Tensor) and x.is_floating_point()
                       and x.dim()), default=1)
        terms = [max(n, longest) if getattr(out, "dtype", None) == torch.float64 else n
                 for n, out in zip(terms, r_flat)]
        abs_inputs = absolute(upcast(clone_inputs(inputs)))
        try:  # the reference on absolute values: the accumulation floor of the budget (compare.py)
            a_flat = flatten_outputs(call(self.problem.float64(ref, absolute=True), abs_inputs))
            a_flat += [abs_inputs[i] for i in updated]
        except Exception as e:
            raise_device_fault(e)
            a_flat = [None] * len(r_flat)
        if len(a_flat) != len(r_flat):
            a_flat = [None] * len(r_flat)
        return spread, constants, terms, a_flat

    def _nothing_to_judge(self, v: Variant, r_flat: list, t_flat: list) -> bool:
        """The reference's outputs leave nothing to judge on this variant: NaN or infinities where its truth has
        none, or the other way round (noted as skipped), or a random op's special values, whose distributions
        are not compared."""
        import torch
        if v.name != "special" and not same_finiteness(r_flat, t_flat):
            # NaN/inf the reference returns in its own dtype and in the truth alike (a log of a negative draw)
            # are part of the answer; where only one of them has it, it overflowed: nothing to judge.
            self.skipped.append((v.name, "the reference itself overflows or returns NaN/inf here"))
            return True
        if self.problem.random and v.name == "special":
            return True  # distributions with NaN and infinities are not compared
        if v.name == "special" and any(isinstance(a, torch.Tensor) and a.is_floating_point() and
                                       bool((torch.isfinite(b.double()) & ~torch.isfinite(a.double())).any())
                                       for a, b in zip(r_flat, t_flat) if isinstance(b, torch.Tensor)):
            self.skipped.append((v.name, "the reference overflows in its own dtype here"))
            return True
        return False

    def _implementation_runs(self, v: Variant, impl, inputs: list, shapes: str, updated: list[int],
                             draws: bool) -> tuple | None:
        """The implementation's two runs in the player, its allocations poisoned with NaN (stores tracked for
        placement) and then with the sentinel. Returns the flat outputs of both runs (each followed by the inputs
        updated in place, None for a second run that raised), the first run's inputs as the call left them, the
        launches of both runs, and the line that returns the result when nothing was launched. None when the first
        run raised (_implementation_raised)."""
        import torch
        if not self.interpreted and self.recorder.autotuners and not self.recorder.forced:
            # On a GPU the autotuner benchmarks every config on a new key (a new size) inside the call, writing the
            # outputs with each: a config that leaves elements unwritten would look complete in run 1 and
            # "racy" in run 2. Benchmark it here, outside the judged runs (a forced config is never benchmarked).
            self.impl(impl, inputs, v)
        seed = v.seed + CALL_SEED if draws else None  # an implementation drawing alike gets the reference's draws
        # Implementation, run 1: allocations poisoned with NaN; stores tracked for placement.
        self.impl_runs += 1
        r1 = self.impl(impl, inputs, v, seed=seed, poison=float("nan"), guard_regions=self.gpu_guards,
                       track_stores=True, return_args=True)
        self.writers, self.store_lines = r1.writers, r1.store_lines
        if r1.error is not None:
            self._implementation_raised(v, r1, shapes)
            return None
        y1, impl_inputs, launches = r1.out, r1.args, r1.count
        self.collect_oob(v, r1)
        # Run 2: allocations poisoned with a finite sentinel; same inputs. Under the interpreter (programs run one
        # after another: no race to catch) it only tells unwritten elements from computed NaN, so it is skipped
        # when the first run left no NaN at all: half the CPU time of a correct kernel.
        if self.interpreted and not self.problem.random and not any(
                isinstance(y, torch.Tensor) and y.is_floating_point() and bool(torch.isnan(y).any())
                for y in flatten_outputs(y1) + [impl_inputs[i] for i in updated]):
            y2, rerun_inputs = y1, impl_inputs
            rerun_launches = None
        else:
            self.impl_runs += 1
            r2 = self.impl(impl, inputs, v, seed=seed, poison=self.sentinel, return_args=True)
            y2, rerun_inputs = (r2.out, r2.args) if r2.error is None else (None, clone_inputs(inputs))
            rerun_launches = r2.count
            self.collect_oob(v, r2)
        y1_flat = flatten_outputs(y1)
        y2_flat = flatten_outputs(y2) if y2 is not None else [None] * len(y1_flat)
        y1_flat += [impl_inputs[i] for i in updated]
        y2_flat += [rerun_inputs[i] if y2 is not None else None for i in updated]
        result_line = (self.impl(impl, inputs, v, trace_return=True).result_line if launches == 0 else None)
        return y1_flat, y2_flat, impl_inputs, launches, rerun_launches, result_line

    def _implementation_raised(self, v: Variant, r1: CallResult, shapes: str) -> None:
        """Report the first run's error with the variant's row: the accesses before it first (collect_oob), then
        the interpreter's own limit (reported once, by interpreter_limits), an OpBudgetExceeded raised while no
        budget had run out, a layout variant's refusal (a warning) or any other error (KL209)."""
        e = r1.error
        self.collect_oob(v, r1)  # accesses before the failure are findings of their own
        limit = e.limit if self.interpreted else None
        if limit is not None:  # the interpreter's gap, not the kernel's bug: reported once (interpreter_limits)
            self.limits.setdefault(readable(limit), []).append(v.name)
            self.row(v, shapes, "cpu-limit", None)
            return
        line = e.line
        raised = f"{type(e).__name__}: {api_note(readable(str(e)))[:400]}"
        if e.info.get("budget_raised"):
            self.fail("KL209", v, "the implementation raised kernel-lsp's OpBudgetExceeded while no "
                      f"budget had run out; {self.where(v, '')}", self.launch_line())
        elif v.kind == "layout":
            # A loud refusal is not a silent wrong value: a warning that says what it rejects.
            self.fail("KL209", v, f"rejects non-contiguous input: raises {raised}; the reference accepts it "
                      f"({v.description}; {shapes})", line, "warning", cause=readable(str(e)))
        else:
            self.fail("KL209", v, f"the implementation raised {raised}; {self.where(v, shapes)}", line,
                      cause=readable(str(e)))
        self.row(v, shapes, "raised", None)

    def impl(self, impl, inputs: list, v: Variant, **mode) -> CallResult:
        """One call of the implementation in the player, on copies of `inputs`, at the variant's sizes. A call that a
        GPU fault ended stops the check (DeviceFault); one stopped by the operation budget stops the variant."""
        r = self.player.call(impl, inputs, budget=self.budget, knobs=v.knobs or None, train=v.name == TRAIN_MODE,
                             grad=v.name != NO_GRAD, **mode)
        self.ops += r.ops
        if r.error is not None and r.error.device_fault:
            raise DeviceFault(r.error)
        if r.stopped:
            raise BudgetStop()
        return r

    def place(self, f: RuleFinding, e: Evidence) -> int | None:
        """The line a rule's finding belongs on: the store that wrote the bad element, else the launch site."""
        if f.place == "none":
            return None
        if f.place == "result":
            return e.result_line
        if f.place == "store" and f.comparison is not None:
            return self.line_for(f.output, f.comparison)
        return self.launch_line()

    def line_for(self, j: int, c: Comparison) -> int | None:
        """The line that stored output j's worst element (the first run's tracked stores), else the launch site."""
        if c.worst_index is not None and self.writers and j < len(self.writers):
            if c.code == "KL203":
                lines = (self.store_lines or [])[j] if j < len(self.store_lines or []) else []
                if lines:
                    return lines[0]
            else:
                lines = self.writers[j]
                try:
                    line = int(lines[tuple(c.worst_index)]) if lines is not None else -1
                except (IndexError, TypeError, ValueError):
                    line = -1
                if line >= 0:
                    return line
        return self.launch_line()

    def where(self, v: Variant, shapes: str | None) -> str:
        return describe_variant(v.kind, v.name, v.description, shapes)

    def collect_oob(self, v: Variant, r: CallResult) -> None:
        for b in r.breaches:
            where = "past the end of" if b.get("side") == "after" else "before the start of"
            self.fail("KL208", v, f"a store {where} {b.get('label')}: {b.get('changed')} guard byte(s) changed, up to "
                      f"{b.get('reach')} bytes {b.get('side')} it (GPU guard regions; variant {v.name})",
                      self.launch_line(), kind="store", count=b.get("changed"))
        for ev in r.oob:
            what = {"load": "reads", "store": "writes", "atomic": "updates"}.get(ev.get("kind"), "touches")
            self.fail("KL208", v, f"{ev.get('kernel')} {what} out of bounds: {ev.get('count')} access(es), e.g. "
                      f"{ev.get('detail')} (variant {v.name})", ev.get("line"), kind=ev.get("kind"),
                      count=ev.get("count"))

    def fail(self, code: str, v: Variant, message: str, line: int | None, severity: str | None = None,
             **data: Any) -> None:
        kind = _cause(code, v)
        new = not any(f.code == code and f.line == line and _cause(f.code, f.variant) == kind
                      for f in self.state.failures)
        self.state.failures.append(Failure(code, v, message, line, data, severity))
        if new and not self.probing:
            # The first failure of a cause is shown at once; the final finding (every variant it failed on)
            # replaces it when verification ends.
            ln = line if line is not None else self.launch_line()
            level = _LEVELS.get(severity or "") or (Severity.WARNING if v.name in self.outside else None)
            self.rep.preview(code, message, Span(ln, 0) if ln is not None else None, source="kernel-lsp.verify",
                             severity=level, variant=v.name, **data)

    def row(self, v: Variant, shapes: str, verdict: str, c: Comparison | None) -> None:
        ran = sorted({launch.spec.name for launch in self.recorder.launches[self.launch_mark:]})
        self.state.rows.append(VariantRow(v.name, v.description, shapes, verdict, c.max_abs if c else None,
                                          c.ref_max_abs if c else None, kernels=ran))

    def report(self, seconds: float) -> None:
        if self.unrepeatable:
            self.rep.add("KL007", f"the reference is not deterministic: two calls on the same inputs differ "
                         f"({self.unrepeatable}); it draws random numbers it does not seed, so no implementation can "
                         "match it element by element, and no value was judged; for a random op, set "
                         "`KERNEL_LSP_RANDOM = True` in the reference's module to compare distributions instead "
                         "(docs/verification.md, Random ops); otherwise seed or remove the draws",
                         None, source="kernel-lsp.verify")
            return
        if not self.state.rows and self.skipped:
            # Nothing was judged: saying nothing would read as a clean bill of health.
            name, reason = self.skipped[0]
            self.rep.add("KL003", f"no input variant could be verified: the reference failed on every one "
                         f"(first, {name}: {reason})", None, source="kernel-lsp.verify",
                         skipped=[n for n, _ in self.skipped])
        # One finding per cause: a value failure, a layout failure and a size failure at the same store are three
        # causes (a stride bug must not ride inside a rounding finding as "also on: strided").
        groups: dict[tuple, list[Failure]] = {}
        for f in self.state.failures:
            kind = _cause(f.code, f.variant)
            groups.setdefault((f.code, f.line, kind), []).append(f)
        compile_errors = [f.message for f in self.rep.sent if f.code == "KL100"]
        groups = {key: fs for key, fs in groups.items() if not (key[0] == "KL209" and any(
            _core(fs[0].data.get("cause", "")) in m for m in compile_errors if _core(fs[0].data.get("cause", ""))))}
        cached = {line for code, line, _ in groups if code == "KL206"}
        if cached:
            # One cause, one finding: a cached result also launches nothing on a cache hit (KL205) and is wrong
            # where the cache was filled on other inputs (KL200/KL201 at the same store).
            groups = {(code, line, kind): fs for (code, line, kind), fs in groups.items()
                      if code != "KL205" and not (code in ("KL200", "KL201") and line in cached)}
        fallback = self.launch_line()
        for (code, line, _), fs in groups.items():
            first = fs[0]
            others = sorted({f.variant.name for f in fs[1:]} - {first.variant.name})
            msg = first.message + (f" (also on: {', '.join(others)})" if others else "")
            if all(f.variant.name in self.configs for f in fs):
                msg = configs_prefix([self.configs[f.variant.name] for f in fs]) + msg
            severity = _merged_severity(fs)
            outside = all(f.variant.name in self.outside for f in fs)
            if outside and severity != Severity.INFO:
                # Only where the inputs leave the signs the problem always gives them: a warning that says so.
                severity = Severity.WARNING
                msg += (f"; only on inputs outside the problem's own distribution ({self.outside[first.variant.name]}):"
                        " the problem's own inputs pass")
            ln = line if line is not None else fallback
            self.rep.add(code, msg, Span(ln, 0) if ln is not None else None, source="kernel-lsp.verify",
                         severity=severity, variant=first.variant.name, variants=[f.variant.name for f in fs],
                         **first.data, **({"outside_distribution": True} if outside else {}))
        self.interpreter_limits()
        # A kernel launched in a stopped block-size variant is not verified, whatever the other variants found (a
        # kernel launched only there was cut from the recorder with the variant: pipeline.report_unexercised
        # reports it).
        stopped: dict[str, tuple[str, int]] = {}
        for vname, budget, launched in self.stopped:
            for name in launched:
                stopped.setdefault(name, (vname, budget))
        ran = self.ran_kernels()
        for qual, fn, _, _ in self.launched_sources():
            if fn.__name__ in stopped and fn.__name__ in ran:
                vname, budget = stopped[fn.__name__]
                self.rep.add("KL104", f"kernel {fn.__name__} is not verified: its block-size variant {vname} was "
                             f"stopped after {budget:,} interpreter operations in one run, too slow for the CPU "
                             "interpreter at those sizes; check it with --device cuda", self.rep.kernel_span(qual),
                             source="kernel-lsp.verify", severity=Severity.INFO, kernel=qual, variant=vname)
        self.report_untaken_branches(ran)
        # A kernel is verified by the variants it ran on (a file may dispatch: a TMA path at the problem's own
        # sizes, a pointer path at odd ones); rows where no kernel ran concern every kernel.
        for name in sorted(ran - set(stopped)):
            rows = [r for r in self.state.rows if not r.kernels or name in r.kernels]
            summary = Verification(rows, [SkippedVariant(n, r) for n, r in self.skipped],
                                   "cpu-interpreter" if self.interpreted else "cuda", round(seconds, 3),
                                   dict(self.base), self.player.guarded, round(self.first_cpu_seconds, 3),
                                   self.first_ops)
            self.rep.w.kernel(name, KernelFacts(verification=summary))

    def report_untaken_branches(self, ran: set[str]) -> None:
        """KL104 (information) for each side of an `if` on a kernel's constexprs that no launch took (branches.py)."""
        from .branches import untaken
        try:
            source = self.job.source_override
            if source is None:
                with open(self.job.path, encoding="utf-8") as f:
                    source = f.read()
        except (OSError, UnicodeDecodeError):
            return
        by_kernel: dict[str, list[dict]] = {}
        for spec in self.recorder.spec_list:
            by_kernel.setdefault(spec.name, []).append(dict(spec.constexprs))
        for name in sorted(ran):
            for u in untaken(source, name, by_kernel.get(name, [])):
                part = "the body" if u.side == "true" else "the else branch"
                self.rep.add("KL104", f"kernel {name}: {part} of `if {u.condition}:` never ran (every launch had "
                             f"{u.seen}): that path is not verified; no variant's sizes, dtypes or flags select it",
                             Span(u.line - 1, 0), source="kernel-lsp.verify", severity=Severity.INFO, kernel=name,
                             branch=u.side)

    def takes_float_scalars(self) -> bool:
        """Some launched kernel takes a float scalar argument (an fp32 in its signature), the way a Python float
        reaches a compiled kernel."""
        return any(t == "fp32" for launch in self.recorder.launches
                   for t in _flat_types(launch.spec.signature.values()))

    def ran_kernels(self) -> set[str]:
        """The names of the kernels launched on some variant so far."""
        return {k for r in self.state.rows for k in r.kernels}

    def launched_sources(self):
        """(qualname, kernel, source, argument types) for each recorded kernel whose source the player could read."""
        for qual, fn in self.recorder.functions.items():
            src = fn.source
            if src is None:
                continue
            dtypes = {t for l in self.recorder.launches if l.spec.qualname == qual
                      for t in _flat_types(l.spec.signature.values())}
            yield qual, fn, src, dtypes

    def untrusted_kernels(self) -> dict[str, str]:
        """Kernels whose numbers the CPU interpreter gets wrong, with the reason (measured on Triton 3.9):
        bf16 tl.dot gives garbage (triton issue #11584); fp32 -> fp8 casts drop the mantissa carry
        (7.9 -> 4.0 instead of 8.0) and round ties away from even (100 -> 104, not 96)."""
        if not self.interpreted:
            return {}
        out = {}
        for qual, _, src, dtypes in self.launched_sources():
            # pointer types read "*bf16", tensor descriptors "tensordesc<bf16[128, 64]>"
            if "tl.dot" in src and any("bf16" in t for t in dtypes):
                out[qual] = "tl.dot on bf16 gives wrong numbers in this Triton's CPU interpreter"
            elif any("fp8" in t for t in dtypes):
                out[qual] = ("fp8 casts in this Triton's CPU interpreter drop the mantissa carry (7.9 becomes 4.0) "
                             "and break ties away from even")
        return out

    def interpreter_limits(self) -> None:
        if not self.interpreted:
            return
        judged = [r for r in self.state.rows if r.verdict not in ("raised", "cpu-limit")]
        for limit, names in self.limits.items():
            # Not the kernel's failure: a warning when it left nothing judged (as KL106), else a note.
            self.rep.add("KL210", f"cannot be verified on the CPU: {limit}; Triton's interpreter stopped on "
                         f"{len(names)} variant(s) ({', '.join(names[:4])}{', ...' if len(names) > 4 else ''}): "
                         "verify it on a GPU (--device cuda or a runner)", self.rep.launch_span(self.recorder),
                         source="kernel-lsp.verify", severity=Severity.INFO if judged else Severity.WARNING,
                         variants=names, values_judged=False)
        untrusted, verified = self.untrusted_kernels(), self.ran_kernels()
        for qual, fn, src, dtypes in self.launched_sources():
            span = self.rep.kernel_span(qual)
            if qual in untrusted and fn.__name__ in verified:
                self.rep.add("KL210", f"{fn.__name__}: {untrusted[qual]}, so values were not judged here "
                             "(bounds, unwritten outputs, launches and shapes were); verify the numbers on a GPU",
                             span, source="kernel-lsp.verify", values_judged=False)
            fp32 = any(t == "*fp32" or t.startswith("tensordesc<fp32") for t in dtypes)
            ran = self.recorder.tf32.get(qual)  # None: the dots were not watched, so the source decides
            if ran or (ran is None and "tl.dot" in src and fp32 and not _FP32_DOT.search(src)):
                self.rep.add("KL210", f"{fn.__name__}: tl.dot on fp32 uses TF32 on the GPU by default (about 1e-3 "
                             "relative error) while the CPU interpreter computes it exactly; pass "
                             "input_precision=\"ieee\" if fp32 accuracy is intended", span, source="kernel-lsp.verify")


# An fp32 tl.dot whose precision is spelled out as fp32-accurate: IEEE, or three TF32 products (tf32x3: about
# fp32's error, which the GPU run judges; the interpreter computes every precision exactly).
_FP32_DOT = re.compile(r"""input_precision\s*=\s*["'](ieee|tf32x3)["']|allow_tf32\s*=\s*False""")


SPLIT_BY_KIND = ("KL200", "KL201", "KL203", "KL207", "KL209")  # findings kept apart per variant kind


def _cause(code: str, v: Variant) -> str:
    """What keeps two failures of one code at one line apart: the variant kind for the codes split by it, and an
    autotune config's failures always (they belong to configs this run did not pick)."""
    return v.kind if code in SPLIT_BY_KIND or v.kind == "config" else ""


_LEVELS = {"info": Severity.INFO, "warning": Severity.WARNING}


def _merged_severity(failures: list[Failure]) -> Severity | None:
    """The most severe of a group's failures; None (the code's own severity) when any has no lowered one."""
    levels = [_LEVELS.get(f.severity or "") for f in failures]
    if any(level is None for level in levels):
        return None
    return Severity.WARNING if Severity.WARNING in levels else Severity.INFO


def _flat_types(types) -> list[str]:
    """Triton type names, a tuple argument's (`x.shape`: ("i32", "i32")) unpacked: strings only."""
    out: list[str] = []
    for t in types:
        out += _flat_types(t) if isinstance(t, (tuple, list)) else [str(t)]
    return out


def _core(cause: str) -> str:
    """An exception's own words, without the wrapper's class names (InterpreterError: NotImplementedError: ...)."""
    return cause.rsplit(": ", 1)[-1].strip()


def _seeded_call(v: Variant) -> Callable:
    """A call of user code as the verifier makes it (no_grad_call), from the random state the variant's seed and
    CALL_SEED set: every side starts from the same random state, so a reference that draws is repeatable."""
    import torch

    def call(fn, args):
        torch.manual_seed(v.seed + CALL_SEED)
        return no_grad_call(fn, args)
    return call


def verify_problem(problem, player, rep, job, captured_output: Any = None,
                   before_report: Callable[[], Any] | None = None) -> "Verifier":
    """Verify; `before_report` runs after the variants and before the final findings (which replace the previews
    shown as failures were found)."""
    v = Verifier(problem, player, rep, job)
    v.before_report = before_report
    v.run(captured_output)
    return v


# Elements of a GPU variant's inputs (and its reference's weights) up to which its integers are tried on the CPU first.
CPU_SCREEN_ELEMENTS = 1 << 27


def screen_on_cpu(ref, inputs: list, own: list) -> str | None:
    """Why the integer variant `inputs` must not reach the reference on a GPU, or None when it may. Integers drawn of
    both signs or at the dtype's limits are indices or labels to some references; on the CPU an out-of-range index is
    an exception, on a GPU a device-side assert that ends the CUDA context for the rest of the job (index_add on the
    H200, 2026-12-01). The reference runs on a CPU copy, first on the problem's own inputs (`own`): where it cannot
    run there (a model that cannot be copied, an op or a tensor tied to the GPU), these integers cannot be tried
    first either, and are not run."""
    import copy

    import torch
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    weights = [*ref.parameters(), *ref.buffers()] if isinstance(ref, torch.nn.Module) else []
    if sum(t.numel() for t in tensors + weights) > CPU_SCREEN_ELEMENTS:
        return "too large to try on a CPU copy of the reference first"

    def on_cpu(fn, args) -> str | None:
        try:
            no_grad_call(fn, [x.detach().cpu() if isinstance(x, torch.Tensor) else x for x in args])
        except Exception as e:
            raise_device_fault(e)
            return f"{type(e).__name__}: {readable(str(e))[:120]}"
        return None
    try:
        fn = copy.deepcopy(ref).to("cpu") if isinstance(ref, torch.nn.Module) else ref
    except Exception as e:
        raise_device_fault(e)
        return f"the reference cannot be copied to the CPU to try them first ({type(e).__name__})"
    cannot = on_cpu(fn, own)
    if cannot is not None:
        return f"the reference does not run on a CPU copy to try them first ({cannot})"
    rejects = on_cpu(fn, inputs)
    return f"the reference rejects these integers on the CPU ({rejects})" if rejects is not None else None
