"""Rounding ties made where the reference itself rounds: inputs built from its own intermediate values. Worker only.

The grid variant (transforms.dyadic_grid) puts x / scale on halves when the scale is absmax / 127 of grid values, but a
quantizer whose scale is computed otherwise from the data (absmax / 7 for 4 bits, a mean, a percentile) never
meets a tie there, and a kernel that breaks ties away from zero, where torch.round breaks them to even, passes.

Here the reference runs once under a TorchFunctionMode that records the tensor it rounds (torch.round, or a cast to
an integer dtype) when that tensor has as many elements as a float input. The scale per element is estimated as
input / rounded value and replaced by the nearest power of two P, and each input element is moved to (k + 1/2) P,
the half next below its value (to k P where the value was already an integer: the element that sets a scale such
as absmax / 7 maps to exactly 7, so the recomputed scale is exactly P). A scale passed as an input (a positive
tensor smaller than the data: one per row or channel) is first put on the nearest power of two itself, when the
data alone makes no tie. Then x / scale is a tie in every arithmetic:
float32 or float64, divided or multiplied by a reciprocal, on the CPU or with the GPU's approximate division. The
inputs are kept when the reference, in its dtype and in float64 alike, then rounds exact ties at a quarter of the
elements or more; otherwise the variant does not apply.
"""

from __future__ import annotations

MIN_SHARE = 0.25  # of the rounded elements that must be exact ties in both dtypes
INTEGER_TOLERANCE = 1e-5  # relative: a value this close to an integer was an integer before rounding errors


class NotApplicable(Exception):
    """The variant has nothing to add for this problem (its reference does not round, or no tie could be made)."""


def rounded_values(ref, inputs: list) -> list:
    """The tensors the reference rounds (torch.round) or casts to an integer dtype, in call order, as it ran on
    these inputs."""
    import torch
    from torch.overrides import TorchFunctionMode

    found: list = []
    rounding = {torch.round, torch.Tensor.round, torch.Tensor.round_}
    casts = {torch.Tensor.to, torch.Tensor.type, torch.Tensor.int, torch.Tensor.long, torch.Tensor.short,
             torch.Tensor.char, torch.Tensor.byte}

    def integer_target(func, args, kwargs) -> bool:
        if func in (torch.Tensor.int, torch.Tensor.long, torch.Tensor.short, torch.Tensor.char, torch.Tensor.byte):
            return True
        for a in list(args[1:]) + list(kwargs.values()):
            if isinstance(a, torch.dtype):
                return not a.is_floating_point and not a.is_complex and a != torch.bool
        return False

    class Watch(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            x = args[0] if args else None
            if isinstance(x, torch.Tensor) and x.is_floating_point() and (
                    (func in rounding and not kwargs.get("decimals") and len(args) < 2)
                    or (func in casts and integer_target(func, args, kwargs))):
                found.append(x.detach().clone())
            return func(*args, **kwargs)

    with Watch(), torch.no_grad():
        ref(*inputs)
    return found


def tie_inputs(ref, ref64, inputs: list) -> list:
    """Inputs on which the reference rounds exact ties (see the module docstring); raises NotApplicable."""
    import torch

    from .variants import clone_inputs, upcast
    for start in (inputs, _scales_on_powers_of_two(inputs)):
        if start is None:
            continue
        try:
            rounded = rounded_values(ref, clone_inputs(start))
        except Exception:
            raise NotApplicable from None
        for which, v in enumerate(rounded):
            for i, x in enumerate(start):
                if not (isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel() == v.numel() > 0):
                    continue
                moved = _to_ties(x, v)
                if moved is None:
                    continue
                candidate = list(start)
                candidate[i] = moved
                if _ties_hold(ref, ref64, candidate, len(rounded), which, upcast):
                    return candidate
    raise NotApplicable


def _scales_on_powers_of_two(inputs: list) -> list | None:
    """The inputs with every smaller float tensor whose values are all positive (a calibrated scale per row or per
    channel, passed beside the data) at the nearest power of two: x / scale, with x moved to (k + 1/2) scale, is then
    a tie, where a scale left as drawn makes it one only by chance. None when no input is such a scale."""
    import torch

    from .transforms import nearest_powers_of_two
    largest = max((x.numel() for x in inputs if isinstance(x, torch.Tensor)), default=0)
    out, moved = list(inputs), False
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor) and x.is_floating_point() and 0 < x.numel() < largest:
            xd = x.detach().double()
            if bool(torch.isfinite(xd).all()) and bool((xd > 0).all()):
                snapped = nearest_powers_of_two(x)
                if bool(torch.isfinite(snapped).all()) and bool((snapped > 0).all()):  # within the dtype's range
                    out[i] = snapped
                    moved = True
    return out if moved else None


def _to_ties(x, v):
    """x moved so that x / scale lands on halves, with the scale (x / v per element) made a power of two."""
    import torch
    xd, vd = x.detach().double().reshape(-1), v.detach().double().reshape(-1).to(x.device)
    ok = torch.isfinite(xd) & torch.isfinite(vd) & (vd != 0) & (xd != 0)
    if int(ok.sum()) < 4:
        return None
    scale = torch.where(ok, xd / torch.where(ok, vd, 1.0), 1.0)
    power = torch.sign(scale) * torch.exp2(torch.floor(torch.log2(scale.abs()) + 0.5))
    integer = (vd - torch.round(vd)).abs() <= INTEGER_TOLERANCE * vd.abs().clamp_min(1.0)
    k = torch.where(integer, torch.round(vd), torch.floor(vd) + 0.5)
    moved = torch.where(ok, k * power, xd)
    out = moved.to(x.dtype)
    if not bool((out.double() == moved).all()):
        return None  # not representable in the input's dtype
    return out.reshape(x.shape)


def _ties_hold(ref, ref64, inputs: list, count: int, which: int, upcast) -> bool:
    """The reference, in its dtype and in float64, rounds exact halves at the same elements, a MIN_SHARE of them."""
    import torch
    share = None
    for fn, args in ((ref, inputs), (ref64, upcast(inputs))):
        try:
            values = rounded_values(fn, args)
        except Exception:
            return False
        if len(values) != count:
            return False
        v = values[which].double().reshape(-1)
        tie = v - torch.floor(v) == 0.5
        share = tie if share is None else share & tie.to(share.device)
    return share is not None and float(share.double().mean()) >= MIN_SHARE
