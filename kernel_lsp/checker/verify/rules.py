"""The verifier's rules: pure functions from what running one input variant collected (`Evidence`) to findings.

Running user code, poisoning allocations and guarding memory happen in verify.py; deciding what the collected
outputs mean happens here, with no Triton and no side effects, so every rule is testable in milliseconds with
hand-made tensors (tests/checker/verify/test_rules.py). Placement is left to the caller: a `RuleFinding` says whether
it belongs at the launch site or at the store that wrote a given element.

The rules, in the order `judge` applies them:
- KL204 an input the implementation modified (compared with the reference's inputs after its own call);
- KL202 a different number of outputs (then nothing else is judged);
- KL203 unwritten, KL201 NaN/inf, KL200 value, per output (compare.py holds the error budget);
- KL206 a wrong output identical to an earlier call's output on other inputs (a cached result);
- KL207 a second run on the same inputs that leaves the budget where the first stayed inside (a race);
- KL205 no kernel launched while producing the result.
Random ops are judged by `judge_random` instead: repeatability for a fixed seed, or, where the reference draws new
numbers on every call, draws that change between calls; distribution (Kolmogorov-Smirnov), where values sit (rank
correlation with each input, and between neighbouring elements) and the reference's per-sample invariant.
"""

from __future__ import annotations

import contextvars
import functools
import math
from dataclasses import dataclass
from typing import Any

from .compare import Comparison, compare_tensor
from .record import (SENTINEL, Evidence, Judgement, RuleFinding, describe_variant, draw_sentinel, located,
                     unwritten_mask)

# The evidence record, the findings and the words messages use are record.py's; callers import them from here too.
__all__ = ["SENTINEL", "Evidence", "RuleFinding", "describe_variant", "draw_sentinel", "fingerprint", "informative",
           "judge", "judge_random", "ks_statistic", "same", "sketch"]

KS_ALPHA = 1e-6


def same(a, b) -> bool:
    """Bit-level equality of two values; NaN equals NaN."""
    import torch
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.is_floating_point():
            return bool(((a == b) | (a.isnan() & b.isnan())).all())
        return bool(torch.equal(a, b))
    return a == b if not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor) else False


def mutated_input(e: Evidence) -> RuleFinding | None:
    """KL204: the inputs the implementation changed that the reference leaves as they were, each named with how
    much changed (an input the reference updates in place is judged as an output instead)."""
    import torch
    changed = []
    for i, (a, b) in enumerate(zip(e.inputs_after, e.reference_inputs_after)):
        if i not in e.updated and isinstance(a, torch.Tensor) and not same(a, b):
            changed.append((i, a, b))
    if not changed:
        return None
    names, details = [], []
    for i, a, b in changed:
        if a.shape == b.shape and a.dtype == b.dtype:
            diff = ~((a == b) | (a.isnan() & b.isnan())) if a.is_floating_point() else a.ne(b)
            detail = f"{int(diff.sum())} of {a.numel()} elements changed"
            if a.is_floating_point():
                delta = (a.double() - b.double()).abs()[diff]
                delta = delta[torch.isfinite(delta)]
                if delta.numel():
                    detail += f", by up to {float(delta.max()):.3g}"
        else:
            detail = "its shape or dtype changed"
        names.append(f"input {i} {tuple(a.shape)}")
        details.append(detail if len(changed) == 1 else f"input {i}: {detail}")
    one = len(changed) == 1
    which = names[0] if one else "inputs " + ", ".join(n[6:] for n in names[:-1]) + " and " + names[-1][6:]
    return RuleFinding("KL204", f"{which} {'was' if one else 'were'} modified by the implementation "
                       f"({'; '.join(details)}; the reference leaves {'it as it was' if one else 'them as they were'})",
                       data={"input": changed[0][0], "inputs": [i for i, _, _ in changed]})


def structure(e: Evidence) -> RuleFinding | None:
    """KL202: the implementation returns a different number of outputs."""
    if len(e.outputs) != len(e.reference):
        return RuleFinding("KL202", f"the implementation returns {len(e.outputs)} outputs, the reference "
                           f"{len(e.reference)}")
    return None


MIN_DISTINCT_FOR_STALE = 4  # an output with fewer distinct values can repeat by chance: it is a mismatch, not a cache


def informative(y) -> bool:
    """Whether an output could only repeat because it was cached: enough distinct values (a constant guard value,
    or a three-element result, repeats by chance)."""
    import torch
    if not isinstance(y, torch.Tensor) or y.numel() < 2 * MIN_DISTINCT_FOR_STALE:
        return False
    flat = y.detach().reshape(-1)[:65536]  # a bounded head: this runs on every output of every variant
    if flat.is_complex():
        flat = torch.view_as_real(flat).reshape(-1)
    if flat.is_floating_point() and flat.element_size() == 1:
        flat = flat.to(torch.float16)  # fp8 has no unique
    try:
        flat = flat[~torch.isnan(flat)] if flat.is_floating_point() else flat
        return torch.unique(flat[:4096]).numel() >= MIN_DISTINCT_FOR_STALE
    except (NotImplementedError, RuntimeError):
        return False  # a dtype torch cannot take apart here: no stale-result rule for it


_PRINT_INTS = {1: "int8", 2: "int16"}  # the integer view of a 1- or 2-byte value; 4- and 8-byte values as int32
_PRINT_CHUNK = 1 << 22


