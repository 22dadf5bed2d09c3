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


def _floats(inputs: list, fn: Callable) -> list:
    import torch
    return [fn(i, x) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for i, x in enumerate(inputs)]


# Values are drawn where the input lives (on a GPU, drawing 64M numbers on the CPU and copying them took
# seconds per variant); on the CPU this is the same generator as always, so CPU verdicts are unchanged.
def signed(inputs: list) -> list:
    import torch
    return _floats(inputs, lambda i, x: torch.randn(x.shape, dtype=torch.float32, device=x.device).to(x.dtype))


def heavy_tailed(inputs: list) -> list:
    import torch
    def draw(i, x):
        t = torch.distributions.StudentT(torch.tensor(2.0, device=x.device)).sample(x.shape)
        limit = 1e4 if x.dtype != torch.float16 else 1e3
        return t.clamp(-limit, limit).to(x.dtype)
    return _floats(inputs, draw)


def scaled(factor_by_dtype: dict[str, float]) -> Callable[[list], list]:
    import torch
    return lambda inputs: _floats(inputs, lambda i, x: (torch.randn(x.shape, dtype=torch.float32, device=x.device)
                                                        * factor_by_dtype.get(str(x.dtype), 1.0)).to(x.dtype))


def keep_signs(transform: Callable[[list], list], profile: list | None) -> Callable[[list], list]:
    """A magnitude variant (large, tiny) that keeps each float input's sign where the problem always gives it one
    (sign_profile): its point is the magnitudes, and a precision lost on a whole range the problem draws from (small
    positive inputs of a log1p) is then an error, not a note about the distribution. The `signed` and
    `heavy-tailed` variants still leave the problem's signs (cancellation between outliers of both signs is theirs
    to show)."""
    import torch

    def apply(inputs: list) -> list:
        out = transform(inputs)
        for i, (x, sign) in enumerate(zip(out, profile or [])):
            if sign is None or not isinstance(x, torch.Tensor) or not x.is_floating_point():
                continue
            a = x.abs()
            if sign == "positive":
                a = torch.where(a == 0, torch.finfo(x.dtype).tiny, a).to(x.dtype)
            out[i] = a if sign in ("positive", "nonnegative") else -a
        return out
    return apply


GRID_LEVELS = 254  # multiples of a power of two q up to 254 q: absmax / 127 is then exactly 2 q


def dyadic_grid(inputs: list) -> list:
    """Values on a coarse dyadic grid, so that rounding ties, comparisons at equality and repeats really happen.

    Inputs that are all positive (scales, variances) become powers of two. Others become multiples of a power
    of two q, at most 254 q in magnitude, each keeping its sign; a sixteenth of the elements sit at +-254 q (so a
    block's absmax / 127 is exactly 2 q, and x / scale lands on halves: ties for every rounding mode), and a
    sixteenth of a signed input is exactly zero. Repeats, and ties in max and argmax, follow."""
    import math

    import torch

    def snap(i, x):
        xf = x.double()
        finite = xf[torch.isfinite(xf)]
        if finite.numel() == 0:
            return x
        if bool((finite > 0).all()):
            return torch.exp2(torch.round(torch.log2(xf))).to(x.dtype)
        amax = float(finite.abs().max())
        q = 2.0 ** math.ceil(math.log2(amax / GRID_LEVELS))
        k = torch.round(xf / q).clamp(-GRID_LEVELS, GRID_LEVELS)
        k = torch.where((xf != 0) & (k == 0), torch.sign(xf), k)
        u = torch.rand(x.shape, dtype=torch.float64, device=x.device)
        k = torch.where(u < 1 / 16, torch.sign(xf) * GRID_LEVELS, k)
        if bool((finite < 0).any()):
            k = torch.where((u >= 1 / 16) & (u < 1 / 8), torch.zeros_like(k), k)
        return (k * q).to(x.dtype)
    return _floats(inputs, snap)


STRUCTURES = ("zeros", "constant", "offset", "sorted", "reversed", "duplicates", "magnitudes", "drawn")


def structured_rows(inputs: list) -> list:
    """Rows with the structures real data has and random normals never do, one structure per row in turn (the last
    dimension is the row; a vector is cut into eight rows): all zeros; one constant value; a large common offset (a
    mean 100 times the spread); sorted ascending; sorted descending; three values repeated; magnitudes spread over
    six decades; and rows left as drawn, with one column of zeros across them. A kernel that divides by a norm without
    a floor, or computes a variance as E[x^2] - E[x]^2, fails on these where PyTorch does not."""
    import torch

    def build(i, x):
        if x.numel() < 2:
            return x
        rows = x.reshape(-1, x.shape[-1]) if x.dim() >= 2 else x.reshape(1, -1)
        if rows.shape[0] == 1 and rows.shape[1] >= 16:
            cut = rows.shape[1] - rows.shape[1] % 8
            head = rows[0, :cut].reshape(8, -1)
            out = torch.cat([_structured(head).reshape(-1), rows[0, cut:]])
            return out.reshape(x.shape).contiguous()
        return _structured(rows).reshape(x.shape).contiguous()
    return _floats(inputs, build)


