"""Input variants for verification: each a named, reproducible way to call the implementation.

Value variants keep the problem's shapes and change the numbers: fresh seeds of the problem's own
distribution, signed normal, a coarse dyadic grid (rounding ties, exact zeros, repeats), heavy-tailed (Student t,
2 degrees of freedom), large and tiny magnitudes, and special values (NaN, +-inf, -0.0). Size variants change the module-level size knobs (`batch_size = 16`) to
odd values that are not multiples of any block size. Layout variants keep the values and change the strides
(transposed storage, every second element). Value variants change floating-point tensors, except the integer ones
(`int-signed`, `int-extremes`), which change only integer tensors: where the reference rejects such values
(indices, labels) the variant is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .transforms import (STRUCTURES, dyadic_grid, has_integers, heavy_tailed, integer_extremes, integer_signed,
                         keep_signs, scaled, signed, special_values, strided, structured_rows, transposed)

# The transforms are transforms.py's; callers import them from here too.
__all__ = ["CPU_ELEMENT_BUDGET", "PARALLEL_MIN", "REDUCTION_MIN", "STRUCTURES", "SizePlan", "TINY", "Variant",
           "absolute", "aligned_knobs", "base_knobs", "clone_inputs", "describe_inputs", "has_integers", "input_dtype",
           "integer_extremes", "integer_signed", "keep_signs", "numel_of", "outside_profile", "plan", "scaled",
           "shrink_knobs", "sign_profile", "special_values", "strided", "structured_rows", "transposed", "upcast"]

# Elements of all inputs and outputs together that the CPU interpreter handles in about a second.
CPU_ELEMENT_BUDGET = 1 << 15

LARGE = {"torch.float16": 2.0e2, "torch.bfloat16": 1.0e3, "torch.float32": 1.0e3, "torch.float64": 1.0e3}
TINY = {"torch.float16": 1.0e-3, "torch.bfloat16": 1.0e-4, "torch.float32": 1.0e-4, "torch.float64": 1.0e-4}


@dataclass
class Variant:
    name: str
    kind: str  # values, size, layout
    seed: int
    knobs: dict[str, int] = field(default_factory=dict)
    transform: Callable[[list], list] | None = None
    description: str = ""
    setting: dict = field(default_factory=dict)  # sizes read from the inputs, changed (shapes.py)


def numel_of(inputs: list) -> int:
    import torch
    return sum(x.numel() for x in inputs if isinstance(x, torch.Tensor))


def aligned_knobs(knobs: dict, shrunk: dict, at_least: int = 0) -> dict:
    """The shrunk sizes rounded to multiples of a power of two that the problem's own size has too (16 at least
    where it allows): 8192 shrunk to 4095 becomes 2048, to 3 becomes 16; 1000 shrunk to 999 becomes 992. The odd
    sizes the CPU verifies at miss the paths that aligned sizes take (TMA descriptors need 16-byte strides,
    unmasked kernels whole blocks). A size is never rounded to `at_least` or below (the floor shrinking keeps).
    Empty when no knob changes."""
    out = {}
    for name, s in shrunk.items():
        own = knobs.get(name, 0)
        if own <= 0 or s <= 0:
            continue
        step = min(own & -own, 1 << (max(16, s).bit_length() - 1))
        a = step * max(1, s // step)
        if a != s and a <= own and (a > at_least or a >= s):
            out[name] = a
    return {**shrunk, **out} if out else {}


def _odd(v: int) -> int:
    """An odd size near v, not a multiple of any power of two above 1 (so every tail is exercised)."""
    if v <= 2:
        return v
    return v - 1 if v % 2 == 0 else v


PARALLEL_MIN, REDUCTION_MIN = 3, 8  # the smallest size a knob shrinks to (a reduction keeps some length)


def shrink_knobs(knobs: dict[str, int], measure: Callable[[dict[str, int]], int], budget: int,
                 reductions: frozenset | set = frozenset(), names: list[str] | None = None,
                 at_least: int = 0) -> dict[str, int]:
    """Halve knobs until the inputs fit the element budget, then make them odd. Knobs that size the output go
    first (down to 3), knobs that only size a reduction (`reductions`) last (down to 8): a shortened reduction
    hides accumulation errors. `names`: the knobs that may change (default: those of 16 or more). `at_least`:
    no knob goes below it (a fixed int argument of the call, such as a rank k = 8, bounds the sizes)."""
    current = dict(knobs)
    names = [k for k, v in knobs.items() if v >= 16] if names is None else list(names)
    if not names:
        return {}

    def floor(k: str) -> int:
        return max(at_least, REDUCTION_MIN if k in reductions else PARALLEL_MIN)
    for _ in range(64):
        if measure(current) <= budget:
            break
        movable = [k for k in names if current[k] > floor(k)]
        pool = [k for k in movable if k not in reductions] or movable
        if not pool:
            break
        biggest = max(pool, key=lambda k: current[k])
        current[biggest] = max(floor(biggest), current[biggest] // 2)
    return {k: max(_odd(current[k]), min(at_least, knobs[k])) for k in names
            if current[k] != knobs[k] or knobs[k] % 2 == 0}


def base_knobs(knobs: dict[str, int], own_numel: int, measure: Callable[[dict[str, int]], int],
               interpreted: bool, reductions: frozenset | set = frozenset(), at_least: int = 0) -> dict[str, int]:
    """The knobs value variants run at: the problem's own, or smaller ones the CPU interpreter can afford."""
    if interpreted and own_numel > CPU_ELEMENT_BUDGET and knobs:
        return shrink_knobs(knobs, measure, CPU_ELEMENT_BUDGET, reductions, at_least=at_least)
    return {}


