"""Extra runs that explain a finding, made only when one is needed. Worker only.

- `reference_spread`: without a float64 truth, how far the reference's output moves when its inputs move by one
  ulp (the budget that stands in for PyTorch's own error, compare.py).
- `only_input`: a layout transform applied to one input, to find whose layout a failing variant depends on.
- `reference_repeat`: the reference called again on the same inputs, its random state left as the first call
  left it: a reference whose output then changes cannot be matched element by element (KL007).
- `random_draws_call`: a call with what torch's random operations drew in it (which arguments seed a random op).
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from .compare import UNIT_ROUNDOFF, flatten_outputs, unravel
from ..problem.errors import raise_gpu_trouble
from .plan.variants import clone_inputs


def no_grad_call(fn, inputs):
    """Call user code as the verifier does: no autograd graph."""
    import torch
    with torch.no_grad():
        return fn(*inputs)


def random_draws_call(fn, inputs) -> tuple[Any, list]:
    """no_grad_call, also returning what torch's random operations drew during the call (each output of an ATen op
    tagged nondeterministic_seeded: rand, randn, bernoulli, uniform_, randint, randperm, multinomial, and attention's
    or an RNN's output where they may drop), kept at rules.sampled positions: whether an argument seeds the
    reference shows in its draws even where a rare event leaves its output unmoved (a sample dropped at p = 0.015)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    from .rules import sampled
    drawn: list = []

    class Draws(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if torch.Tag.nondeterministic_seeded in func.tags:
                # Not the Philox seed and offset an attention or RNN kernel returns beside its output (integers of
                # one or two elements, left unset where it draws nothing).
                drawn.extend(sampled(t).clone() for t in tree_leaves(out) if isinstance(t, torch.Tensor)
                             and (t.is_floating_point() or t.dtype == torch.bool or t.numel() > 2))
            return out
    with Draws():
        out = no_grad_call(fn, inputs)
    return out, drawn


def reference_spread(ref, inputs: list, r_flat: list, updated: list[int], call: Callable = no_grad_call,
                     elementwise: bool = False, ulps: float = 1.0, signs: bool = False) -> list:
    """Per output, how far the reference moves when every float input moves by one ulp (random signs, two
    draws). A backward-stable kernel's result is the exact result of inputs that close, so a kernel that only
    rounds differently stays inside; None where it could not be measured. `elementwise`: per element (a tensor of
    the output's shape) instead of the output's largest move. `ulps`: the move, in ulps (an fp32 sum of n terms is
    the exact sum of its terms moved by about sqrt(n) ulps: Higham, ch. 4). `signs`: the outputs are defined up to the
    sign of each vector (signs.py), the moved result's signs brought to the result's first (a SignFree: its vectors turned
    within repeated values too, rotations.py)."""
    import torch
    out: list = [None] * len(r_flat)
    for k in range(2):
        gens: dict = {}  # one generator per device, seeded alike: the signs are drawn where the inputs are

        def nudge(x):
            if not (isinstance(x, torch.Tensor) and x.is_floating_point()):
                return x
            u = UNIT_ROUNDOFF.get(str(x.dtype), 2.0**-24)
            if x.device not in gens:
                gens[x.device] = torch.Generator(device=x.device).manual_seed(20_000 + k)
            sign = (torch.randint(0, 2, x.shape, generator=gens[x.device], device=x.device) * 2 - 1).to(torch.float64)
            return (x.double() * (1 + 2 * u * ulps * sign)).to(x.dtype)  # in float64: a float64 input moves too
        moved = [nudge(x) for x in clone_inputs(inputs)]
        try:
            r2 = flatten_outputs(call(ref, moved)) + [moved[i] for i in updated]
            if signs:
                from .signs import aligned
                r2 = aligned(r2, r_flat, found=signs)
        except Exception as e:
            raise_gpu_trouble(e)
            return out
        for j, (a, b) in enumerate(zip(r_flat, r2)):
            if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.is_floating_point() \
                    and a.shape == b.shape:
                d = (a.double() - b.double()).abs()
                if elementwise:
                    d = torch.nan_to_num(d, nan=0.0, posinf=0.0)
                    out[j] = d if out[j] is None else torch.maximum(out[j], d)
                    continue
                d = d[torch.isfinite(d)]
                m = float(d.max()) if d.numel() else 0.0
                out[j] = m if out[j] is None else max(out[j], m)
    return out


def only_input(transform: Callable[[list], list], index: int) -> Callable[[list], list]:
    """The transform applied to one input, the others left as they are."""
    def apply(inputs: list) -> list:
        changed = transform(inputs)
        return [c if i == index else x for i, (x, c) in enumerate(zip(inputs, changed))]
    return apply


MAX_CONSTANTS = 8  # float constants whose effects are measured one by one (beyond: all moved together)


def constant_rounding(float64_ref, inputs64: list, truth_flat: list, updated: list[int],
                      call: Callable = no_grad_call) -> list | None:
    """Per output and element, how far the float64 reference can move when its float constants (a Model's float
    attributes, the module-level floats its code reads: `beta2 = 0.999`, `eps = 1e-5`) are rounded to fp32, as a
    compiled kernel receives them. `1 - beta2` is then 1.3e-5 off relative, in the reference as in any kernel given
    beta2; PyTorch's float32 optimizers make the same rounding. Each constant is moved by fp32's unit roundoff
    (relative 2^-24, the most one rounding moves it or any value proportional to it, such as 1 / c) and the moves
    of the output are summed: a bound for kernels given the constant, or a multiple of it, as an fp32 scalar. None
    when there is no such constant (one that fp32 holds exactly is passed exactly)."""
    import numpy as np
    import torch
    targets: list[tuple[dict, str, float]] = []

    def consider(space: dict, name: str) -> None:
        v = space.get(name)
        if type(v) is float and float(np.float32(v)) != v:
            targets.append((space, name, v))
    if isinstance(float64_ref, torch.nn.Module):
        for m in float64_ref.modules():
            for name in list(vars(m)):
                consider(vars(m), name)
        code_owner = type(float64_ref).forward
    else:
        code_owner = inspect.unwrap(float64_ref)  # problem._in_float64 wraps a function reference
    code = getattr(code_owner, "__code__", None)
    space = getattr(code_owner, "__globals__", None)
    if code is not None and space is not None:
        for name in code.co_names:
            consider(space, name)
    if not targets:
        return None
    groups = [[t] for t in targets] if len(targets) <= MAX_CONSTANTS else [targets]
    result: list = [None] * len(truth_flat)
    for group in groups:
        moved = clone_inputs(inputs64)
        for space, name, v in group:
            space[name] = v * (1 + 2.0**-24)
        try:
            out = flatten_outputs(call(float64_ref, moved)) + [moved[i] for i in updated]
        except Exception as e:
            raise_gpu_trouble(e)
            return None
        finally:
            for space, name, v in group:
                space[name] = v
        for j, (a, t) in enumerate(zip(out, truth_flat)):
            if isinstance(a, torch.Tensor) and isinstance(t, torch.Tensor) and a.shape == t.shape \
                    and a.is_floating_point():
                d = torch.nan_to_num((a.double() - t.double()).abs(), nan=0.0, posinf=0.0)
                result[j] = d if result[j] is None else result[j] + d
    return result


def rng_state() -> list:
    """The default generators' states (CPU and, where initialised, CUDA): changed by a call that draws."""
    import torch
    states = [torch.random.get_rng_state()]
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states.append(torch.cuda.get_rng_state())
    return [s.tolist() for s in states]


# Two calls of a deterministic reference may differ by rounding (a GPU's atomics sum in another order); a reference
# that draws random numbers differs by the values' own size.
REPEAT_TOLERANCE = 1e-3


def reference_repeat(ref, inputs: list, r_flat: list, updated: list[int]) -> str | None:
    """Call the reference once more on fresh copies of the same inputs, without seeding again (torch's random
    state goes on from where the first call left it, as it would in a user's program). None when the output is the
    same (within REPEAT_TOLERANCE of its scale, NaN equal to NaN); else where it changed, for the message."""
    import torch
    again = clone_inputs(inputs)
    try:
        r2 = flatten_outputs(no_grad_call(ref, again)) + [again[i] for i in updated]
    except Exception as e:
        raise_gpu_trouble(e)
        return None  # the reference's own failures are reported where it first runs
    for j, (a, b) in enumerate(zip(r_flat, r2)):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.shape != b.shape:
            continue
        if a.is_floating_point() or a.is_complex():
            x, y = a.detach().double().reshape(-1), b.detach().double().reshape(-1)
            both = torch.isnan(x) & torch.isnan(y)
            diff = torch.where(both, 0.0, (x - y).abs().nan_to_num(nan=float("inf")))
            finite = x[torch.isfinite(x)]
            scale = float(finite.abs().max()) if finite.numel() else 1.0
            bad = diff > REPEAT_TOLERANCE * max(scale, 1e-30)
        else:
            x, y = a.reshape(-1), b.reshape(-1)
            bad = x != y
        if bool(bad.any()):
            i = int(bad.nonzero()[0])
            index = ", ".join(map(str, unravel(i, tuple(a.shape))))
            name = "output" if len(r_flat) == 1 else f"output {j}"
            return (f"{name}[{index}] is {x[i].item():.4g}, then {y[i].item():.4g}, and {int(bad.sum())} of "
                    f"{a.numel()} elements changed")
    return None

