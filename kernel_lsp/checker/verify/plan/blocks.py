"""Sizes from the kernels' own block constants, so that every loop runs twice and every grid several programs.

The CPU interpreter verifies at small sizes (variants.py shrinks the problem's to about 32k elements), and some
problems are tiny to begin with (`torch.randn(6, 5)`: literal sizes, no knob). At such sizes a kernel that walks a
row in blocks of BLOCK = 1024 runs its loop once, and a grid of cdiv(n, 256) is one program, so a running total
dropped between blocks, or a store that only program 0 makes, never shows (on a GPU, at the problem's own 8192
columns, the first did). After the other variants have run, each size that none of them took past
2B + B/2 + 1 (two blocks and an odd tail of the largest block constant B) gets one variant at that size, with every
other size small: a knob, or for a problem without knobs a group of equal sizes read from its inputs (shapes.py).

Block constants are the power-of-two int constexprs that kept one value on every launch of a kernel whatever the
sizes; a BLOCK = next_power_of_2(n) follows the size, and no loop walks it. A candidate is kept when the reference
accepts it (on the meta device), its inputs stay within the element limit, and (on the CPU) a dry run of the
implementation (launches recorded, not executed) counts at most MAX_PROGRAMS programs per call.
"""

from __future__ import annotations

from typing import Callable

from ..context import VerifyContext
from .shapes import elements, groups, int_floor, int_max, positions
from .variants import CPU_ELEMENT_BUDGET, PARALLEL_MIN, REDUCTION_MIN, Variant

MAX_PROGRAMS = 64  # programs per call of the implementation (the interpreter runs them one after another)
MAX_VARIANTS = 3  # block-size variants per problem, for its largest sizes first
ELEMENT_LIMIT = 4 * CPU_ELEMENT_BUDGET


def past_blocks(block: int) -> int:
    """Two blocks and an odd tail: 2B + B/2 + 1 (2561 for 1024): a loop over it runs three times, the last one
    partial, and a grid of cdiv(n, B) has three programs."""
    return 2 * block + block // 2 + 1


def fixed_blocks(launches) -> dict[int, list[str]]:
    """Block constant -> the constexpr parameters holding it, largest first: power-of-two ints that kept one value
    on every launch of their kernel (the launches span several sizes)."""
    seen: dict[tuple[str, str], set] = {}
    for launch in launches:
        for name, value in launch.spec.constexprs.items():
            seen.setdefault((launch.spec.name, name), set()).add(value)
    out: dict[int, list[str]] = {}
    for (_, name), values in seen.items():
        value = next(iter(values)) if len(values) == 1 else None
        if type(value) is int and value >= 2 and value & (value - 1) == 0:
            out.setdefault(value, []).append(name)
    return dict(sorted(out.items(), reverse=True))


def block_variants(ctx: VerifyContext, variants: list[Variant], measure: Callable[[dict], int]) -> list[Variant]:
    """The block-size variants for the sizes that the variants run so far (`variants`) left within 2.5 blocks."""
    blocks = fixed_blocks(ctx.recorder.launches)
    if not blocks:
        return []
    ran = {r.variant for r in ctx.state.rows}
    done = [v for v in variants if v.name in ran]
    p, sizing = ctx.problem, ctx.sizing
    if p.size_knobs:
        def sizes_inputs(name: str) -> bool:  # a knob that sizes an input tensor (not a rank, a seed, a count)
            try:
                own = p.element_counts(p.size_knobs)[0]
                return p.element_counts({**p.size_knobs, name: p.size_knobs[name] + 1})[0] != own
            except Exception:
                return False
        plans = _knob_plans(p.size_knobs, sizing.base, blocks, done, measure, sizing.reductions,
                            sizing.at_least, lambda knobs: p.accepts(knobs, {}, p.meta_inputs(knobs)), sizes_inputs)
    else:
        plans = _literal_plans(p, sizing.sizes.base, blocks, done)
    out = []
    for i, (knobs, setting, what, block) in enumerate(plans, 1):
        names = "/".join(blocks[block])
        v = Variant(f"block-size-{i}", "size", 30 + i, knobs, None,
                    f"{what} past two blocks of {names}={block} and a tail, other sizes small", setting)
        count = programs(ctx, v)
        if count is None or count <= MAX_PROGRAMS:
            out.append(v)
        if len(out) == MAX_VARIANTS:
            break
    return out


def _knob_plans(knobs: dict[str, int], base: dict[str, int], blocks: dict[int, list[str]], done: list[Variant],
                measure, reductions, at_least: int, accepts, sizes_inputs) -> list[tuple]:
    """(knobs, setting, what, block) per knob that sizes an input: that knob past its blocks, the other sizes at their
    floors."""
    plans = []
    for name in sorted(knobs, key=lambda k: -knobs[k]):
        if knobs[name] < 2 or not sizes_inputs(name):
            continue
        covered = max((v.knobs.get(name, knobs[name]) for v in done), default=0)
        for block in blocks:
            target = past_blocks(block)
            if covered >= target:
                break  # a variant took this size past two blocks already
            small = {k: min(base.get(k, v), max(at_least, REDUCTION_MIN if k in reductions else PARALLEL_MIN))
                     for k, v in knobs.items() if k != name and v >= 16}
            candidate = {**base, **small, name: target}
            if measure(candidate) <= ELEMENT_LIMIT and accepts(candidate):
                plans.append((candidate, {}, f"{name} = {target}", block))
                break
    return plans


def _literal_plans(problem, base: dict, blocks: dict[int, list[str]], done: list[Variant]) -> list[tuple]:
    """(knobs, setting, what, block) per size read from the inputs (positions of one size move together): that size
    past its blocks, every other size small (3, 5, 7, ...; above the largest index an integer input holds)."""
    try:
        inputs = problem.make_inputs(1)
        init = problem.init()
    except Exception:
        return []
    by_size = groups(positions(inputs, init))
    floor = max(int_max(inputs), int_floor(inputs, init))
    small = {v: 3 + 2 * i for i, v in enumerate(sorted(by_size))}
    plans = []
    for size in sorted(by_size, reverse=True):
        covered = max((v.setting.get(by_size[size][0], size) for v in done), default=0)
        for block in blocks:
            target = past_blocks(block)
            if covered >= target:
                break
            setting = {}
            for other, members in by_size.items():
                now = base.get(members[0], other)
                new = target if other == size else (small[other] if floor < small[other] < now else now)
                setting.update({p: new for p in members if new != other})
            if elements(inputs, setting) <= ELEMENT_LIMIT and problem.accepts({}, setting, inputs):
                plans.append(({}, setting, f"size {size} -> {target}", block))
                break
    return plans


def programs(ctx: VerifyContext, v: Variant) -> int | None:
    """Programs one call of the implementation launches at this variant's sizes, from a dry run (launches recorded,
    not executed, then forgotten); None where that cannot be told (a grid not readable, a glue that fails dry), and
    on a GPU, where programs cost little and an autotuner would time a dry launch and keep its pick."""
    if not ctx.interpreted:
        return None
    p = ctx.problem
    try:
        with p.knobs_set(v.knobs):
            _, impl = p.callables(v.knobs, v.setting)
            inputs = p.make_inputs(v.seed, v.knobs, v.setting)
            r = ctx.player.call(impl, inputs, dry=True, knobs=v.knobs or None, keep_launches=False)
    except Exception:
        return None
    if r.error is not None:
        return None
    launched = r.launches
    counts = [launch.programs for launch in launched]
    return sum(counts) if counts and None not in counts else None

