"""Judge an implementation's output against the float64 truth, with PyTorch's own error as the yardstick.

The rule (docs/verification.md has the measurements behind it): with t the float64 truth, r PyTorch's
reference in the task's dtype, y the implementation, u the unit roundoff of the output dtype (2^-24 fp32,
2^-11 fp16, 2^-8 bf16), S = max |t| over the tensor, and E_ref = max |r - t| over the tensor,

    element i is within budget  iff  |y_i - t_i| <= 3 * E_ref + 2u * |t_i| + u * S + 8 * 2^-24 * A_i

That is: the implementation may be three times worse than PyTorch's worst element, plus one ulp of the
element and half an ulp at the tensor's scale. A_i is the reference applied (in float64) to the absolute
values of its float inputs and parameters: for sums, scans, products and convolutions it is the sum of the
absolute terms, which bounds the error of any fp32 accumulation order (Higham, Accuracy and Stability of
Numerical Algorithms, ch. 3-4). It keeps kernels that accumulate in fp32 in another order than PyTorch's CPU
code (which accumulates some reductions in float64) from being flagged. Integer, boolean and fp8 outputs
are exact (fp8 bit for bit with PyTorch's own cast; an integer element may also take the float64 path's value
where PyTorch's own differs from it). NaN and infinities must sit where the truth has them, with
the same sign. No element's budget is below half an ulp of the output dtype at its truth (at a zero truth, half
the smallest subnormal).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

K_REF = 3.0
K_ACCUM = 8.0
U_FP32 = 2.0**-24
UNIT_ROUNDOFF = {"torch.float64": 2.0**-53, "torch.float32": 2.0**-24, "torch.float16": 2.0**-11,
                 "torch.bfloat16": 2.0**-8, "torch.float8_e4m3fn": 2.0**-4, "torch.float8_e5m2": 2.0**-3}


@dataclass
class Comparison:
    ok: bool
    code: str | None = None  # KL200, KL201, KL202, KL203 when not ok
    message: str = ""
    max_abs: float = 0.0
    max_rel: float = 0.0
    ref_max_abs: float = 0.0
    worst_index: tuple[int, ...] | None = None
    worst_value: float | None = None
    worst_truth: float | None = None
    bad_fraction: float = 0.0
    bad_count: int = 0
    numel: int = 0

    def summary(self) -> dict[str, Any]:
        return {"max_abs": self.max_abs, "max_rel": self.max_rel,
                "ref_max_abs": self.ref_max_abs, "worst_index": list(self.worst_index) if self.worst_index else None,
                "bad_fraction": self.bad_fraction, "bad_count": self.bad_count}


def _fmt(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}g}"


def _digits(value: float, truth: float) -> int:
    """Significant digits that show a value and its truth apart (3 unless they agree in the first 3)."""
    import math
    if value == truth or not (math.isfinite(value) and math.isfinite(truth)) or truth == 0:
        return 3
    rel = abs(value - truth) / abs(truth)
    return min(10, max(3, math.ceil(-math.log10(rel)) + 2)) if rel > 0 else 3


def unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for d in reversed(shape):
        out.append(flat % d if d else 0)
        flat = flat // d if d else 0
    return tuple(reversed(out))


def compare_tensor(y, r, t, name: str = "output", unwritten=None, abs_terms=None,
                   spread: float | None = None, terms: float = 1.0, constants=None,
                   correlated: bool = False) -> Comparison:
    """Compare one output tensor y (implementation) to r (PyTorch, task dtype) and t (float64 truth).

    `unwritten`, when given, is a boolean mask of elements the implementation never wrote; `abs_terms` is the
    reference applied to absolute inputs (A in the rule above), when it could be computed. `spread`, given when
    there is no float64 truth (t is r), stands in for PyTorch's own error: how far the reference's own output
    moves when its inputs move by one ulp (see verify.py), so rounding that differs from PyTorch's is not an error.
    Given as a tensor of the output's shape, it is each element's own (inputs whose rows are conditioned very
    differently, as the structured variant's are: a constant row is ill-conditioned, an ordinary one is not).
    `terms` is how many input elements feed each output element on average (a reduction's length): the
    accumulation floor grows with its square root; its roundoff is fp32's, or the output's own where that is finer
    (a float64 problem is judged at float64). `constants`, per element, is how far the float64 reference moves when
    its float constants are rounded to fp32, as a compiled kernel receives them: added to that element's budget once.
    `correlated`: the inputs hold rows of one value repeated (the structured variant's constant row), where a serial
    sum's rounding errors all lean one way, so the accumulation floor is the worst case, n u A, not sqrt(n)'s.
    """
    import torch

    mismatch = _form_mismatch(y, r, name)
    if mismatch is not None:
        return mismatch
    n = y.numel()
    if n == 0:
        return Comparison(True, numel=0)
    r, t = r.to(y.device), t.to(y.device)
    if abs_terms is not None:
        abs_terms = abs_terms.to(y.device)
    if unwritten is not None:
        unwritten = unwritten.to(y.device)
    if unwritten is not None and bool(unwritten.any()):
        return _never_written(unwritten, tuple(y.shape), name, n)
    exact = not (y.is_floating_point() or y.is_complex()) or "float8" in str(y.dtype)
    if exact:
        return _compare_exact(y, r, t, name, n)

    # y and r stay in their own dtype (the arithmetic with t64 promotes to float64 without a float64 copy of
    # either); on a GPU at a problem's own size every pass over the tensor counts.
    y64, t64, r64 = y.detach().reshape(-1), t.detach().double().reshape(-1), r.detach().reshape(-1)
    if y.is_complex():
        y64, r64 = y64.double(), r64.double()  # as before: the real parts
    u = UNIT_ROUNDOFF.get(str(y.dtype), 2.0**-24)
    err, ref_err, tabs, nonfinite = _errors_against_truth(y64, t64, r64, name, y.shape, n)
    scale = float(tabs.max()) if n else 0.0
    budget, e_ref, local = _reference_budget(y, tabs, float(ref_err.max()), scale, u, spread)
    budget, moved = _add_rounding_allowances(budget, y, u, constants, abs_terms, terms, correlated)
    # No budget is below half an ulp of the output dtype at the truth: 2u|t| above is one ulp of a normal number;
    # at a zero or subnormal truth (an all-zero output) that floor is half the smallest subnormal.
    real = y.real.dtype if y.is_complex() else y.dtype
    budget = torch.clamp(budget, min=u * torch.finfo(real).tiny)
    bad = err > budget
    i = int(err.argmax())
    max_abs = float(err[i])
    rel = err / tabs.clamp_min(u * max(scale, 1e-300))
    comp = Comparison(True, max_abs=max_abs, max_rel=float(rel.max()), ref_max_abs=e_ref + moved,
                      worst_index=unravel(i, tuple(y.shape)), worst_value=y64[i].item(), worst_truth=t64[i].item(),
                      numel=n)
    if bool(bad.any()):
        j, own_abs, own_rel, elsewhere = _point_at_worst_bad(comp, bad, err, rel, y64, t64, i, tuple(y.shape))
        if local is not None:
            e_ref = max(e_ref, float(local[j]))  # the budget that element had
        d = _digits(comp.worst_value, comp.worst_truth)
        comp.message = (f"{name}[{', '.join(map(str, comp.worst_index))}] = {_fmt(comp.worst_value, d)}, truth "
                        f"{_fmt(comp.worst_truth, d)} (abs error {_fmt(own_abs)}, rel {_fmt(own_rel)}); "
                        + _own_error_clause(y.dtype, e_ref, moved, spread, local)
                        + f"{comp.bad_count} of {n} elements ({100 * comp.bad_fraction:.3g}%) out of budget"
                        + (f"; largest errors elsewhere: {', '.join(elsewhere)}" if elsewhere else ""))
    if nonfinite is not None:
        if not comp.ok:
            nonfinite.message += f"; the finite elements are wrong too: {comp.message}"
        return nonfinite
    return comp


def _form_mismatch(y, r, name: str) -> Comparison | None:
    """A KL202 Comparison when the implementation's output is not a tensor of the reference's shape and dtype,
    else None."""
    import torch
    if not isinstance(y, torch.Tensor):
        return Comparison(False, "KL202", f"{name} is a {type(y).__name__}, the reference returns a tensor")
    if tuple(y.shape) != tuple(r.shape):
        return Comparison(False, "KL202", f"{name} has shape {tuple(y.shape)}, the reference's has {tuple(r.shape)}")
    if y.dtype != r.dtype:
        return Comparison(False, "KL202", f"{name} has dtype {y.dtype}, the reference's is {r.dtype}")
    return None


def _never_written(unwritten, shape: tuple[int, ...], name: str, n: int) -> Comparison:
    """The KL203 Comparison for an output some of whose elements the implementation never wrote: how many, and
    the first of them."""
    count = int(unwritten.sum())
    first = unravel(int(unwritten.reshape(-1).nonzero()[0]), shape)
    return Comparison(False, "KL203", f"{count} of {n} elements of {name} were never written "
                      f"(first at index {first})", worst_index=first, bad_count=count, bad_fraction=count / n,
                      numel=n)


def _compare_exact(y, r, t, name: str, n: int) -> Comparison:
    """Judge an integer, boolean or fp8 output, which must equal PyTorch's element for element; an integer
    element may also take the float64 path's value where PyTorch's own differs from it."""
    import torch
    if "float8" in str(y.dtype):
        # An fp8 output is a cast: it must match PyTorch's cast bit for bit (NaN matching NaN).
        y, r = y.view(torch.uint8), r.view(torch.uint8)
    diff = y.ne(r)
    if "float8" not in str(y.dtype) and t is not r and isinstance(t, torch.Tensor) and t.dtype == y.dtype \
            and tuple(t.shape) == tuple(y.shape):
        # Where PyTorch's own result is off the float64 path's (a quotient a few ulps from a rounding tie: CUDA
        # divides by a scalar through its reciprocal), either value is right; where they agree, theirs is exact.
        diff &= y.ne(t.to(y.device))
    if bool(diff.any()):
        count = int(diff.sum())
        i = int(diff.reshape(-1).nonzero()[0])
        idx = unravel(i, tuple(y.shape))
        return Comparison(False, "KL200", f"{count} of {n} elements of {name} differ (exact {y.dtype} required); "
                          f"first at {idx}: got {y.reshape(-1)[i].item()}, expected {r.reshape(-1)[i].item()}",
                          worst_index=idx, bad_count=count, bad_fraction=count / n, numel=n,
                          worst_value=float(y.reshape(-1)[i].item()), worst_truth=float(r.reshape(-1)[i].item()))
    return Comparison(True, numel=n)


def _errors_against_truth(y64, t64, r64, name: str, shape, n: int) -> tuple:
    """The implementation's and PyTorch's absolute errors against the truth, and the truth's magnitudes, over the
    elements judged by value, with the KL201 Comparison when NaN or infinities disagree (else None): a
    non-finite element counts as no error here, and the finite elements are still judged."""
    import torch
    nonfinite = None  # a KL201: the finite elements are still judged, and said when they are wrong too
    if bool(torch.isfinite(y64 + t64 + r64).all()):
        # No NaN or infinity anywhere (a NaN or infinity in any of the three makes the sum non-finite).
        err = (y64 - t64).abs()
        ref_err = (r64 - t64).abs()
        tabs = t64.abs()
    else:
        fin_t = _nonfinite(y64, t64, r64, name, shape, n)
        if isinstance(fin_t, Comparison):
            # A wrong reduction axis makes some NaN and every finite element wrong: both are said.
            nonfinite, fin_t = fin_t, torch.isfinite(t64) & torch.isfinite(y64) & torch.isfinite(r64)
        err = torch.where(fin_t, (y64 - t64).abs(), 0.0)
        ref_err = torch.nan_to_num(torch.where(fin_t, (r64 - t64).abs(), 0.0), nan=0.0, posinf=0.0)
        tabs = torch.where(fin_t, t64.abs(), 0.0)
    return err, ref_err, tabs, nonfinite


def _reference_budget(y, tabs, e_ref: float, scale: float, u: float, spread) -> tuple:
    """Each element's budget from PyTorch's own error e_ref: three times it (or, given a per-element spread, that
    element's own where it is larger), plus one ulp of the element and half an ulp at the tensor's scale. A scalar
    spread raises e_ref to it. Returns the budget, e_ref and the per-element spread (None without one)."""
    import torch
    local = None  # a per-element spread (the structured variant's rows are conditioned very differently)
    if isinstance(spread, torch.Tensor) and tuple(spread.shape) == tuple(y.shape):
        local = torch.nan_to_num(spread.detach().to(y.device).double().reshape(-1), nan=0.0, posinf=0.0)
        budget = K_REF * torch.clamp(local, min=e_ref) + 2 * u * tabs + u * scale
    else:
        if spread is not None and not isinstance(spread, torch.Tensor):
            e_ref = max(e_ref, spread)
        budget = K_REF * e_ref + 2 * u * tabs + u * scale
    return budget, e_ref, local


def _add_rounding_allowances(budget, y, u: float, constants, abs_terms, terms: float, correlated: bool) -> tuple:
    """Add to the budget how far rounding the reference's float constants to fp32 moves each element, and the
    accumulation floor k u A for sums taken in another order than PyTorch's. Returns the budget and the largest
    move of the constants (0.0 without them)."""
    import torch
    moved = 0.0
    if constants is not None and tuple(constants.shape) == tuple(y.shape):
        d = torch.nan_to_num(constants.detach().to(y.device).double().reshape(-1).abs(), nan=0.0, posinf=0.0)
        moved = float(d.max())
        budget = budget + d
    if abs_terms is not None and tuple(abs_terms.shape) == tuple(y.shape):
        a = abs_terms.detach().double().reshape(-1).abs()
        # A serial fp32 sum of n terms is typically off by sqrt(n) u times the sum of their absolute values
        # (Higham's rule of thumb; the worst case is n u): 8 u A for short sums, 2 sqrt(n) u A for long ones.
        k_accum = max(K_ACCUM, 2 * math.sqrt(max(1.0, terms)) if not correlated else terms)
        budget = budget + k_accum * min(U_FP32, u) * torch.nan_to_num(a, nan=0.0, posinf=0.0)
    return budget, moved


def _point_at_worst_bad(comp: Comparison, bad, err, rel, y64, t64, i: int, shape: tuple[int, ...]) -> tuple:
    """Mark the comparison failed (KL200) with its count of out-of-budget elements and point it at the one whose
    error is largest. Returns that element's flat index, its own absolute and relative errors, and where the
    tensor-wide largest errors are when another element holds them (i is the largest absolute error's index)."""
    import torch
    comp.ok = False
    comp.code = "KL200"
    comp.bad_count = int(bad.sum())
    comp.bad_fraction = comp.bad_count / comp.numel
    j = int(torch.where(bad, err, torch.zeros_like(err)).argmax())
    comp.worst_index = unravel(j, shape)
    comp.worst_value, comp.worst_truth = y64[j].item(), t64[j].item()
    # The quoted element's own errors; the tensor-wide maxima only when another element holds them.
    own_abs, own_rel = float(err[j]), float(rel[j])
    elsewhere = []
    if i != j:
        elsewhere.append(f"abs {_fmt(comp.max_abs)} at [{', '.join(map(str, unravel(i, shape)))}]")
    if comp.max_rel > own_rel * (1 + 1e-9):
        k = int(rel.argmax())
        elsewhere.append(f"rel {_fmt(comp.max_rel)} at [{', '.join(map(str, unravel(k, shape)))}]")
    return j, own_abs, own_rel, elsewhere


def _own_error_clause(dtype, e_ref: float, moved: float, spread, local) -> str:
    """The yardstick the message quotes: PyTorch's own error in the output dtype (with how far rounding its float
    constants to fp32 moves the truth), or, without a float64 truth, how far the reference moves when its inputs
    move by one ulp, at the quoted element when that is known per element."""
    if spread is None:
        return (f"PyTorch's own {str(dtype).replace('torch.', '')} error is at most {_fmt(e_ref)}"
                + (f" (its float constants rounded to fp32 move the truth by up to {_fmt(moved)})"
                   if moved else "") + "; ")
    if local is not None:
        return f"the reference moves by up to {_fmt(e_ref)} there when its inputs move by one ulp; "
    return f"the reference moves by up to {_fmt(e_ref)} when its inputs move by one ulp; "


def _nonfinite(y64, t64, r64, name: str, shape, n: int):
    """Where NaN or infinities are: a KL201 Comparison when the implementation has them where the truth does
    not (or lacks them where it has them), else the mask of elements to judge by value (the truth is finite and
    the implementation is not merely as non-finite as PyTorch in the task's dtype)."""
    import torch
    fin_t = torch.isfinite(t64)
    # Non-finite positions: NaN where the truth is NaN, infinities of the same sign.
    nan_bad = torch.isnan(y64) != torch.isnan(t64)
    inf_bad = (torch.isinf(y64) | torch.isinf(t64)) & ~(y64 == t64) & ~torch.isnan(t64)
    # Where PyTorch in the task's dtype has the implementation's NaN or infinity (it overflows there too), the
    # implementation is as good as PyTorch: neither a KL201 nor an error.
    as_pytorch = (torch.isnan(y64) & torch.isnan(r64)) | (torch.isinf(y64) & (y64 == r64))
    nonfinite_bad = (nan_bad | inf_bad) & ~as_pytorch
    if bool(nonfinite_bad.any()):
        i = int(nonfinite_bad.nonzero()[0])
        idx = unravel(i, tuple(shape))
        count = int(nonfinite_bad.sum())
        got, want = y64[i].item(), t64[i].item()
        what = (f"{name}[{', '.join(map(str, idx))}] is {got} where the truth is {want}"
                + (" (a NaN was dropped)" if want != want and got == got else "")
                + (" (a NaN where the truth has none)" if got != got and want == want else ""))
        return Comparison(False, "KL201", f"{what}; {count} of {n} elements disagree on NaN/inf", worst_index=idx,
                          bad_count=count, bad_fraction=count / n, numel=n, worst_value=got, worst_truth=want)
    return fin_t & ~as_pytorch


def flatten_outputs(out) -> list:
    if isinstance(out, (list, tuple)):
        return [x for o in out for x in flatten_outputs(o)]
    return [out]


def same_finiteness(a_flat: list, b_flat: list) -> bool:
    """Both sides have their NaN and infinities at the same positions (float outputs of equal shape)."""
    import torch
    for a, b in zip(a_flat, b_flat):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.is_floating_point():
            # In their own dtype (no float64 copies), but fp8, which has no isfinite, widened to fp16.
            fa, fb = (torch.isfinite(x.half() if x.element_size() == 1 else x) for x in (a, b))
            if fa.shape != fb.shape or not bool((fa == fb).all()):
                return False
    return True


def same_draws(r_flat: list, t_flat: list) -> bool:
    """The float64 truth of a reference that draws random numbers took the same draws as the reference in
    its own dtype: same NaN/inf positions and values close (different draws differ by the values' own size)."""
    import torch
    if len(r_flat) != len(t_flat) or not same_finiteness(r_flat, t_flat):
        return False
    for a, b in zip(r_flat, t_flat):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.is_floating_point():
            a, b = a.double(), b.double()
            ok = torch.isfinite(a)
            if bool(ok.any()) and float(((a - b).abs()[ok]).max()) > 1e-2 * (float(b.abs()[ok].max()) + 1e-30):
                return False
    return True