def fingerprint(y) -> tuple | None:
    """A bit-level fingerprint of a tensor (shape, dtype and two position-weighted sums of its bits, computed where
    the tensor lives): equal tensors have equal prints, and unequal ones collide with odds of about 2^-64 per pair
    (a collision could only turn a wrong output's mismatch into KL206, never pass one). None when not a tensor."""
    import torch
    if not isinstance(y, torch.Tensor):
        return None
    flat = y.detach().contiguous().reshape(-1)
    if flat.is_complex():
        flat = torch.view_as_real(flat).reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.to(torch.uint8)
    # 8-byte values as two 32-bit halves: a sign bit times an odd weight is 2^63, which two such bits cancel mod 2^64
    ints = flat.view(getattr(torch, _PRINT_INTS.get(flat.element_size(), "int32")))
    s1 = s2 = 0
    for start in range(0, ints.numel(), _PRINT_CHUNK):  # in chunks: a few times the chunk in temporaries
        bits = ints[start:start + _PRINT_CHUNK].to(torch.int64)
        pos = torch.arange(start, start + bits.numel(), device=bits.device, dtype=torch.int64)
        w1 = pos * 0x9E3779B1 + 0x7F4A7C15  # int64 arithmetic wraps: the sums are over Z/2^64
        w2 = (pos ^ 0x5BD1E995) * 0x27D4EB2F + 1
        s1 = (s1 + int((bits * w1).sum())) % 2**64
        s2 = (s2 + int(((bits + 0x165667B1) * w2).sum())) % 2**64
    return (tuple(y.shape), str(y.dtype), s1, s2)


SKETCH_SIZE = 64  # values a sketch keeps


@dataclass
class Sketch:
    shape: tuple
    dtype: str
    positions: Any  # flat indices (a CPU int64 tensor), drawn per verification where checked code cannot see them
    values: Any  # the output's values there, as float64 on the CPU
    variant: str


def sketch(y, variant: str, generator) -> Sketch | None:
    """The values of a floating-point output at SKETCH_SIZE positions drawn from `generator`."""
    import torch
    if not isinstance(y, torch.Tensor) or not y.is_floating_point() or y.numel() == 0:
        return None
    pos = torch.randint(0, y.numel(), (SKETCH_SIZE,), generator=generator)
    try:
        vals = y.detach().reshape(-1)[pos.to(y.device)].double().cpu()
    except (NotImplementedError, RuntimeError):
        return None
    return Sketch(tuple(y.shape), str(y.dtype), pos, vals, variant)


NEAR_REL = 1e-3  # a wrong output this close to an earlier call's (relative to that output's largest value) copies it


def _near(a, b) -> bool:
    """All of a within NEAR_REL of b (relative to b's largest finite value); NaN matches NaN."""
    import torch
    finite = torch.isfinite(b)
    scale = float(b[finite].abs().max()) if bool(finite.any()) else 0.0
    return scale > 0.0 and bool(torch.isclose(a, b, rtol=NEAR_REL, atol=NEAR_REL * scale, equal_nan=True).all())


def earlier_call(e: Evidence, j: int, y) -> str | None:
    """Whether y (wrong, informative) is bit for bit an earlier call's output on other inputs: "" for one of the
    recent calls, the variant's name for an older one, None when it is new."""
    if any(len(prev) == len(e.outputs) and same(prev[j], y) for prev in e.earlier):
        return ""
    return e.earlier_prints.get(fingerprint(y))


def near_earlier(e: Evidence, j: int, y) -> bool:
    """Whether wrong output y is, within NEAR_REL, a recent call's output on other inputs that is itself wrong for
    this call (so not an answer that two inputs share): a remembered result, scaled or nudged so that it is not the
    same bits."""
    import torch
    if not isinstance(y, torch.Tensor) or not y.is_floating_point() or not informative(y):
        return False
    rr, tt = e.reference[j], e.truth[j]
    answer = tt if isinstance(tt, torch.Tensor) else rr
    for prev in e.earlier:
        old = prev[j] if len(prev) == len(e.outputs) else None
        if not isinstance(old, torch.Tensor) or old.shape != y.shape or old.dtype != y.dtype or not informative(old):
            continue
        if (_near(y.double(), old.double()) and isinstance(answer, torch.Tensor) and answer.shape == old.shape
                and not _near(answer.double(), old.double())):
            return True  # y is the earlier output, and that output is not this call's answer
    # Older outputs, by their sketches: y matches one where it was sampled, and that output is not this call's
    # answer there (an earlier output that is, a layout variant's of the same values, says nothing).
    for sk in e.earlier_sketches:
        if sk.shape != tuple(y.shape) or sk.dtype != str(y.dtype) or not isinstance(answer, torch.Tensor):
            continue
        here = y.detach().reshape(-1)[sk.positions.to(y.device)].double().cpu()
        if _near(here, sk.values) and not _near(answer.detach().reshape(-1)[sk.positions.to(answer.device)]
                                                .double().cpu(), sk.values):
            return True
    return False


def stale_output(e: Evidence, j: int, comparison: Comparison) -> RuleFinding | None:
    """KL206: a wrong output equal to an earlier call's output on other inputs (and informative enough that the
    equality cannot be chance: a constant wrong output is reported as the mismatch it is)."""
    y = e.outputs[j]
    if comparison.ok or comparison.code not in ("KL200", "KL201") or not informative(y):
        return None
    which = earlier_call(e, j, y)
    if which is None:
        return None
    return RuleFinding("KL206", located(e, f"{e.name(j)} is identical to an earlier call's output on different "
                                           f"inputs{f' (variant {which})' if which else ''}: results are cached or "
                                           "do not depend on the inputs"))


