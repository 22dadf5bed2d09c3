"""One variant's run and its evidence record (rules.py judges it): the reference and the implementation the variant
calls (fresh models where it changes them), its inputs, the reference side (truth.py), and the implementation's two
runs in the player, poisoned first with NaN and then with the drawn sentinel, its out-of-bounds accesses collected
and an error it raises reported (KL209). One part of the Verifier (verifier.py), driven by the schedule (schedule.py)
and the shrinking (shrink.py); it asks the reference side (truth.py) and records through the findings (findings.py)."""

from __future__ import annotations

import time
from typing import Any

from ...player.state import float_state, perturb, train_as_built
from ..problem.problem import Problem, manual_seed
from ..compile.positions import api_note, readable
from ..player import CallResult
from ..problem.errors import (IMPLEMENTATION, DeviceFault, OutOfMemory, UserCodeError, deepest_line, is_out_of_memory,
                              raise_device_fault, raise_gpu_trouble)
from .compare import flatten_outputs
from .context import VerifyContext
from .findings import Findings, where
from .plan.shapes import describe_init
from .plan.ties import NotApplicable, tie_inputs
from .plan.variants import Variant, clone_inputs, describe_inputs, has_integers, outside_profile
from .probes import no_grad_call
from .rules import Evidence, draw_sentinel
from .signs import aligned
from .truth import CALL_SEED, CONFIRM_DRAWS, DEPENDENCE_DRAWS, ReferenceTruth, _seeded_call, reseed


# The variants run besides the planned ones (schedule.py), which change how a side is built or called.
TRAIN_MODE = "train-mode"
PARAMETERS = "parameters"
NO_GRAD = "no-grad"
SAME_MODULE = "same-module"


def trains_differently(problem) -> bool:
    """The reference is a model that leaves a normalization or a dropout in training mode as built (PyTorch's default;
    the checks run in eval mode): a batch norm computes batch statistics there instead of its running ones, a dropout
    zeroes and rescales elements (loader._norms, loader._dropouts), or code of its own reads `self.training`
    (loader._reads_training)."""
    return bool(getattr(problem, "trains", False) or getattr(problem, "drops", False)
                or getattr(problem, "trains_in_code", False))


class BudgetStop(BaseException):
    """A call of the implementation was stopped by its operation budget: the variant ends here (run_within_budget).
    The stop is the player's word: with it, what the call reported it ran (`ops`) and the seconds the checker's own
    clock saw it take, from which run_within_budget tells a stop the interpreter made from one the implementation
    claimed."""

    def __init__(self, ops: int = 0, seconds: float = 0.0):
        super().__init__(ops, seconds)
        self.ops, self.seconds = ops, seconds


def has_parameters(problem: Problem) -> bool:
    """The reference is a model with float parameters or buffers (KernelBench's form): they can be moved."""
    import torch
    try:
        ref = problem.reference
    except Exception:
        return False
    return isinstance(ref, torch.nn.Module) and bool(float_state(ref))


def reference_rounds(problem: Problem, v: Variant) -> bool:
    """The reference rounds (or casts to an integer dtype) on the problem's own inputs at these sizes."""
    from .plan.ties import rounded_values
    try:
        ref, _ = problem.callables(v.knobs, v.setting)
        return bool(rounded_values(ref, problem.make_inputs(v.seed, v.knobs, v.setting)))
    except Exception:
        return False


def drops_in_training(problem, v) -> bool:
    """The variant puts a model with dropout in training mode, where the reference (otherwise not random) draws anew
    on every call."""
    return bool(v.name == TRAIN_MODE and getattr(problem, "drops", False) and not problem.random)


def judged_randomly(problem, v) -> bool:
    """The variant's outputs are judged as a random op's (rules.judge_random: their distribution, not their
    elements): the problem's reference draws, or the variant puts a model with dropout in training mode."""
    return bool(problem.random or drops_in_training(problem, v))