def plan(knobs: dict[str, int], base: dict[str, int], measure: Callable[[dict[str, int]], int],
         interpreted: bool, sizes: "SizePlan | None" = None, reductions: frozenset | set = frozenset(),
         at_least: int = 0) -> list[Variant]:
    """The full ordered variant list. Value variants run at `base` knobs; `sizes` holds the settings read from
    the inputs themselves (shapes.py): their base, and the size variants of a problem without knobs."""
    sizes = sizes or SizePlan()
    at = sizes.base
    variants = [
        Variant("seed-1", "values", 1, base, None, "the problem's own distribution, seed 1", at),
        Variant("seed-2", "values", 2, base, None, "the problem's own distribution, seed 2", at),
        Variant("signed", "values", 3, base, signed, "signed normal values", at),
        Variant("grid", "values", 13, base, dyadic_grid, "values on a coarse dyadic grid: exact ties, zeros and "
                "repeats", at),
        Variant("ties", "values", 16, base, None, "rounding ties where the reference rounds (its scale made a power "
                "of two)", at),
        Variant("heavy-tailed", "values", 4, base, heavy_tailed, "Student-t (2 d.o.f.) values", at),
        Variant("structured", "values", 17, base, structured_rows, "rows of zeros, a constant, a large common "
                "offset, sorted, reversed, three values repeated, magnitudes over six decades", at),
        Variant("large", "values", 5, base, scaled(LARGE), "large magnitudes", at),
        Variant("tiny", "values", 6, base, scaled(TINY), "tiny magnitudes", at),
        Variant("special", "values", 7, base, special_values, "NaN, +-inf and -0.0 among the values", at),
        Variant("int-signed", "values", 14, base, integer_signed, "integer inputs of both signs", at),
        Variant("int-extremes", "values", 15, base, integer_extremes, "integer inputs at the dtype's limits, zero "
                "and +-1", at),
    ]
    names = [k for k, v in knobs.items() if v >= 16]
    if names:
        small_budget = CPU_ELEMENT_BUDGET // 4 if interpreted else 1 << 22
        odd = shrink_knobs(knobs, measure, small_budget, reductions, at_least=at_least)
        if not odd:
            odd = {k: _odd(knobs[k]) for k in names}
        variants.append(Variant("odd-size", "size", 8, odd, None, "odd sizes"))
        tiny = {k: max(3 + 2 * i, at_least + 1 + at_least % 2) for i, k in enumerate(names)}
        variants.append(Variant("small-size", "size", 9, tiny, None, "very small odd sizes"))
        # Beyond the problem's own sizes, where that stays cheap: catches shapes hard-coded to the problem.
        larger = {k: knobs[k] * 2 + 1 for k in names}
        if not base and measure(larger) <= (4 * CPU_ELEMENT_BUDGET if interpreted else 1 << 24):
            variants.append(Variant("larger-size", "size", 12, larger, None, "sizes beyond the problem's own"))
    else:
        for name, seed, setting, text in (("odd-size", 8, sizes.odd, "odd sizes"),
                                          ("small-size", 9, sizes.small, "very small odd sizes"),
                                          ("larger-size", 12, sizes.larger, "sizes beyond the problem's own")):
            if setting:
                variants.append(Variant(name, "size", seed, base, None, text, setting))
    for i, setting in enumerate(sizes.splits, 1):
        variants.append(Variant(f"split-sizes-{i}", "size", 12 + i, base, None,
                                "sizes that are equal in the problem made to differ", setting))
    for i, setting in enumerate(sizes.ones, 1):
        variants.append(Variant(f"unit-size-{i}", "size", 20 + i, base, None,
                                "one of the inputs' sizes at 1 wherever it occurs (a batch of one, a single row)",
                                setting))
    variants.append(Variant("transposed", "layout", 10, base, transposed, "column-major (transposed) strides", at))
    variants.append(Variant("strided", "layout", 11, base, strided, "every second element (stride 2)", at))
    return variants