def repeat_differs(e: Evidence, j: int) -> RuleFinding | None:
    """KL207: the second run on the same inputs leaves the error budget (the first run stayed inside it)."""
    import torch
    y_b, rr, tt, aa = e.rerun[j], e.reference[j], e.truth[j], e.abs_terms[j]
    if not isinstance(y_b, torch.Tensor) or same(y_b, e.outputs[j]):
        return None  # bit for bit the first run, which stayed inside the budget
    c2 = compare_tensor(y_b, rr, tt if isinstance(tt, torch.Tensor) else rr, e.name(j), None,
                        aa if isinstance(aa, torch.Tensor) and aa.is_floating_point() else None, **e.budget_args(j))
    if c2.ok or c2.code not in ("KL200", "KL201"):
        return None
    # Not a race: the second call returned what an earlier call on other inputs had returned, or it launched no
    # kernel at all (where the first did) and returned a wrong result: a result remembered across calls.
    which = earlier_call(e, j, y_b) if informative(y_b) else None
    if which is not None:
        return RuleFinding("KL206", located(e, f"the second run on the same inputs returned {e.name(j)} identical to "
                                               f"an earlier call's output on different inputs"
                                               f"{f' (variant {which})' if which else ''}, where the first run was "
                                               f"right: results are cached ({c2.message})"),
                           place="store", output=j, rerun=True, comparison=c2)
    if near_earlier(e, j, y_b):
        return RuleFinding("KL206", located(e, f"the second run on the same inputs returned {e.name(j)} within "
                                               f"{NEAR_REL:.0e} of an earlier call's output on different inputs, which "
                                               f"is not this call's answer, where the first run was right: results "
                                               f"are cached and altered ({c2.message})"),
                           place="store", output=j, rerun=True, comparison=c2)
    if e.rerun_launches == 0 and e.launches:
        return RuleFinding("KL206", located(e, f"the second run on the same inputs launched no Triton kernel (the "
                                               f"first launched {e.launches}) and returned a wrong {e.name(j)}, where "
                                               f"the first run was right: a result remembered across calls "
                                               f"({c2.message})"),
                           place="store", output=j, rerun=True, comparison=c2)
    return RuleFinding("KL207", located(e, f"two runs on the same inputs differ beyond rounding, a likely race "
                                           f"({c2.message})"), place="store", output=j, rerun=True, comparison=c2)


def judge_outputs(e: Evidence) -> tuple[list[RuleFinding], Comparison | None, bool]:
    """KL200, KL201, KL203, KL206 and KL207 for each output; returns (findings, worst comparison, stale)."""
    import torch
    findings: list[RuleFinding] = []
    worst: Comparison | None = None
    stale = False
    for j, (y, y_b, rr, tt, aa) in enumerate(zip(e.outputs, e.rerun, e.reference, e.truth, e.abs_terms)):
        name = e.name(j)
        if not isinstance(rr, torch.Tensor):
            continue
        if e.variant == "special" and not rr.is_floating_point():
            continue  # NaN -> integer conversion is undefined behaviour: not judged
        c = compare_tensor(y, rr, tt if isinstance(tt, torch.Tensor) else rr, name, unwritten_mask(y, y_b, e.sentinel),
                           aa if isinstance(aa, torch.Tensor) and aa.is_floating_point() else None, **e.budget_args(j))
        if not c.ok and c.code in ("KL200", "KL201") and e.untrusted:
            continue  # the interpreter computes this kernel's numbers wrongly: not judged (KL210 says so)
        cached = stale_output(e, j, c)
        if cached is not None:
            stale = True
            findings.append(cached)
            continue
        if worst is None or (not c.ok and worst.ok) or c.max_abs > worst.max_abs:
            worst = c
        if not c.ok:
            msg, severity = c.message, None
            if c.code == "KL200" and e.truth_dtype != "float64":
                msg += f" (truth computed in {e.truth_dtype}: the reference does not run in float64)"
                if not gross(c, y):
                    severity = "warning"  # a budget without a float64 truth is an estimate: a warning, unless gross
            findings.append(RuleFinding(c.code, located(e, msg), place="store", severity=severity, output=j,
                                        comparison=c, data=c.summary()))
        elif c.code is None:
            race = repeat_differs(e, j)
            if race is not None:
                stale = stale or race.code == "KL206"
                findings.append(race)
    return findings, worst, stale


def gross(c: Comparison, y) -> bool:
    """An error no rounding explains: more than the square root of the unit roundoff, relative (about half the
    digits of the dtype lost: 2.4e-4 in fp32, 0.022 in fp16)."""
    from .compare import UNIT_ROUNDOFF
    return c.max_rel > math.sqrt(UNIT_ROUNDOFF.get(str(getattr(y, "dtype", "")), 2.0**-24))


def no_launch(e: Evidence) -> RuleFinding | None:
    """KL205: a result returned without any Triton launch. Information only when every output is a copy of an
    input, bit for bit (`floor` of an integer tensor is one): an identity needs no kernel."""
    import torch
    if e.launches:
        return None
    returned = e.outputs[: len(e.outputs) - len(e.updated)]
    copies = [next((i for i, x in enumerate(e.inputs_before) if same(y, x)), None) for y in returned]
    if returned and all(isinstance(y, torch.Tensor) for y in returned) and None not in copies:
        which = ", ".join(f"input {i}" for i in copies)
        return RuleFinding("KL205", f"the implementation returned a copy of {which} without launching a Triton "
                           "kernel: an identity needs none, so there is nothing to verify", place="result",
                           severity="info")
    return RuleFinding("KL205", "the implementation returned a result without launching any Triton kernel "
                       "(a PyTorch fallback?)", place="result")


def judge(e: Evidence) -> Judgement:
    """All rules for a deterministic op, in order."""
    findings = [f for f in [mutated_input(e)] if f is not None]
    wrong_count = structure(e)
    if wrong_count is not None:
        return Judgement(findings + [wrong_count], "structure")
    outputs, worst, stale = judge_outputs(e)
    findings += outputs
    if not stale:
        findings += [f for f in [no_launch(e)] if f is not None]
    verdict = "stale" if stale else ("ok" if worst is None or worst.ok else worst.code)
    return Judgement(findings, verdict, worst)


KS_MANTISSA_BITS = 12  # values compared at this precision (2.4e-4 relative): a rounding is no difference of law


def ks_statistic(a, b) -> tuple[float, float]:
    """Two-sample Kolmogorov-Smirnov statistic of two tensors' values, and its critical value at KS_ALPHA. The values
    are compared at KS_MANTISSA_BITS: an implementation that divides by 1 - p where the reference multiplies by
    1 / (1 - p) differs from it by an ulp, and where the input repeats a value (a constant row) the two outputs'
    atoms sat an ulp apart, a distance of the whole atom's mass (a correct dropout was KL200 on the structured
    variant). The smaller of two readings counts, on grids half a step apart, so that a pair of values an ulp apart
    on either side of one grid's boundary is together on the other's."""
    d0, crit = _ks_sorted(_sorted_values(a), _sorted_values(b, a.device))
    if d0 == 0:
        return d0, crit
    d1, _ = _ks_sorted(_sorted_values(a, half=True), _sorted_values(b, a.device, half=True))
    return min(d0, d1), crit