class VariantRuns:
    """Collect one variant's evidence (collect), and call the implementation in the player (impl). It keeps what
    the implementation's calls leave for the others: their count and operations (the schedule sizes the CPU
    variants by them) and the first run's tracked stores (where a finding is placed)."""

    def __init__(self, ctx: VerifyContext, truth: ReferenceTruth, findings: Findings):
        self.ctx, self.truth, self.findings = ctx, truth, findings
        # On a GPU the interpreter's bounds guard does not exist: guard bytes around every tensor catch stores.
        self.gpu_guards = not ctx.interpreted
        self.sentinel = draw_sentinel()  # the second run's poison, drawn per check: no fixed value to look for
        self.impl_runs = 0  # calls of the implementation so far (the planner counts operations per call)
        self.ops = 0  # interpreter operations of the implementation's calls so far
        self.writers: list | None = None  # per output of the last first run: the line that stored each element
        self.store_lines: list | None = None
        self.ties_reference = None  # the ties variant's fresh model, its float state at powers of two
        self.profile: list[str | None] = []  # the sign of each input in the problem's own distribution (schedule)
        # The same-module variant's model: the (knobs, setting) it is built at (the schedule sets it).
        self.module_built_at: tuple[dict, dict] = ({}, {})

    def ties(self, v: Variant, inputs: list) -> list:
        """The ties variant's inputs (ties.py); NotApplicable for a random op or a reference that does not round."""
        if self.ctx.problem.random:
            raise NotApplicable
        ref = self.ties_reference or self.ctx.problem.callables(v.knobs, v.setting)[0]
        return tie_inputs(ref, self.ctx.problem.float64(ref), inputs)

    def collect(self, v: Variant) -> Evidence | None:
        """Run the reference and the implementation on this variant's inputs and gather the evidence. Returns
        None when the variant is skipped (the reference or the input factory rejects it) or the implementation
        raised (reported here as KL209, with its row). The variant's size knobs stay set throughout: a reference
        that reads a module-level size when called (`torch.zeros(ROWS, ...)` beside `randint(0, ROWS, ...)` in the
        input factory) sees the size its inputs were drawn for. (On a GPU, indices drawn for a larger ROWS than the
        reference used made index_add_ fail a device-side assert, which ends the whole job.)"""
        with self.ctx.problem.knobs_set(v.knobs):
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
        reference = self.truth.reference_and_truth(v, ref, inputs, shapes, call)
        if reference is None:
            return None
        ref_inputs, draws, updated, r_flat, t_flat, truth_dtype = reference
        p = self.ctx.problem
        if v.name == TRAIN_MODE and draws:
            # Its training path drew random numbers (an F.dropout on self.training, noise added while training, a
            # torch module that draws while training: RReLU, an attention's dropout): from here on judged as a model
            # with dropout in training mode is (drops_in_training).
            p.drops = True
        spread, constants, terms, a_flat = self.truth.budget_inputs(v, ref, inputs, r_flat, t_flat, updated,
                                                                    truth_dtype, call)
        if self.truth.nothing_to_judge(v, r_flat, t_flat):
            return None
        runs = self._implementation_runs(v, impl, inputs, shapes, updated, draws)
        if runs is None:
            return None
        y1_flat, y2_flat, impl_inputs, launches, rerun_launches, result_line = runs
        # Kernels the interpreter computes wrongly, among those that ran here (a variant may launch one the
        # capture did not): values are not judged on this variant.
        ran = {launch.spec.qualname for launch in self.ctx.launched()}
        untrusted = bool(ran & set(self.findings.untrusted_kernels()))
        if self.truth.sign_free:  # outputs defined up to sign (signs.py): both sides judged with the truth's signs
            found = self.truth.sign_free  # its pairs: vectors turned within repeated values (rotations.py)
            y1_flat, r_flat = aligned(y1_flat, t_flat, found=found), aligned(r_flat, t_flat, found=found)
            y2_flat = aligned(y2_flat, t_flat, keep=self.sentinel, found=found)
        reseeded = self._reseeded(v, impl, inputs)
        sample_message = None
        if p.random and p.sample_check is not None and len(y1_flat) == len(r_flat):
            sample_message = p.sample_check(inputs, y1_flat[0] if len(y1_flat) == 1 else y1_flat)
        return Evidence(variant=v.name, kind=v.kind, description=v.description, shapes=shapes, outputs=y1_flat,
                        rerun=y2_flat, reference=r_flat, truth=t_flat, abs_terms=a_flat, truth_dtype=truth_dtype,
                        launches=launches, inputs_after=impl_inputs, reference_inputs_after=ref_inputs,
                        earlier=self.ctx.state.outputs, earlier_prints=self.ctx.state.prints,
                        earlier_sketches=self.ctx.state.sketches, untrusted=untrusted, sample_message=sample_message,
                        result_line=result_line, updated=updated, spread=spread, terms=terms, constants=constants,
                        inputs_before=inputs, fresh_draws=bool(self.truth.fresh_draws) or drops_in_training(p, v),
                        rerun_launches=rerun_launches,
                        reseeded=reseeded, reference_draws=self.truth.reference_draws(v, ref, inputs),
                        more_draws=lambda: self._more_draws(v, ref, inputs),
                        sentinel=self.sentinel, correlated=v.name == "structured")

    def _more_draws(self, v: Variant, ref, inputs: list) -> list | None:
        """CONFIRM_DRAWS more of the reference's draws on a variant's inputs, after the first DEPENDENCE_DRAWS, with
        the variant's size knobs set again (the judge asks after collect returned)."""
        with self.ctx.problem.knobs_set(v.knobs):
            return self.truth.reference_draws(v, ref, inputs, first=DEPENDENCE_DRAWS + 1, count=CONFIRM_DRAWS)

    def _reseeded(self, v: Variant, impl, inputs: list) -> list | None:
        """A random op whose reference draws from seed arguments (truth.seed_args): on the first variant, the
        implementation's outputs with those arguments changed (truth.reseed) and everything else as in its first run
        (a random op's calls are not seeded: `draws` is for ops that are not random), for judge_random to see whether
        its draws follow the seed. None elsewhere, when that call raised, or where one change of a seed did not move
        the reference's output either (truth.seed_moves_at_once: a rare event)."""
        seeds = self.truth.seed_args
        if not seeds or v.name != "seed-1" or not self.truth.seed_moves_at_once:
            return None
        moved = clone_inputs(inputs)
        for i in seeds:
            moved[i] = reseed(moved[i])
        r = self.impl(impl, moved, v)
        return flatten_outputs(r.out) if r.error is None else None

    def _variant_callables(self, v: Variant) -> tuple[Any, Any] | None:
        """The reference and the implementation the variant calls: fresh models for the variants that change them,
        for the same-module variant the reference at its sizes beside the implementation built for the base, else
        the problem's own at the variant's sizes. None when the variant is skipped (a side other than the
        implementation cannot be built, or the models have no parameter in common) or the implementation raised
        while it was built (KL209, reported here)."""
        p = self.ctx.problem
        try:
            self.ties_reference = None
            if v.name in (TRAIN_MODE, PARAMETERS) or (v.name == "ties" and has_parameters(self.ctx.problem)
                                                         and reference_rounds(self.ctx.problem, v)):
                return self._fresh_models(v)
            if v.name.startswith(SAME_MODULE):  # the reference at these sizes, the implementation as built before
                ref, _ = p.callables(v.knobs, v.setting)
                _, impl = p.callables(*self.module_built_at)
            else:
                ref, impl = p.callables(v.knobs, v.setting)
            return ref, impl
        except UserCodeError as e:
            if e.side != IMPLEMENTATION:
                self.ctx.state.skipped.append((v.name, f"the {e.side} cannot be built at these sizes"))
                return None
            self.findings.fail("KL209", v, f"{e}; {where(v, None)}", deepest_line(e.exc, self.ctx.job.path))
            return None

    def _fresh_models(self, v: Variant) -> tuple[Any, Any] | None:
        """Fresh models for a variant that changes them, since later variants read the ones they change: the
        reference in training mode, the ties variant's scales at powers of two on both sides, or the parameters
        moved alike on both sides. None when the implementation's parameters are not the reference's (the variant
        is skipped)."""
        import torch
        p = self.ctx.problem
        init = {q: n for q, n in (v.setting or {}).items() if q[0] == "init"}
        with p.knobs_set(v.knobs):
            ref, impl = p.build(v.knobs or {}, p.init(v.knobs, init) if init else None)
        if isinstance(ref, torch.nn.Module) and v.name == TRAIN_MODE:
            # where it trains differently, all of it in training mode; else as built (a norm the problem put in eval
            # mode stays so)
            train_as_built(ref, None if trains_differently(p) else p.as_built.get(id(ref)))
        elif isinstance(ref, torch.nn.Module) and v.name == "ties":
            # Scales the model holds (a quantizer's calibrated buffer) at powers of two on both sides, so
            # that the ties built from the inputs are ties there too (ties.py).
            moved = self.ctx.player.perturb(impl, v.seed, float_state(ref), mode="pow2")
            perturb(ref, v.seed, set(moved), mode="pow2")
            self.ties_reference = ref
        elif isinstance(ref, torch.nn.Module):
            moved = self.ctx.player.perturb(impl, v.seed, float_state(ref))
            if not moved:
                self.ctx.state.skipped.append((v.name, "the implementation's parameters are not the reference's "
                                                       "(no name and shape in common)"))
                return None
            perturb(ref, v.seed, set(moved))
        return ref, impl

    def _variant_inputs(self, v: Variant, ref) -> tuple[list, str] | None:
        """The variant's inputs, drawn by the input factory and transformed from the variant's seed, and their
        description for messages; how they leave the problem's own distribution is noted. None when the variant
        does not apply to these inputs, the input factory rejects its sizes, or (on a GPU) the reference rejects
        its integers, which there would be a device-side assert that ends the check."""
        import torch
        p = self.ctx.problem
        try:
            inputs = own = p.make_inputs(v.seed, v.knobs, v.setting)
            if v.transform is not None:
                manual_seed(v.seed)
                inputs = v.transform(inputs)
        except NotApplicable:
            return None
        except Exception as e:
            raise_gpu_trouble(e)
            self.ctx.state.skipped.append((v.name, f"the input factory rejects these sizes ({type(e).__name__})"))
            return None
        if v.kind == "values" and v.name not in ("seed-1", "seed-2"):
            ood = outside_profile(inputs, self.profile)
            if ood:
                self.findings.outside[v.name] = ood
        if v.name == "transposed" and not any(isinstance(x, torch.Tensor) and x.dim() >= 2 for x in inputs):
            return None  # for 1-D inputs this is the same as the strided variant
        if v.name.startswith("int-") and not has_integers(inputs):
            return None  # no integer input: the same as seed-1
        shapes = describe_inputs(inputs) + describe_init(p.init(v.knobs, v.setting), v.setting)
        if p.device != "cpu" and needs_cpu_screen(v, inputs):
            refused = screen_on_cpu(ref, inputs, own if v.kind == "values" else None)
            if refused:
                self.ctx.state.skipped.append((v.name, refused + "; on a GPU, integers the reference rejects are a "
                                                           "device-side assert, which would end the check"))
                return None
        return inputs, shapes

    def _implementation_runs(self, v: Variant, impl, inputs: list, shapes: str, updated: list[int],
                             draws: bool) -> tuple | None:
        """The implementation's two runs in the player, its allocations poisoned with NaN (stores tracked for
        placement) and then with the sentinel. Returns the flat outputs of both runs (each followed by the inputs
        updated in place, None for a second run that raised), the first run's inputs as the call left them, the
        launches of both runs, and the line that returns the result when nothing was launched. None when the first
        run raised (_implementation_raised)."""
        import torch
        if not self.ctx.interpreted and self.ctx.recorder.autotuners and not self.ctx.recorder.forced:
            # On a GPU the autotuner benchmarks every config on a new key (a new size) inside the call, writing the
            # outputs with each: a config that leaves elements unwritten would look complete in run 1 and
            # "racy" in run 2. Benchmark it here, outside the judged runs (a forced config is never benchmarked).
            self.impl(impl, inputs, v)
        seed = v.seed + CALL_SEED if draws else None  # an implementation drawing alike gets the reference's draws
        # A model's dropout in training mode: the reference draws anew on every call, so the second run is not seeded
        # again; its draws must differ from the first's.
        fresh = drops_in_training(self.ctx.problem, v)
        # Implementation, run 1: allocations poisoned with NaN; stores tracked for placement.
        self.impl_runs += 1
        r1 = self.impl(impl, inputs, v, seed=seed, poison=float("nan"), guard_regions=self.gpu_guards,
                       track_stores=True, return_args=True)
        self.writers, self.store_lines = r1.writers, r1.store_lines
        if r1.error is not None:
            self._implementation_raised(v, r1, shapes)
            return None
        y1, impl_inputs, launches = r1.out, r1.args, r1.count
        self.findings.collect_oob(v, r1)
        # Run 2: allocations poisoned with a finite sentinel; same inputs. Under the interpreter (programs run one
        # after another: no race to catch) it only tells unwritten elements from computed NaN, so it is skipped
        # when the first run left no NaN at all: half the CPU time of a correct kernel.
        if self.ctx.interpreted and not judged_randomly(self.ctx.problem, v) and not any(
                isinstance(y, torch.Tensor) and y.is_floating_point() and bool(torch.isnan(y).any())
                for y in flatten_outputs(y1) + [impl_inputs[i] for i in updated]):
            y2, rerun_inputs = y1, impl_inputs
            rerun_launches = None
        else:
            self.impl_runs += 1
            r2 = self.impl(impl, inputs, v, seed=None if fresh else seed, poison=self.sentinel, return_args=True)
            y2, rerun_inputs = (r2.out, r2.args) if r2.error is None else (None, clone_inputs(inputs))
            rerun_launches = r2.count
            self.findings.collect_oob(v, r2)
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
        self.findings.collect_oob(v, r1)  # accesses before the failure are findings of their own
        limit = e.limit if self.ctx.interpreted else None
        if limit is not None:  # the interpreter's gap, not the kernel's bug: reported once (interpreter_limits)
            self.findings.limits.setdefault(readable(limit), []).append(v.name)
            self.findings.row(v, shapes, "cpu-limit", None)
            return
        line = e.line
        raised = f"{type(e).__name__}: {api_note(readable(str(e)))[:400]}"
        if e.info.get("budget_raised"):
            self.findings.fail("KL209", v, "the implementation raised kernel-lsp's OpBudgetExceeded while no "
                               f"budget had run out; {where(v, '')}", self.ctx.launch_line())
        elif v.kind == "layout":
            # A loud refusal is not a silent wrong value: a warning that says what it rejects.
            self.findings.fail("KL209", v, f"rejects non-contiguous input: raises {raised}; the reference accepts "
                               f"it ({v.description}; {shapes})", line, "warning", cause=readable(str(e)))
        else:
            self.findings.fail("KL209", v, f"the implementation raised {raised}; {where(v, shapes)}", line,
                               cause=readable(str(e)))
        self.findings.row(v, shapes, "raised", None)

    def impl(self, impl, inputs: list, v: Variant, **mode) -> CallResult:
        """One call of the implementation in the player, on copies of `inputs`, at the variant's sizes. A call that a
        GPU fault ended stops the check (DeviceFault), as does one that ran out of memory (OutOfMemory); one stopped by
        the operation budget stops the variant."""
        t0 = time.monotonic()
        r = self.ctx.player.call(impl, inputs, budget=self.ctx.state.budget, knobs=v.knobs or None,
                                 train=v.name == TRAIN_MODE, grad=v.name != NO_GRAD, **mode)
        seconds = time.monotonic() - t0
        self.ops += r.ops
        if r.error is not None and r.error.device_fault:
            raise DeviceFault(r.error)
        if r.error is not None and is_out_of_memory(r.error):
            raise OutOfMemory(r.error, f"the {v.name} variant's inputs")
        if r.stopped:
            raise BudgetStop(r.ops, seconds)
        return r