def _structured(rows):
    """The structures, row r taking STRUCTURES[r % 8]: each structure built for all its rows at once (a GPU problem's
    thousands of rows cost a few launches, not a few per row)."""
    import torch
    out = rows.double().clone()
    n, length = out.shape
    finite = out[torch.isfinite(out)]
    std = float(finite.std()) if finite.numel() > 1 else 0.0
    spread = std if std > 0 else 1.0
    gen = torch.Generator(device=out.device).manual_seed(4242)
    for k, kind in enumerate(STRUCTURES):
        idx = torch.arange(k, n, len(STRUCTURES), device=out.device)
        count = idx.numel()
        if not count or kind == "drawn":
            continue
        if kind == "zeros":
            out[idx] = 0.0
        elif kind == "constant":
            out[idx] = 1.5 * spread
        elif kind == "offset":
            out[idx] = 100.0 * spread + spread * torch.randn(count, length, generator=gen, dtype=torch.float64,
                                                             device=out.device)
        elif kind == "sorted":
            out[idx] = out[idx].sort(dim=-1).values
        elif kind == "reversed":
            out[idx] = out[idx].sort(dim=-1, descending=True).values
        elif kind == "duplicates":
            levels = torch.tensor([-spread, 0.5 * spread, 2.0 * spread], dtype=torch.float64, device=out.device)
            out[idx] = levels[torch.randint(0, 3, (count, length), generator=gen, device=out.device)]
        elif kind == "magnitudes":
            out[idx] = out[idx] * torch.pow(10.0, torch.empty(count, length, dtype=torch.float64,
                                                              device=out.device).uniform_(-3, 3, generator=gen))
    if length > 2 and n >= len(STRUCTURES):
        drawn = torch.arange(STRUCTURES.index("drawn"), n, len(STRUCTURES), device=out.device)
        out[drawn, length // 2] = 0.0  # a column of zeros across the rows left as drawn
    return out.to(rows.dtype)


SMALL_PERMUTATION = 1 << 20  # above this, special positions are drawn without a full permutation (it is slow)


def special_values(inputs: list, profile: list | None = None) -> list:
    """NaN, +inf, -inf and -0.0 at a few positions of each float tensor; where the problem's inputs always have
    one sign (`profile`, see sign_profile), only NaN and the infinity of that sign, so the variant stays inside
    the problem's distribution and a NaN dropped is an error, not an out-of-distribution warning."""
    import torch
    all_specials = [float("nan"), float("inf"), float("-inf"), -0.0]
    by_sign = {"positive": [float("nan"), float("inf")], "nonnegative": [float("nan"), float("inf"), 0.0],
               "negative": [float("nan"), float("-inf")], "nonpositive": [float("nan"), float("-inf"), -0.0]}

    def inject(i, x):
        specials = by_sign.get(profile[i] if profile and i < len(profile) else None, all_specials)
        y = x.clone()
        flat = y.view(-1) if y.is_contiguous() else y.reshape(-1)
        n = flat.numel()
        if n == 0:
            return y
        g = torch.Generator().manual_seed(1234 + i)
        if n <= SMALL_PERMUTATION:
            positions = torch.randperm(n, generator=g)[: min(n, 4)]
        else:
            positions = torch.unique(torch.randint(n, (8,), generator=g))[:4]
        for p, v in zip(positions.tolist(), specials):
            flat[p] = v
        return flat.view(x.shape) if y.is_contiguous() else flat.reshape(x.shape)
    return _floats(inputs, inject)


def _integers(inputs: list, fn: Callable) -> list:
    """fn applied to the integer tensors (not bool) among the inputs."""
    import torch
    return [fn(i, x) if isinstance(x, torch.Tensor) and not x.is_floating_point() and not x.is_complex()
            and x.dtype != torch.bool and x.numel() else x for i, x in enumerate(inputs)]


def has_integers(inputs: list) -> bool:
    import torch
    return any(isinstance(x, torch.Tensor) and not x.is_floating_point() and not x.is_complex()
               and x.dtype != torch.bool and x.numel() for x in inputs)


def integer_signed(inputs: list) -> list:
    """Signed integer tensors get both signs, no zeros, at the problem's own magnitudes: where truncation and
    floor, C and Python remainders, arithmetic and logical shifts differ (a problem that draws only non-negative
    integers never shows a kernel that truncates where the reference floors)."""
    import torch

    def draw(i, x):
        if not x.dtype.is_signed:
            return x
        top = max(2, int(x.abs().max()))
        magnitude = torch.randint(1, top + 1, x.shape, device=x.device)
        sign = torch.randint(0, 2, x.shape, device=x.device) * 2 - 1
        return (magnitude * sign).to(x.dtype)
    return _integers(inputs, draw)


def integer_extremes(inputs: list) -> list:
    """Integer tensors with the dtype's minimum and maximum, zeros and +-1 among signed values spanning the
    dtype: overflow, wrapping against saturating casts, and signs at their limits."""
    import torch

    def draw(i, x):
        info = torch.iinfo(x.dtype)
        values = torch.randint(info.min, info.max, x.shape, dtype=torch.int64, device=x.device)
        special = torch.tensor([info.min, info.max, 0, 1, -1 if x.dtype.is_signed else 2], dtype=torch.int64,
                               device=x.device)
        u = torch.rand(x.shape, device=x.device)
        pick = torch.randint(0, special.numel(), x.shape, device=x.device)
        return torch.where(u < 5 / 16, special[pick], values).to(x.dtype)
    return _integers(inputs, draw)


def transposed(inputs: list) -> list:
    """Same values, reversed strides (column-major); 1-D tensors get a stride of 2 instead."""

    def t(i, x):
        if x.dim() >= 2:
            return x.permute(*reversed(range(x.dim()))).contiguous().permute(*reversed(range(x.dim())))
        return strided_one(x)
    return _floats(inputs, t)


def strided_one(x):
    import torch
    if x.dim() == 0:
        return x
    shape = list(x.shape)
    shape[-1] *= 2
    big = torch.zeros(shape, dtype=x.dtype, device=x.device)
    view = big[..., ::2]
    view.copy_(x)
    return view


def strided(inputs: list) -> list:
    return _floats(inputs, lambda i, x: strided_one(x))


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