def _sorted_values(a, device=None, half: bool = False):
    return _memo(a, ("sorted", str(device), half), lambda flat: _sorted_values_of(flat, device, half))


def _sorted_values_of(a, device, half: bool):
    import torch
    x = a.to(device or a.device).double().reshape(-1)
    if x.is_floating_point():
        mantissa, exponent = torch.frexp(x)
        step = float(2 ** KS_MANTISSA_BITS)
        grid = torch.floor(mantissa * step) + 0.5 if half else torch.round(mantissa * step)
        x = torch.where(torch.isfinite(x), torch.ldexp(grid / step, exponent), x)
    return torch.sort(x).values


def _ks_sorted(x, y) -> tuple[float, float]:
    import torch
    n, m = x.numel(), y.numel()
    if n == 0 or m == 0:
        return 0.0, 1.0
    grid = torch.cat([x, y])
    cdf_x = torch.searchsorted(x, grid, right=True).double() / n
    cdf_y = torch.searchsorted(y, grid, right=True).double() / m
    d = float((cdf_x - cdf_y).abs().max())
    c_alpha = math.sqrt(-0.5 * math.log(KS_ALPHA / 2))
    return d, c_alpha * math.sqrt((n + m) / (n * m))


def judge_random(e: Evidence) -> Judgement:
    """Random ops: same structure, repeatable for a fixed seed, no NaN the reference lacks, the same distribution
    as the reference, the per-sample invariant, and a launch."""
    if _MEMO.get() is None:  # one memo for the judgement and the confirmation it may recurse into
        token = _MEMO.set({})
        try:
            return judge_random(e)
        finally:
            _MEMO.reset(token)
    import torch
    findings = [f for f in [mutated_input(e)] if f is not None]
    wrong_count = structure(e)
    if wrong_count is not None:
        return Judgement(findings + [wrong_count], "structure")
    verdict = "ok"
    for j, (a, b, rr) in enumerate(zip(e.outputs, e.rerun, e.reference)):
        name = e.name(j)
        if not isinstance(a, torch.Tensor) or a.shape != rr.shape or a.dtype != rr.dtype:
            findings.append(RuleFinding("KL202", located(e, f"{name} is {getattr(a, 'dtype', type(a))} "
                                                           f"{tuple(getattr(a, 'shape', ()))}, the reference's "
                                                           f"{rr.dtype} {tuple(rr.shape)}")))
            verdict = "KL202"
            continue
        nan_free = not (a.is_floating_point() and torch.isnan(a).any() and not torch.isnan(rr).any())
        d, crit = ks_statistic(a, rr) if nan_free else (0.0, 1.0)
        own = draws_apart(e, j) if nan_free else 0.0
        crit = max(crit, own)
        if e.fresh_draws and isinstance(b, torch.Tensor) and same(a, b) and informative(a):
            # The reference's second call draws new numbers; an implementation whose draws never change (a
            # constant seed) has the right distribution per call and the wrong one across calls. One whose
            # distribution is wrong already (a dropout left out draws nothing, and repeats itself too) is said as
            # that, below.
            if d <= crit:
                findings.append(RuleFinding("KL200", located(e, f"two calls give the same {name}, bit for bit, where "
                                                               "the reference draws new numbers on every call: the "
                                                               "implementation's draws never change (a constant "
                                                               "seed?)")))
                verdict = "KL200"
        elif not e.fresh_draws and isinstance(b, torch.Tensor) and not same(a, b):
            findings.append(RuleFinding("KL207", located(e, f"two runs with the same inputs and seed give different "
                                                           f"{name}: a fixed seed must give a repeatable result")))
            verdict = "KL207"
        elif e.reseeded is not None and j < len(e.reseeded) and isinstance(e.reseeded[j], torch.Tensor) \
                and same(a, e.reseeded[j]) and informative(a):
            # The reference's draws change with its seed argument; an implementation that launches with a seed of
            # its own (a constant) repeats itself for every seed.
            findings.append(RuleFinding("KL200", located(e, f"another value of the seed argument gives the same "
                                                           f"{name}, bit for bit, where the reference's draws change "
                                                           "with it: the implementation does not draw from the seed "
                                                           "it is given (a constant seed?)")))
            verdict = "KL200"
        if a.is_floating_point() and torch.isnan(a).any() and not torch.isnan(rr).any():
            findings.append(RuleFinding("KL203", located(e, f"{int(torch.isnan(a).sum())} elements of {name} are "
                                                           "NaN (unwritten?) where the reference has none")))
            verdict = "KL203"
            continue
        if d > crit:
            zeros = (f"; zero fraction {float((a == 0).double().mean()):.4f} vs reference "
                     f"{float((rr == 0).double().mean()):.4f}")
            beyond = ("at alpha 1e-6, beyond what its own draws differ by" if own >= crit else "at alpha 1e-6")
            findings.append(RuleFinding("KL200", located(e, f"the distribution of {name} differs from the reference's "
                                                           f"(two-sample Kolmogorov-Smirnov D = {d:.4f} > {crit:.4f} "
                                                           f"{beyond}{zeros})"),
                                        data={"ks": d, "ks_critical": crit, "ks_reference_draws": own}))
            verdict = "KL200"
    if verdict == "ok":
        wrong = dependence(e) or neighbours(e)
        if wrong is not None:
            findings.append(wrong)
            verdict = "KL200"
    if callable(e.more_draws) and e.reference_draws and any(
            set(f.data) & CONFIRMED_FINDINGS for f in findings):
        # Judged against 9 draws of the reference: one that moves a whole tensor now and then (a batch flipped
        # at p = 0.1) often shows no such move in 9, and a correct implementation's one move was KL200. Drawn
        # CONFIRM_DRAWS more times before the finding stands.
        more, e.more_draws = e.more_draws(), None
        if more:
            e.reference_draws = list(e.reference_draws) + more
            e.confirmed = True
            return judge_random(e)
    screened = [f for f in findings if f.data.get("draws", math.inf) <= DEPENDENCE_DRAWS_JUDGED]
    if screened:
        # A finding at SCREEN_ALPHA that no more draws confirmed (none asked: a check whose first finding stood
        # already; or none came) says nothing.
        findings = [f for f in findings if f not in screened]
        if verdict == "KL200" and not any(f.code == "KL200" for f in findings):
            verdict = "ok"
    if e.sample_message:
        findings.append(RuleFinding("KL200", located(e, e.sample_message)))
        verdict = "KL200"
    findings += [f for f in [no_launch(e)] if f is not None]
    return Judgement(findings, verdict)


