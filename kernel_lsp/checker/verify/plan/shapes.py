"""Size symbols read from the inputs themselves: size variants where module-level knobs give none or too few.

A problem whose input factory builds `torch.randn(96, 96), torch.randn(96)` has no size knob, and a kernel that
uses the row count where it needs the row stride is right exactly when the two are equal. So every dimension of
every input tensor is a *position*, and so is every int among the inputs or (KernelBench) among
`get_init_inputs()` that equals one of those dimensions. Positions of equal size are told apart by *split*
settings (one position changed alone, all but one, or all to different sizes); a setting is a variant only when
the reference accepts it, which is checked on the meta device (shapes only: no memory, no compute). Problems
without knobs also get the knobs' own size variants (odd, very small, larger) from the positions, and on the CPU a
smaller base size when the problem's own is too big for the interpreter.

Resized tensors keep the problem's values: shrinking crops, growing appends values drawn from the tensor itself
(integers exactly, so indices stay in range; floats with a 1% jitter, so no accidental ties), so signs and scales
stay as the problem gives them.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from .variants import SizePlan  # variants.py imports this module: a type only

Position = tuple  # ("tensor", input index, dim), ("int", input index) or ("init", init index)
Setting = dict  # Position -> new size

MIN_TIED_INT = 8  # ints below this are more likely a dim index or a kernel size than a size
MAX_GROUP = 8  # positions of one size considered for splitting (the candidates grow linearly with it)
SPLIT_VARIANTS = 2


def positions(inputs: list, init: list | None) -> dict[Position, int]:
    """Every tensor dimension of 2 or more, and the ints (inputs, init inputs) that equal one of them."""
    import torch
    pos: dict[Position, int] = {}
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor):
            for d, n in enumerate(x.shape):
                if n >= 2:
                    pos[("tensor", i, d)] = int(n)
    dims = set(pos.values())
    for kind, values in (("int", inputs), ("init", init or [])):
        for i, x in enumerate(values):
            if type(x) is int and x >= MIN_TIED_INT and x in dims:
                pos[(kind, i)] = x
    return pos


def groups(pos: dict[Position, int]) -> dict[int, list[Position]]:
    out: dict[int, list[Position]] = {}
    for p, v in pos.items():
        out.setdefault(v, []).append(p)
    return out


def label(p: Position) -> str:
    if p[0] == "tensor":
        return f"input {p[1]} dim {p[2]}"
    return f"input {p[1]}" if p[0] == "int" else f"init input {p[1]}"


def describe(setting: Setting, pos: dict[Position, int]) -> str:
    return ", ".join(f"{label(p)} {pos[p]} -> {n}" for p, n in setting.items())


def split_pairs(setting: Setting, pos: dict[Position, int]) -> set[tuple[Position, Position]]:
    """The pairs of equal positions that this setting makes differ."""
    out = set()
    for v, members in groups(pos).items():
        for p, q in itertools.combinations(members, 2):
            if setting.get(p, v) != setting.get(q, v):
                out.add((p, q))
    return out


def _fresh(used: set[int], start: int) -> int:
    """The first odd size above `start` not already in use (odd: not a multiple of any block size)."""
    n = start + 1
    while n % 2 == 0 or n in used:
        n += 1
    used.add(n)
    return n


def split_settings(pos: dict[Position, int], accepts: Callable[[Setting], bool],
                   limit: int = SPLIT_VARIANTS) -> list[Setting]:
    """Up to `limit` settings the reference accepts that make the most pairs of equal positions differ.

    Candidates per size: every position changed alone, all but one changed, all changed to different sizes. The
    best candidate of each size is merged into one setting while the reference accepts the merge."""
    used = set(pos.values())
    candidates: dict[int, list[Setting]] = {}
    for v, members in groups(pos).items():
        if len(members) < 2 or not any(p[0] == "tensor" for p in members):
            continue
        members = members[:MAX_GROUP]
        one = _fresh(used, v)
        options = [{p: one} for p in members] + [{q: one for q in members if q != p} for p in members]
        options.append({p: _fresh(used, v) for p in members})
        candidates[v] = [s for s in _unique(options) if accepts(s)]
    left = set().union(*(split_pairs(s, pos) for c in candidates.values() for s in c)) if candidates else set()
    chosen: list[Setting] = []
    while left and len(chosen) < limit:
        merged: Setting = {}
        for options in candidates.values():
            best = max(options, key=lambda s: len(split_pairs(s, pos) & left), default=None)
            if best is None or not split_pairs(best, pos) & left:
                continue
            if not merged or accepts({**merged, **best}):
                merged = {**merged, **best}
        if not merged:
            break
        chosen.append(merged)
        left -= split_pairs(merged, pos)
    return chosen


def _unique(settings: list[Setting]) -> list[Setting]:
    seen, out = set(), []
    for s in settings:
        key = tuple(sorted(s.items()))
        if s and key not in seen:
            seen.add(key)
            out.append(s)
    return out


@dataclass
class Together:
    """Size variants that move every size at once, for problems without size knobs (see variants.plan)."""

    base: Setting  # the CPU interpreter's smaller base sizes, or {} when the problem's own sizes are fine
    odd: Setting
    small: Setting
    larger: Setting


def together(pos: dict[Position, int], accepts: Callable[[Setting], bool], elements: Callable[[Setting], int],
             budget: int | None, small_budget: int, larger_budget: int, int_max: int) -> Together:
    """Base, odd, very small and larger sizes, each moving every size together (positions of equal size stay
    equal). Shrinking never goes to or below `int_max`, the largest value of an integer input (an index must
    stay in range)."""
    sizes = sorted(groups(pos))

    def setting(mapping: dict[int, int]) -> Setting:
        return {p: mapping[v] for p, v in pos.items() if mapping.get(v, v) != v}

    def shrink(target: int) -> dict[int, int]:
        current = {v: v for v in sizes}
        for _ in range(64):
            if elements(setting(current)) <= target:
                break
            big = max(current, key=lambda v: current[v])
            halved = max(8, current[big] // 2)
            if halved == current[big] or halved <= int_max:
                break
            current[big] = halved
        return {v: n - 1 if n % 2 == 0 and n - 1 > int_max else n for v, n in current.items()}

    base_map = {v: v for v in sizes}
    if budget is not None and elements({}) > budget:
        base_map = shrink(budget)
        if not accepts(setting(base_map)):
            base_map = {v: v for v in sizes}
    used: set[int] = set(base_map.values()) | set(sizes)
    odd = setting({v: _fresh(used, n) if n % 2 == 0 else n for v, n in base_map.items()})
    small_map = {v: 3 + 2 * i for i, v in enumerate(sizes)}
    small = setting(small_map) if all(n > int_max for n in small_map.values()) else {}
    small = small if small and elements(small) <= small_budget else {}
    base = setting(base_map)
    larger = setting({v: 2 * v + 1 for v in sizes}) if not base else {}
    larger = larger if larger and elements(larger) <= larger_budget else {}
    odd = odd if odd != base else {}
    return Together(base, *(s if s and accepts(s) else {} for s in (odd, small, larger)))


def resized_shape(shape: tuple, i: int, setting: Setting) -> list[int]:
    return [setting.get(("tensor", i, d), n) for d, n in enumerate(shape)]


def apply(inputs: list, setting: Setting, seed: int) -> list:
    """The inputs at the setting's sizes: tensors cropped or grown from their own values, ints replaced."""
    import torch
    if not setting:
        return inputs
    gen = torch.Generator().manual_seed(10_000 + seed)
    out = []
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor):
            shape = resized_shape(tuple(x.shape), i, setting)
            out.append(_resize(x, shape, gen) if shape != list(x.shape) else x)
        elif ("int", i) in setting:
            out.append(setting[("int", i)])
        else:
            out.append(x)
    return out


