"""The reference side of one variant's run (runs.py gathers it into the evidence record): the reference called on a
copy of the inputs, from the random state every side starts from; its truth, the reference in float64; and what each
output's error budget is made of (compare.py): the reference's spread, the rounding of float constants, the input
terms that feed each element, the reference on absolute values. One part of the Verifier (verifier.py), asked by the
runs (runs.py); it keeps what it learns of the reference once per check (whether it repeats itself, whether it draws
afresh on every call, which sign-free decompositions it calls)."""

from __future__ import annotations

import math
import os
from typing import Any, Callable

from ..compile.positions import readable
from ..problem.errors import deepest_line, raise_gpu_trouble
from ..problem.problem import manual_seed, resizes_out
from .compare import flatten_outputs, same_draws, same_finiteness
from .context import VerifyContext
from .findings import takes_float_scalars
from .plan.variants import Variant, absolute, clone_inputs, input_dtype, upcast
from .probes import (constant_rounding, no_grad_call, random_draws_call, reference_repeat, reference_spread,
                     rng_state)
from .rules import same, sampled
from .signs import sign_free_calls


# The calls start from a random state other than the one the inputs were drawn from: on a GPU the input factory
# draws on the device, and a reference seeded alike would draw the same Philox stream again. On an H200 torch's
# dropout then kept the inputs' larger values (its mask made from the numbers that made them: output std 1.31 where
# an unbiased mask gives 1.16), and a correct dropout failed the distribution test.
CALL_SEED = 7919
DEPENDENCE_DRAWS = 8  # a random reference's extra draws per variant: how far its own outputs are apart
SEED_TRIES = 64  # values an integer argument is moved to before it is taken for no seed
CONFIRM_DRAWS = 56  # more, before a finding rests on them: a rare event (a whole batch flipped at p = 0.1) shows


