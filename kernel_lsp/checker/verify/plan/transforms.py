"""What a variant does to the inputs (`Variant.transform`, variants.py): value transforms that keep the shapes and
change the numbers (signed normal, heavy-tailed, scaled magnitudes with or without the problem's signs, a coarse
dyadic grid, structured rows, special values; integer tensors of both signs and at the dtype's limits), and layout
transforms that keep the values and change the strides (transposed, every second element).
"""

from __future__ import annotations

from typing import Callable


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


def nearest_powers_of_two(x):
    """Each element of a tensor of positive values at the power of two nearest it (in log2), in the tensor's dtype."""
    import torch
    return torch.exp2(torch.round(torch.log2(x.double()))).to(x.dtype)


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
            return nearest_powers_of_two(x)
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