# Elements of a GPU variant's inputs (and its reference's weights) up to which its integers are tried on the CPU first.
CPU_SCREEN_ELEMENTS = 1 << 27


def needs_cpu_screen(v: Variant, inputs: list) -> bool:
    """Whether a GPU variant's integers are tried on a CPU copy of the reference first (screen_on_cpu): the integer
    variants, and the size variants that crop or grow the inputs (a setting) where any input holds integers: an
    index drawn for the problem's sizes can be out of range at the variant's (index_select's rows at 1, H100)."""
    return v.name.startswith("int-") or (v.kind == "size" and bool(v.setting) and has_integers(inputs))


def screen_on_cpu(ref, inputs: list, own: list | None) -> str | None:
    """Why the integer variant `inputs` must not reach the reference on a GPU, or None when it may. Integers drawn of
    both signs or at the dtype's limits, or cropped from draws at other sizes, are indices or labels to some
    references; on the CPU an out-of-range index is an exception, on a GPU a device-side assert that ends the CUDA
    context for the rest of the job (index_add on the H200, 2026-12-01). The reference runs on a CPU copy, first on
    the problem's own inputs (`own`, when given): where it cannot run there (a model that cannot be copied, an op or
    a tensor tied to the GPU), these integers cannot be tried first either, and are not run."""
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
    cannot = on_cpu(fn, own) if own is not None else None
    if cannot is not None:
        return f"the reference does not run on a CPU copy to try them first ({cannot})"
    rejects = on_cpu(fn, inputs)
    if rejects is None:
        return None
    if own is None:  # a size variant: cropped or grown integers, or a reference that runs only off the CPU
        return f"the reference raises on a CPU copy of these inputs ({rejects})"
    return f"the reference rejects these integers on the CPU ({rejects})"