class ReferenceTruth:
    """The reference's outputs, their truth and the error budget's parts, for one variant (VariantRuns.collect)."""

    def __init__(self, ctx: VerifyContext):
        self.ctx = ctx
        # The reference called twice on the same inputs (once per check): None until then, "" when it repeated,
        # else where it changed (KL007: no value is judged against a reference that does not repeat itself).
        self.unrepeatable: str | None = None
        self.fresh_draws: bool | None = None  # random ops: the reference draws new numbers on every call
        # random ops with repeatable draws: the integer arguments whose value changes the reference's draws (its
        # seeds), asked once; None until then
        self.seed_args: list[int] | None = None
        # whether one change of each seed argument moved the reference's output (a draw per element); where it took
        # several (a rare event), one unchanged output of the implementation's proves nothing (runs._reseeded)
        self.seed_moves_at_once = True
        self.sign_free: list[str] | None = None  # the sign-free decompositions the reference calls (signs.py)

    def _reference_outputs(self, v: Variant, ref, inputs: list, shapes: str) -> tuple[Any, list, bool] | None:
        """The reference called on a copy of the inputs, from the random state every side starts from. Returns its
        output, that copy as the call left it, and whether the call drew random numbers though the problem is not
        random; for a random problem, whether the reference draws new numbers on every call is asked once. None when
        the variant is skipped: the reference rejects the inputs, or accepts them only by resizing an out= tensor."""
        import torch
        p = self.ctx.problem
        ref_inputs = clone_inputs(inputs)
        try:
            manual_seed(v.seed + CALL_SEED)
            rng = rng_state()
            with resizes_out() as resized:
                r = no_grad_call(ref, ref_inputs)
            draws = not p.random and rng_state() != rng
            if resized:
                self.ctx.state.skipped.append((v.name, f"the reference accepts {shapes} only by resizing a "
                                                       "mis-sized out= tensor, which PyTorch deprecates"))
                return None
        except Exception as e:
            raise_gpu_trouble(e)
            if v.name.startswith("int-"):
                return None  # integers the reference has no use for (negative indices, labels): nothing to say
            reference_file = self.ctx.job.link.reference
            where = deepest_line(e, reference_file)
            at = f" (at {os.path.basename(reference_file)}:{where + 1})" if where is not None else ""
            self.ctx.state.skipped.append((v.name, f"the reference rejects {shapes}: {type(e).__name__}: "
                                                   f"{readable(str(e))[:200]}{at}"))
            return None
        if p.random and self.fresh_draws is None:
            # Called again without a new seed: a reference with no seed among its inputs draws new numbers.
            try:
                again = flatten_outputs(no_grad_call(ref, clone_inputs(inputs)))
                self.fresh_draws = not all(same(a, b) for a, b in zip(flatten_outputs(r), again))
            except Exception as e:
                raise_gpu_trouble(e)
        if p.random and self.fresh_draws is False and self.seed_args is None:
            self.seed_args = self._seed_args(ref, inputs, flatten_outputs(r))
        return r, ref_inputs, draws

    def reference_draws(self, v: Variant, ref, inputs: list, first: int = 1, count: int = 0) -> list[list] | None:
        """A random op's reference drawn DEPENDENCE_DRAWS more times on the same inputs (its random state, and its
        seed arguments where it has them, moved each time): how far its outputs wander from draw to draw, the
        measure its implementation's distance is judged by (rules.draws_apart, rules.dependence). Each output is
        kept flat, at rules.sample_positions where it is larger (a GPU check's full sizes: 8 more copies of the
        outputs would cost memory, and comparing them time). `first` and `count` (DEPENDENCE_DRAWS by default): which
        draws, so that more of them continue the same sequence (CONFIRM_DRAWS, for rules.judge_random). None where
        the op is not random or a draw fails."""
        if not self.ctx.problem.random:
            return None
        draws = []
        for d in range(first, first + (count or DEPENDENCE_DRAWS)):
            moved = clone_inputs(inputs)
            for i in self.seed_args or []:
                for _ in range(d):
                    moved[i] = reseed(moved[i])
            try:
                manual_seed(v.seed + CALL_SEED + 7919 * d)
                draws.append([sampled(y) for y in flatten_outputs(no_grad_call(ref, moved))])
            except Exception as e:
                raise_gpu_trouble(e)
                return None
        return draws

    def _seed_args(self, ref, inputs: list, r_flat: list) -> list[int]:
        """The integer arguments of a random reference with repeatable draws whose value moves its output or what
        torch's random operations draw in it (each changed alone, by reseed): the seeds an implementation must draw
        from (runs.py calls it with them changed), and that truth.reference_draws moves. A rare event (a sample
        dropped at p = 0.015) leaves the output unmoved for most values of its seed: its draws show the seed, and
        without them (a reference drawing with numpy) the value is moved up to SEED_TRIES times before it is taken
        for no seed. A seed missed that way left every reference draw the same, and a correct implementation was
        judged against one draw of a rare event."""
        seeds = []
        call = random_draws_call
        try:  # the output compared is this call's too: one under the dispatch mode may differ from r_flat's
            manual_seed(CALL_SEED)  # (torch.compile does not compile under a dispatch mode: other draws)
            base, drawn = random_draws_call(ref, clone_inputs(inputs))
            base = flatten_outputs(base)
        except Exception as e:  # a reference the mode cannot run: its outputs alone, as before
            raise_gpu_trouble(e)
            call, base, drawn = (lambda f, xs: (no_grad_call(f, xs), [])), r_flat, []
        for i, x in enumerate(inputs):
            if type(x) is not int:
                continue
            moved = clone_inputs(inputs)
            for tries in range(1, SEED_TRIES + 1):  # a rare event (a batch flipped at p = 0.1) may not move in one
                moved[i] = reseed(moved[i])
                try:
                    manual_seed(CALL_SEED)
                    out, again = call(ref, clone_inputs(moved))
                except Exception as e:
                    raise_gpu_trouble(e)
                    break
                if not all(same(a, b) for a, b in zip(base, flatten_outputs(out))):
                    seeds.append(i)
                    self.seed_moves_at_once = self.seed_moves_at_once and tries == 1
                    break
                if drawn and (len(again) != len(drawn) or not all(same(a, b) for a, b in zip(drawn, again))):
                    seeds.append(i)  # its draws moved and its output did not: a rare event
                    self.seed_moves_at_once = False
                    break
        return seeds

    def reference_and_truth(self, v: Variant, ref, inputs: list, shapes: str, call: Callable) -> tuple | None:
        """The reference's outputs and their truth, the reference in float64 (in the task's dtype where that raises
        or draws other numbers). Returns the reference's copy of the inputs, whether it drew random numbers, the
        inputs it updates in place, the flat outputs of the reference and of the truth (each followed by those
        updated inputs), and the truth's dtype. None when the variant is skipped (_reference_outputs) or the
        reference does not repeat itself."""
        import torch
        p = self.ctx.problem
        ran = self._reference_outputs(v, ref, inputs, shapes)
        if ran is None:
            return None
        r, ref_inputs, draws = ran
        # Inputs the reference updates in place (an optimizer step, `out=`, running statistics) are outputs too.
        updated = [i for i, (a, b) in enumerate(zip(inputs, ref_inputs))
                   if isinstance(a, torch.Tensor) and not same(a, b)]
        truth_inputs = upcast(clone_inputs(inputs))
        r_flat = flatten_outputs(r) + [ref_inputs[i] for i in updated]
        if not p.random and self.unrepeatable is None and not self.ctx.state.probing:
            self.unrepeatable = reference_repeat(ref, inputs, r_flat, updated) or ""
            if self.unrepeatable:
                return None  # reported once, on the link (report): no implementation can match it element by element
        try:
            truth = call(p.float64(ref), truth_inputs)
            truth_dtype = "float64"
            if draws and not same_draws(r_flat, flatten_outputs(truth) + [truth_inputs[i] for i in updated]):
                # A reference that draws random numbers in its own dtype (randn_like) draws other numbers in
                # float64: that is no truth for these outputs; the reference in the task's dtype is.
                truth, truth_dtype, truth_inputs = r, str(input_dtype(inputs)), ref_inputs
        except Exception as e:
            raise_gpu_trouble(e)
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
        p = self.ctx.problem
        # A float64 problem's reference is its own float64 truth, so PyTorch's own error there is 0 by construction:
        # as without a float64 truth, how far it moves when its inputs move by one ulp stands in for it.
        floats = [o for o in r_flat if isinstance(o, torch.Tensor) and o.is_floating_point()]
        own_truth = bool(floats) and all(o.dtype == torch.float64 for o in floats)
        if self.sign_free is None:  # asked once: the same code at every size
            self.sign_free = [] if p.random else sign_free_calls(ref, inputs)
        signs = self.sign_free  # truthy where there are signs to align; its pairs turn repeated values' vectors
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
        # A decomposition's vectors (eigh, svd) turn by the rounding of the inputs over the gaps between its values:
        # with close but unequal values, PyTorch's one float32 result is a noisy measure of that (a correct eigh of
        # random symmetric matrices came out 6x over it), so the spread raises the budget there too.
        return (reference_spread(ref, inputs, r_flat, updated, call, signs=signs)
                if truth_dtype != "float64" or own_truth or signs else None)

    def budget_inputs(self, v: Variant, ref, inputs: list, r_flat: list, t_flat: list, updated: list[int],
                       truth_dtype: str, call: Callable) -> tuple[list | None, list | None, list, list]:
        """What the error budget of each output is made of (compare.py): the reference's spread
        (_reference_spread), the rounding of the float constants for kernels given them as fp32 scalars, the
        number of input terms that feed each output element, and the reference on absolute values (the
        accumulation floor; None per output where it cannot be had). Returned in that order, the absolute values
        last."""
        import torch
        spread = self._reference_spread(v, ref, inputs, r_flat, updated, truth_dtype, call)
        # The allowance for float constants is for kernels that receive them as fp32 scalars, and only for them.
        float64 = self.ctx.problem.float64
        constants = (constant_rounding(float64(ref), upcast(clone_inputs(inputs)), t_flat, updated, call)
                     if truth_dtype == "float64" and takes_float_scalars(self.ctx.recorder) else None)
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
            a_flat = flatten_outputs(call(float64(ref, absolute=True), abs_inputs))
            a_flat += [abs_inputs[i] for i in updated]
        except Exception as e:
            raise_gpu_trouble(e)
            a_flat = [None] * len(r_flat)
        if len(a_flat) != len(r_flat):
            a_flat = [None] * len(r_flat)
        return spread, constants, terms, a_flat

    def nothing_to_judge(self, v: Variant, r_flat: list, t_flat: list) -> bool:
        """The reference's outputs leave nothing to judge on this variant: NaN or infinities where its truth has
        none, or the other way round (noted as skipped), or a random op's special values, whose distributions
        are not compared."""
        import torch
        if v.name != "special" and not same_finiteness(r_flat, t_flat):
            # NaN/inf the reference returns in its own dtype and in the truth alike (a log of a negative draw)
            # are part of the answer; where only one of them has it, it overflowed: nothing to judge.
            self.ctx.state.skipped.append((v.name, "the reference itself overflows or returns NaN/inf here"))
            return True
        if self.ctx.problem.random and v.name == "special":
            return True  # distributions with NaN and infinities are not compared
        if v.name == "special" and any(isinstance(a, torch.Tensor) and a.is_floating_point() and
                                       bool((torch.isfinite(b.double()) & ~torch.isfinite(a.double())).any())
                                       for a, b in zip(r_flat, t_flat) if isinstance(b, torch.Tensor)):
            self.ctx.state.skipped.append((v.name, "the reference overflows in its own dtype here"))
            return True
        return False


def _seeded_call(v: Variant) -> Callable:
    """A call of user code as the verifier makes it (no_grad_call), from the random state the variant's seed and
    CALL_SEED set: every side starts from the same random state, so a reference that draws is repeatable."""
    import torch

    def call(fn, args):
        manual_seed(v.seed + CALL_SEED)
        return no_grad_call(fn, args)
    return call


def reseed(seed: int) -> int:
    """Another seed, of the same sign and in int32's range where the seed is: the value a seed argument is changed to."""
    return (seed + 7919) % (2**31 - 1) if seed >= 0 else -((-seed + 7919) % (2**31 - 1)) or -1
