"""How many just-in-time compiles a job triggered in Triton and how long they took (`check --timings`).

On a GPU every new specialization of a kernel (a new tile size, an odd length, an unaligned pointer) is compiled
when first launched, inside whichever stage launched it; this clock makes that time visible. It chains Triton's
`jit_cache_hook` (called before a compile) and `jit_post_compile_hook` (after), so hooks the user set still run.
A compile answered by Triton's on-disk cache counts too, at the little time it takes. The seconds are summed over
the compiles: those that run in parallel (an autotune list's configs, capture.precompile_configs) overlap.
"""

from __future__ import annotations

import contextlib
import time
from typing import Iterator

from ...jobs import Sink


@contextlib.contextmanager
def jit_clock(sink: Sink) -> Iterator[None]:
    try:
        from triton import knobs
        runtime = knobs.runtime
        before, after = runtime.jit_cache_hook, runtime.jit_post_compile_hook
    except (ImportError, AttributeError):  # a Triton without these hooks: nothing to time
        yield
        return
    started: list[float] = []
    total = {"n": 0, "s": 0.0}

    def on_start(*args, **kwargs):
        started.append(time.monotonic())
        return before(*args, **kwargs) if before else None

    def on_end(*args, **kwargs):
        if started:
            total["n"] += 1
            total["s"] += time.monotonic() - started.pop()
        return after(*args, **kwargs) if after else None

    runtime.jit_cache_hook, runtime.jit_post_compile_hook = on_start, on_end
    try:
        yield
    finally:
        runtime.jit_cache_hook, runtime.jit_post_compile_hook = before, after
        if total["n"]:
            sink.stat("jit_compiles", total["n"])
            sink.stat("jit_seconds", round(total["s"], 3))