def _resize(x, shape: list[int], gen) -> Any:
    import torch
    y = x
    for d, n in enumerate(shape):
        m = y.shape[d]
        if n < m:
            y = y.narrow(d, 0, n)
        elif n > m:
            flat = y.reshape(-1)
            extra_shape = list(y.shape)
            extra_shape[d] = n - m
            idx = torch.randint(flat.numel(), extra_shape, generator=gen).to(flat.device)
            extra = flat[idx]
            if extra.is_floating_point():
                jitter = 1 + 0.01 * (2 * torch.rand(extra_shape, generator=gen, dtype=torch.float64) - 1)
                extra = (extra.double() * jitter.to(extra.device)).to(x.dtype)
            y = torch.cat([y, extra], dim=d)
    return y.contiguous()


def init_with(init: list, setting: Setting) -> list:
    return [setting.get(("init", j), x) for j, x in enumerate(init)]


SMALL_INT_ARGUMENT = 16  # an int argument below this is a parameter of the call (a rank, a window), not a size


def int_floor(inputs: list, init: list | None) -> int:
    """The largest small int argument of the call (among the inputs and init inputs; 0 when none): sizes do not
    shrink below it, or the reference's precondition (rank k <= min(m, n)) turns false."""
    values = [x for x in list(inputs) + list(init or []) if type(x) is int and 2 <= x < SMALL_INT_ARGUMENT]
    return max(values, default=0)


