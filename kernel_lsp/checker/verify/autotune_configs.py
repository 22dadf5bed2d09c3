"""Every config of an `@triton.autotune` list is verified, not only the one a run's autotuner picks (another run,
or another GPU, picks another, and a config may leave the tail unwritten). Runs in a worker, driven by the
Verifier's schedule (schedule.py): each other config is forced through the player's launch recorder (player/capture.py), and
the variants it runs are named `config-N` and `config-N-odd`."""

from __future__ import annotations

from typing import Callable

from .context import VerifyContext
from .plan.variants import Variant

MAX_CONFIGS = 16  # autotune configs verified per kernel (the first ones of a longer list)


def configs_prefix(configs: list[tuple[str, int, int, str]]) -> str:
    """"_k autotune configs 3 and 4 of 9 (BLOCK=64, num_warps=4; BLOCK=32, num_warps=2) only: " for a finding
    that only some configs have."""
    seen = sorted({c[:2]: c for c in configs}.values(), key=lambda c: (c[0], c[1]))
    name, total = seen[0][0], seen[0][2]
    numbers = [str(c[1] + 1) for c in seen]
    listed = numbers[0] if len(numbers) == 1 else ", ".join(numbers[:-1]) + " and " + numbers[-1]
    return (f"{name} autotune config{'s' if len(seen) > 1 else ''} {listed} of {total} "
            f"({'; '.join(c[3] for c in seen)}) only: ")


def verify_configs(ctx: VerifyContext, described: dict[str, tuple[str, int, int, str]],
                   run_one: Callable[[Variant], None], variants: list[Variant]) -> None:
    """Force each config but the picked one in turn, on fresh inputs of the problem's own sizes and of odd sizes
    (a tail), each run with every check of a variant (`run_one`); `described` maps each variant to its config for
    the report (Findings.configs)."""
    recorder = ctx.recorder
    bases = [v for v in variants if v.name in ("seed-1", "odd-size")]
    for qual, (configs, chosen) in sorted(recorder.autotuners.items()):
        name = qual.rsplit(".", 1)[-1]
        for i, config in enumerate(configs[:MAX_CONFIGS]):
            if i == chosen or len(configs) < 2:
                continue
            recorder.forced = {qual: i}
            try:
                for b in bases:
                    v = Variant(f"config-{i + 1}" + ("" if b.name == "seed-1" else "-odd"), "config",
                                100 + 2 * i + (b.name != "seed-1"),
                                ctx.sizing.base if b.name == "seed-1" else b.knobs,
                                None, f"autotune config {i + 1} of {len(configs)} of {name}, {b.description}",
                                b.setting)
                    described[v.name] = (name, i, len(configs), config)  # as the player described it
                    run_one(v)
            finally:
                recorder.forced = {}