# The data of judge_random's findings that rest on the reference's draws: confirmed on CONFIRM_DRAWS more.
CONFIRMED_FINDINGS = frozenset({"ks_reference_draws", "rank_correlation", "neighbour_correlation"})
CLUSTERED = 1.5  # draws this much further apart than with their elements mixed: one draw moves many elements
CLUSTER_TAIL = 2.0  # a distance that is mostly one shared draw has a tail twice the Kolmogorov distribution's
DRAWS_SAMPLE = 1 << 18  # elements a draw is kept at, at most: fixed positions beyond (a GPU check's full sizes)


@functools.lru_cache(maxsize=8)
def sample_positions(numel: int, device) -> Any:
    """DRAWS_SAMPLE fixed positions of a flat tensor of `numel` elements (None where it has no more): every side of
    a comparison is taken at the same ones. Drawn with a seeded generator, O(DRAWS_SAMPLE) whatever the size."""
    import torch
    if numel <= DRAWS_SAMPLE:
        return None
    return torch.randint(0, numel, (DRAWS_SAMPLE,), generator=torch.Generator().manual_seed(numel)).to(device)


def sampled(t) -> Any:
    """A tensor flattened, at sample_positions where it is larger (what truth.reference_draws keeps of each draw)."""
    import torch
    if not isinstance(t, torch.Tensor):
        return t
    flat = t.detach().reshape(-1)
    at = sample_positions(flat.numel(), flat.device)
    return flat if at is None else flat[at]


def _reference_samples(e: Evidence, j: int) -> list:
    """The reference's output j and its other draws' (e.reference_draws), each at the `sampled` positions."""
    return [sampled(e.reference[j])] + [d[j] for d in (e.reference_draws or []) if j < len(d)]


def draws_apart(e: Evidence, j: int) -> float:
    """How far an implementation's output j may be from the reference's by the Kolmogorov-Smirnov distance, as the
    reference's own draws (its output and e.reference_draws, kept at `sampled` positions) are apart; 0 where they
    say nothing against the test's own critical value. That value assumes independent elements. A random op whose
    one draw moves many elements at once (stochastic depth zeroing whole samples, a random sign or scale per row)
    has draws far more apart than that, and a correct implementation drawing as it does failed the test. How much
    further: the mean distance of the draws' 36 pairs against that of the same draws with their elements mixed
    (each element taken from a draw chosen at random: what the draws would be if every element drew alone). About
    1 for an op that draws per element (1.06 simulated; the critical value stands up to CLUSTERED); 2 to 7 for
    stochastic depth of 3 to 128 rows, and then the critical value at the sample's size times that ratio times
    CLUSTER_TAIL, as the distance is then mostly one shared draw's (no correct variant of 500 per case beyond it,
    but 1 in 500 for 3 rows, where 9 draws may not show the op's spread)."""
    import torch
    first = e.reference[j]
    if not isinstance(first, torch.Tensor) or first.numel() == 0:
        return 0.0
    outs = _reference_samples(e, j)
    outs = [o for o in outs if isinstance(o, torch.Tensor) and o.shape == outs[0].shape and o.dtype == outs[0].dtype
            and not (o.is_floating_point() and torch.isnan(o).any())]
    if len(outs) < 3:
        return 0.0
    real = _mean_pair_distance([_sorted_values(o, first.device) for o in outs])
    stack = torch.stack([o.to(first.device) for o in outs])
    n = stack.shape[1]
    gen = torch.Generator().manual_seed(n)
    column = torch.arange(n, device=stack.device)
    mixed = [stack[torch.randint(0, len(outs), (n,), generator=gen).to(stack.device), column] for _ in outs]
    alone = _mean_pair_distance([_sorted_values_of(o, None, False) for o in mixed])  # made here: nothing to keep
    ratio = real / alone if alone > 0 else (1.0 if real == 0 else math.inf)
    if ratio <= CLUSTERED:
        return 0.0
    c_alpha = math.sqrt(-0.5 * math.log(KS_ALPHA / 2))
    return min(1.0, CLUSTER_TAIL * ratio * c_alpha * math.sqrt(2 / n))


ECDF_GRID = 1 << 14  # points the draws' distribution functions are compared at