def int_max(inputs: list) -> int:
    """The largest value among integer input tensors (0 when there are none): a lower bound for shrinking."""
    import torch
    best = 0
    for x in inputs:
        if isinstance(x, torch.Tensor) and not x.is_floating_point() and not x.is_complex() and x.numel() \
                and x.dtype != torch.bool:
            best = max(best, int(x.max()))
    return best


def elements(inputs: list, setting: Setting) -> int:
    """Elements of the inputs at the setting's sizes, doubled for the outputs (a same-size estimate)."""
    import math

    import torch
    total = 0
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor):
            total += math.prod(resized_shape(tuple(x.shape), i, setting))
    return 2 * total


def size_plan(problem, knobs: dict[str, int], interpreted: bool) -> SizePlan:
    """The settings read from the problem's inputs at these knobs: split variants always, and for a problem
    without size knobs a base (CPU) and the odd, very small and larger sizes. Nothing when the input factory
    cannot run here (the variants will say why)."""
    from .variants import CPU_ELEMENT_BUDGET, SizePlan, aligned_knobs
    try:
        inputs = problem.make_inputs(1, knobs)
        init = problem.init(knobs)
    except Exception:
        return SizePlan()
    accepted: dict[tuple, bool] = {}

    def accepts(setting: Setting) -> bool:
        key = tuple(sorted(setting.items()))
        if key not in accepted:
            accepted[key] = problem.accepts(knobs, setting, inputs)
        return accepted[key]

    pos = positions(inputs, init)
    plan = SizePlan()
    if not problem.size_knobs and pos:
        floor = max(int_max(inputs), int_floor(inputs, init))
        t = together(pos, accepts, lambda s: elements(inputs, s),
                     CPU_ELEMENT_BUDGET if interpreted else None,
                     CPU_ELEMENT_BUDGET // 4 if interpreted else 1 << 22,
                     4 * CPU_ELEMENT_BUDGET if interpreted else 1 << 24, floor)
        plan = SizePlan(t.base, t.odd, t.small, t.larger)
        aligned = aligned_knobs(pos, t.base, floor) if interpreted else {}
        limit = 4 * max(elements(inputs, t.base), CPU_ELEMENT_BUDGET)
        if aligned and elements(inputs, aligned) <= limit and accepts(aligned):
            plan.aligned = aligned
    base = plan.base
    if base:  # split at the base sizes: positions as the value variants see them
        pos = positions(apply(inputs, base, 1), init_with(init, base) if init is not None else None)

        def accepts_at_base(setting: Setting) -> bool:
            return accepts({**base, **setting})
        plan.splits = [{**base, **s} for s in split_settings(pos, accepts_at_base)]
    else:
        accepts_at_base = accepts
        plan.splits = split_settings(pos, accepts)
    # A small int argument (a rank k <= min(m, n)) is a precondition the reference may not check: no size of 1.
    plan.ones = unit_settings(pos, base, accepts_at_base) if int_floor(inputs, init) < 2 else []
    return plan


MAX_UNIT_VARIANTS = 3


def unit_settings(pos: dict[Position, int], base: Setting, accepts: Callable[[Setting], bool]) -> list[Setting]:
    """Each size of the inputs set to 1 at every position that has it (a batch of one, a single row, one channel),
    where the reference accepts it: the path a launcher takes for a dimension of 1 (a branch on `M == 1`, a
    broadcast, a squeeze) is wrong there and nowhere else. The largest sizes first, at most MAX_UNIT_VARIANTS."""
    out = []
    for v, members in sorted(groups(pos).items(), key=lambda kv: -kv[0]):
        if not any(p[0] == "tensor" for p in members):
            continue
        setting = {p: 1 for p in members}
        if accepts(setting):
            out.append({**base, **setting})
        if len(out) == MAX_UNIT_VARIANTS:
            break
    return out


def describe_init(init: list | None, setting: Setting) -> str:
    """The init inputs, for a message, when the setting changed them."""
    if init is None or not any(p[0] == "init" for p in setting):
        return ""
    return f"; get_init_inputs() {init}"