@dataclass
class SizePlan:
    """Size settings read from the inputs (shapes.py), for `plan`."""

    base: dict = field(default_factory=dict)
    odd: dict = field(default_factory=dict)
    small: dict = field(default_factory=dict)
    larger: dict = field(default_factory=dict)
    splits: list[dict] = field(default_factory=list)
    aligned: dict = field(default_factory=dict)  # the base rounded as aligned_knobs rounds knobs
    ones: list[dict] = field(default_factory=list)  # each size of the inputs at 1 (shapes.unit_settings)


SIGNS = {"positive": "always positive", "nonnegative": "never negative", "negative": "always negative",
         "nonpositive": "never positive"}


def sign_profile(inputs: list) -> list[str | None]:
    """Per input, the sign the problem always gives it (a key of SIGNS), or None (mixed signs, not a number)."""
    import torch
    out: list[str | None] = []
    for x in inputs:
        if not (isinstance(x, torch.Tensor) and x.numel() and not x.is_complex() and x.dtype != torch.bool):
            out.append(None)
            continue
        lo, hi = float(x.min()), float(x.max())
        out.append("positive" if lo > 0 else "nonnegative" if lo >= 0 else "negative" if hi < 0 else
                   "nonpositive" if hi <= 0 else None)
    return out


def outside_profile(inputs: list, profile: list[str | None]) -> str | None:
    """How these inputs leave the signs the problem always gives them ("input 1 has negative values; the
    problem's are always positive"), or None. NaN is not a sign: the special-values variant stays in."""
    import torch
    for i, (x, sign) in enumerate(zip(inputs, profile)):
        if sign is None or not isinstance(x, torch.Tensor) or x.is_complex() or x.dtype == torch.bool:
            continue
        finite = x[~torch.isnan(x)] if x.is_floating_point() else x
        if not finite.numel():
            continue
        lo, hi = float(finite.min()), float(finite.max())
        bad = {"positive": lo <= 0, "nonnegative": lo < 0, "negative": hi >= 0, "nonpositive": hi > 0}[sign]
        if bad:
            what = {"positive": "zero or negative", "nonnegative": "negative", "negative": "zero or positive",
                    "nonpositive": "positive"}[sign]
            return f"input {i} has {what} values, the problem's are {SIGNS[sign]}"
    return None


def describe_inputs(inputs: list) -> str:
    import torch
    parts = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            s = f"{tuple(x.shape)}"
            if not x.is_contiguous():
                s += f" strides {tuple(x.stride())}"
            parts.append(s)
    return ", ".join(parts)


def clone_inputs(inputs: list) -> list:
    import torch
    return [x.clone() if isinstance(x, torch.Tensor) and x.is_contiguous() else
            (_clone_strided(x) if isinstance(x, torch.Tensor) else x) for x in inputs]


def _clone_strided(x):
    """A copy with the same strides and the same bytes in the gaps between elements: a kernel that misreads a
    strided input reads the same values on every run (uninitialized gaps made such a finding flip between a
    value mismatch and a NaN one)."""
    import torch
    if x.numel() == 0:
        return x.clone()
    span = 1 + sum((n - 1) * st for n, st in zip(x.shape, x.stride()))
    base = x.as_strided((span,), (1,)).clone()
    return torch.as_strided(base, tuple(x.shape), tuple(x.stride()))


def upcast(inputs: list) -> list:
    import torch
    return [x.detach().to(torch.float64) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
            for x in inputs]


def absolute(inputs: list) -> list:
    """Float inputs replaced by their absolute values (the accumulation floor of the error budget, compare.py)."""
    import torch
    return [x.abs() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]


def input_dtype(inputs: list) -> Any:
    import torch
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            return x.dtype
    return None