def _mean_pair_distance(ordered: list) -> float:
    """The mean Kolmogorov-Smirnov distance over every pair of these sorted samples, each distribution function
    read at ECDF_GRID points, evenly spaced order statistics of each (the supremum over those points: about
    len(ordered)/ECDF_GRID below the exact one at most, and 36 pairs cost nine lookups, not 36 merges)."""
    import torch
    per = max(1, ECDF_GRID // len(ordered))
    grid = torch.cat([o[torch.linspace(0, o.numel() - 1, min(per, o.numel()), device=o.device).long()]
                      for o in ordered]).sort().values
    cdfs = torch.stack([torch.searchsorted(o, grid, right=True).double() / o.numel() for o in ordered])
    k = len(ordered)
    total = sum(float((cdfs[i] - cdfs[i + 1:]).abs().amax(dim=1).sum()) for i in range(k - 1))
    return total / (k * (k - 1) / 2)


DEPENDENCE_MIN = 256  # elements of an output and an input related; fewer say too little
DEPENDENCE_FLOOR = 0.05  # a difference of rank correlations below this is never judged
DEPENDENCE_SIGMAS = 10  # times the spread of the reference's own draws


def rank_correlation(a, b, magnitudes: bool = False) -> float | None:
    """Spearman's rank correlation of two same-sized flat tensors' values (or magnitudes), element by element
    (average ranks for ties: a dropout's zeros), over the positions where both are finite; None where fewer than
    DEPENDENCE_MIN are or either side is constant."""
    import torch
    x, y = a.detach().reshape(-1), b.detach().reshape(-1)
    keep = torch.isfinite(x) & torch.isfinite(y).to(x.device)
    if bool(keep.all()):  # the common case: each side's ranks are its own, taken once per judgement (_ranks)
        return _pearson(_ranks(x, magnitudes), _ranks(y, magnitudes).to(x.device)) \
            if x.numel() >= DEPENDENCE_MIN else None
    x, y = x.double()[keep], y.double().to(x.device)[keep]
    if x.numel() < DEPENDENCE_MIN:
        return None
    return _pearson(_average_ranks(x.abs() if magnitudes else x), _average_ranks(y.abs() if magnitudes else y))


def _pearson(a, b) -> float | None:
    """Pearson's correlation of two same-sized flat tensors (of ranks, here); None where either side is constant."""
    a, b = a - a.mean(), b - b.mean()
    scale = float(a.norm() * b.norm())
    return None if scale == 0 else float((a * b).sum()) / scale


def _average_ranks(x):
    import torch
    _, inverse, counts = torch.unique(x, sorted=True, return_inverse=True, return_counts=True)
    ends = torch.cumsum(counts, 0).double()
    return (ends - (counts.double() - 1) / 2)[inverse]


def _ranks(t, magnitudes: bool = False):
    """The average ranks of a tensor's values (or magnitudes), flat, as float64: once per judgement (_memo)."""
    return _memo(t, ("ranks", magnitudes),
                 lambda flat: _average_ranks(flat.double().abs() if magnitudes else flat.double()))


# A random op's judgement ranks and sorts the same tensors again and again: each reference draw against every input,
# in every band, for neighbours and for a second output, and once more when more draws confirm a finding.
# judge_random keeps what was computed here, for itself and the confirmation it recurses into.
_MEMO: contextvars.ContextVar[dict | None] = contextvars.ContextVar("kernel_lsp_rules_memo", default=None)
MEMO_ELEMENTS = 1 << 24  # elements kept at most (128 MiB of float64): past that, computed again


def _memo(t, what: tuple, compute):
    """compute(t flattened), kept in judge_random's memo under the flat tensor's memory (address, size, stride,
    dtype, device) and its version counter, so a view of the same elements (a band, `sampled`) finds it and an
    in-place change misses it; the memo holds the tensor itself, so no other tensor takes its memory while it
    lives."""
    flat = t.detach().reshape(-1)
    memo = _MEMO.get()
    if memo is None:
        return compute(flat)
    try:
        key = (flat.data_ptr(), flat.numel(), flat.stride(), flat.dtype, str(flat.device), flat._version) + what
    except RuntimeError:  # an inference-mode tensor has no version counter: not kept
        return compute(flat)
    if key in memo:
        return memo[key][1]
    value = compute(flat)
    held = memo.setdefault("elements", 0)
    size = value.numel() + (flat.numel() if flat.untyped_storage().data_ptr() != t.untyped_storage().data_ptr()
                            else 0)  # a flattened copy (of a non-contiguous tensor) is held too
    if held + size <= MEMO_ELEMENTS:
        memo[key] = (flat, value)
        memo["elements"] = held + size
    return value


def dependence(e: Evidence) -> RuleFinding | None:
    """A random op's output must follow its inputs as the reference's does, not only share its distribution: each
    output against each floating-point input of its shape, element by element, by rank correlation, the
    implementation's against the reference's over its draws (its output and e.reference_draws). A dropout that reads
    its input at the wrong places (a stride or offset bug, an input reversed) keeps the pooled distribution the
    Kolmogorov-Smirnov test looks at, and loses this. Judged where the implementation's correlation is further from
    the draws' mean than DEPENDENCE_FLOOR + 8/sqrt(n) + DEPENDENCE_SIGMAS x their standard deviation: the floor and
    the 8/sqrt(n) (several times the sampling noise of one rank correlation of n pairs) cover a reference whose one
    draw moves many elements at once (a random scale per row), whose spread the draws show."""
    import torch
    if not e.reference_draws:
        return None
    returned = len(e.outputs) - len(e.updated)
    for j in range(returned):
        a, r = e.outputs[j], e.reference[j]
        if not (isinstance(a, torch.Tensor) and a.is_floating_point() and a.numel() >= DEPENDENCE_MIN
                and isinstance(r, torch.Tensor) and r.shape == a.shape):
            continue
        refs = _reference_samples(e, j)
        ours_at = sampled(a)
        for i, x in enumerate(e.inputs_before):
            if not (isinstance(x, torch.Tensor) and x.is_floating_point() and x.shape == a.shape):
                continue
            x_at = sampled(x)
            ours = rank_correlation(x_at, ours_at)
            theirs = [rank_correlation(x_at, t) for t in refs
                      if isinstance(t, torch.Tensor) and t.shape == x_at.shape]
            if ours is None or len(theirs) < 3 or any(t is None for t in theirs):
                continue
            mean = sum(theirs) / len(theirs)
            sd = math.sqrt(sum((t - mean) ** 2 for t in theirs) / (len(theirs) - 1))
            allowed = DEPENDENCE_FLOOR + 8 / math.sqrt(x_at.numel()) + DEPENDENCE_SIGMAS * sd
            if abs(ours - mean) > allowed:
                return RuleFinding("KL200", located(
                    e, f"{e.name(j)} does not follow input {i} as the reference's does: its rank correlation with "
                       f"that input, element by element, is {ours:.3f}, the reference's {mean:.3f} (+-{sd:.3f} over "
                       f"{len(theirs)} draws; more than {allowed:.3f} apart): the values are drawn right but not "
                       f"where they belong, as when elements are read from the wrong places"),
                    data={"rank_correlation": round(ours, 4), "reference": round(mean, 4), "spread": round(sd, 4)})
            banded = _band_dependence(x_at, ours_at, refs) if a.numel() <= DRAWS_SAMPLE else None
            if banded is not None:
                (start, end, mine, (mean, sd, allowed), count) = banded
                return RuleFinding("KL200", located(
                    e, f"{e.name(j)} does not follow input {i} as the reference's does in its elements {start} to "
                       f"{end - 1} (flat order, of {a.numel()}): their rank correlation with that input is "
                       f"{mine:.3f}, the reference's {mean:.3f} (+-{sd:.3f} over {count} draws; more than "
                       f"{allowed:.3f} apart), as when one block (a tail) reads the wrong elements"),
                    data={"rank_correlation": round(mine, 4), "reference": round(mean, 4), "spread": round(sd, 4),
                          "elements": [start, end], "draws": count})
    return None


BANDS = 8  # dependence is also judged in this many runs of consecutive elements: a wrong tail block is a few percent


def _band_dependence(x, ours, refs: list) -> tuple | None:
    """The first band of BANDS runs of consecutive (flat) elements where the implementation's rank correlation
    with input `x` is a draws_outlier among the reference's draws': (start, end, its correlation, draws_outlier's
    (mean, spread, allowed), draws counted). A whole tensor's correlation moves by a twentieth where one tail block in
    twenty reads the wrong elements; the band holding it moves by a third."""
    import torch
    n = x.numel()
    if n < BANDS * DEPENDENCE_MIN:
        return None
    edges = [n * b // BANDS for b in range(BANDS + 1)]
    for start, end in zip(edges, edges[1:]):
        mine = rank_correlation(x[start:end], ours[start:end])
        theirs = [rank_correlation(x[start:end], t[start:end]) for t in refs
                  if isinstance(t, torch.Tensor) and t.numel() == n]
        theirs = [t for t in theirs if t is not None]
        if mine is None or len(theirs) < 3:
            continue
        outside = draws_outlier(mine, end - start, theirs)
        if outside is not None:
            return start, end, mine, outside, len(theirs)
    return None


FLAT_LAGS = tuple(2 ** k for k in range(1, 13))  # 2 to 4096 elements apart in flat order: Triton's block sizes


def _neighbour_correlations(t) -> dict:
    """Rank correlations of a tensor's neighbouring elements along each dimension of two or more, and of elements
    FLAT_LAGS apart in flat order: of the values, and of their magnitudes (a dropout's zeros, a random scale). Ranks
    are the whole tensor's (ties averaged), taken once; each correlation is Pearson's of the ranks of the pairs. Keys
    (kind, dimension) and (kind, "flat+lag"). Empty where a value is not finite."""
    import torch
    if not bool(torch.isfinite(t).all()):
        return {}
    found = {}
    for kind in ("values", "magnitudes"):
        ranks = _ranks(t, kind == "magnitudes").reshape(t.shape)
        for d, n in enumerate(t.shape):
            if n < 2:
                continue
            pairs = ranks.narrow(d, 0, n - 1).reshape(-1), ranks.narrow(d, 1, n - 1).reshape(-1)
            c = _pearson(*pairs) if pairs[0].numel() >= DEPENDENCE_MIN else None
            if c is not None:
                found[(kind, d)] = (c, pairs[0].numel())
        flat = ranks.reshape(-1)
        for lag in FLAT_LAGS:  # a draw repeated every `lag` elements in memory order (a mask per block of programs)
            if flat.numel() - lag < DEPENDENCE_MIN:
                break
            c = _pearson(flat[:-lag], flat[lag:])
            if c is not None:
                found[(kind, f"flat+{lag}")] = (c, flat.numel() - lag)
    return found


OUTLIER_FLOOR = 0.02  # a difference of correlations below this is never judged (draws_outlier)
SCREEN_ALPHA = 1e-3  # on the first draws: a finding to confirm (judge_random drops one it cannot confirm)
CONFIRMED_ALPHA = 1e-6  # on the draws of a confirmation
DEPENDENCE_DRAWS_JUDGED = 9  # the reference's output and its first draws (truth.DEPENDENCE_DRAWS + 1)


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction (Lentz's method)."""
    if x <= 0 or x >= 1:
        return 0.0 if x <= 0 else 1.0
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _incomplete_beta(b, a, 1 - x)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)) / a
    tiny, f, c, d = 1e-300, 1.0, 1.0, 0.0
    for i in range(400):
        m = i // 2
        if i == 0:
            num = 1.0
        elif i % 2 == 0:
            num = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        else:
            num = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        d = 1.0 + num * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + num / c
        c = c if abs(c) > tiny else tiny
        f *= c * d
        if abs(1.0 - c * d) < 1e-14:
            break
    return front * (f - 1.0)


@functools.lru_cache(maxsize=256)
def t_quantile(df: int, alpha: float) -> float:
    """Student's t with `df` degrees of freedom exceeded in magnitude with probability `alpha` (two-sided), by
    bisection on P(|T| > t) = I_{df / (df + t^2)}(df / 2, 1 / 2)."""
    lo, hi = 0.0, 1.0
    while _incomplete_beta(df / 2, 0.5, df / (df + hi * hi)) > alpha:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _incomplete_beta(df / 2, 0.5, df / (df + mid * mid)) > alpha else (lo, mid)
    return hi


def draws_outlier(mine: float, pairs: int, known: list[float]) -> tuple[float, float, float] | None:
    """(mean, spread, allowed) where `mine` lies outside the prediction interval of the reference draws' `known`
    values (Student's t for their number: at SCREEN_ALPHA on the first draws, CONFIRMED_ALPHA once more are drawn),
    widened by OUTLIER_FLOOR and 4/sqrt(pairs) (four times one correlation's sampling noise, where the draws show
    none), and farther than that widening from every draw: the interval assumes draws spread about normally, and a
    rare event (a sample of 2 dropped at p = 0.015) is a jump that one draw in 65 may show and the interval not
    cover."""
    k = len(known)
    near = OUTLIER_FLOOR + 4 / math.sqrt(pairs)
    if min(abs(mine - x) for x in known) <= near:
        return None  # one of the reference's own draws came this close (a rare event the others did not show)
    mean = sum(known) / k
    sd = math.sqrt(sum((x - mean) ** 2 for x in known) / (k - 1))
    sigmas = t_quantile(k - 1, SCREEN_ALPHA if k <= DEPENDENCE_DRAWS_JUDGED else CONFIRMED_ALPHA)
    allowed = near + sigmas * sd * math.sqrt(1 + 1 / k)
    return (mean, sd, allowed) if abs(mine - mean) > allowed else None


def neighbours(e: Evidence) -> RuleFinding | None:
    """A random op's neighbouring elements must be related as the reference's are: drawn alone where it draws each
    element alone, sharing a draw where it shares one (a random scale per row, a mask per sample). Marginals and the
    rank correlation with each input miss an implementation that reuses one random number for two neighbouring
    elements (`tl.rand(seed, offs // 2)`), gives every row the same mask, or applies a per-row scale per column. For
    each output of at most DRAWS_SAMPLE elements (each reference draw is kept whole there; larger ones are not
    judged here), the rank correlation of neighbours along each dimension, of values and of magnitudes, against the
    reference's draws (draws_outlier). A finding on the first draws stands once the judge's CONFIRM_DRAWS more
    confirm it."""
    import torch
    if not e.reference_draws:
        return None
    returned = len(e.outputs) - len(e.updated)
    for j in range(returned):
        a, r = e.outputs[j], e.reference[j]
        if not (isinstance(a, torch.Tensor) and isinstance(r, torch.Tensor) and r.shape == a.shape and a.dim() >= 1
                and not a.is_complex() and DEPENDENCE_MIN <= a.numel() <= DRAWS_SAMPLE):
            continue
        ours = _neighbour_correlations(a)
        theirs = [_neighbour_correlations(t.reshape(a.shape)) for t in _reference_samples(e, j)
                  if isinstance(t, torch.Tensor) and t.numel() == a.numel()]
        for key, (mine, pairs) in ours.items():
            known = [t[key][0] for t in theirs if key in t]
            outside = draws_outlier(mine, pairs, known) if len(known) >= 3 else None
            if outside is not None:
                (mean, sd, allowed), (kind, d) = outside, key
                which = (f"elements of {e.name(j)} {d[5:]} apart in memory order" if isinstance(d, str) else
                         f"neighbouring elements of {e.name(j)} along dimension {d}")
                return RuleFinding("KL200", located(
                    e, f"{which} are related as the reference's are "
                       f"not: the rank correlation of their {kind} is {mine:.3f}, the reference's {mean:.3f} "
                       f"(+-{sd:.3f} over {len(known)} draws; more than {allowed:.3f} apart): one random draw shared "
                       f"where the reference draws each element alone, or the reverse (a mask or scale reused "
                       f"along the wrong dimension)"),
                    data={"neighbour_correlation": round(mine, 4), "reference": round(mean, 4),
                          "spread": round(sd, 4), "dim": d, "draws": len(known)})
    return _outputs_related(e, returned)


def _pair_correlations(a, b) -> dict:
    """Rank correlations of two same-shaped tensors element by element, of values and of magnitudes; empty where a
    value is not finite or either side is constant."""
    import torch
    if not bool(torch.isfinite(a).all() and torch.isfinite(b).all()):
        return {}
    found = {}
    for kind in ("values", "magnitudes"):
        c = rank_correlation(a, b, kind == "magnitudes")
        if c is not None:
            found[kind] = c
    return found


def _outputs_related(e: Evidence, returned: int) -> RuleFinding | None:
    """Two outputs of one shape must be related as the reference's are: a dropout of q and of k must not share a
    mask where the reference draws each alone, and a returned mask must be the one the output was dropped with.
    Their rank correlation (values, magnitudes) against the reference's draws, by draws_outlier."""
    import torch
    outs = [(j, e.outputs[j]) for j in range(returned)
            if isinstance(e.outputs[j], torch.Tensor) and not e.outputs[j].is_complex()
            and isinstance(e.reference[j], torch.Tensor) and e.reference[j].shape == e.outputs[j].shape
            and DEPENDENCE_MIN <= e.outputs[j].numel() <= DRAWS_SAMPLE]
    for i, (j, a) in enumerate(outs):
        for k, b in outs[i + 1:]:
            if b.shape != a.shape:
                continue
            ours = _pair_correlations(a, b)
            theirs = [_pair_correlations(s, t) for s, t in zip(_reference_samples(e, j), _reference_samples(e, k))
                      if isinstance(s, torch.Tensor) and isinstance(t, torch.Tensor)
                      and s.numel() == t.numel() == a.numel()]
            for kind, mine in ours.items():
                known = [t[kind] for t in theirs if kind in t]
                outside = draws_outlier(mine, a.numel(), known) if len(known) >= 3 else None
                if outside is not None:
                    mean, sd, allowed = outside
                    return RuleFinding("KL200", located(
                        e, f"{e.name(j)} and {e.name(k)} are related as the reference's are not: the rank correlation "
                           f"of their {kind}, element by element, is {mine:.3f}, the reference's {mean:.3f} "
                           f"(+-{sd:.3f} over {len(known)} draws; more than {allowed:.3f} apart): one draw used for "
                           f"both where the reference draws each alone, or the reverse (a returned mask that is not "
                           f"the one applied)"),
                        data={"neighbour_correlation": round(mine, 4), "reference": round(mean, 4),
                              "spread": round(sd, 4), "outputs": [j, k], "draws": len(known)})
    return None
