"""The roofline: the least time the device's measured ceilings allow for the reference's work, and the rule that
a measured time below it is a bug, never a win.

Work is counted from the reference, not from the kernel (a kernel that skips work must not lower its own bar):
- bytes: each input tensor and each parameter or buffer of the reference module read once, each output written
  once (the minimum any implementation must move), unless declared;
- FLOPs: torch's FlopCounterMode on one call of the reference (it counts matrix products, convolutions and
  attention; elementwise work counts nothing), unless declared.
A declaration (`flops=` / `bytes=` on the pragma line, or the `flops` / `bytes` setting) is a number or the name
of a function in the reference's module that returns one, like the `flops()` of the tasks in tasks/.

Everything here but `count_flops` and `minimal_bytes` is arithmetic on plain numbers (tests/checker/measure).
"""

from __future__ import annotations

from typing import Any, Callable

from ...model import Ceilings, Roofline
from ...player.evidence import tensors_of  # noqa: F401  (the measure stage's too: stage.py, report.py)

# The compute ceiling that binds a reference of each dtype (torch runs fp32 matmuls in fp32 unless told
# otherwise), and the fastest one a correct kernel of that dtype could use (tf32 for fp32), which a claim of
# impossible speed must beat.
HONEST_CEILING = {"float32": "matmul fp32", "float16": "matmul fp16", "bfloat16": "matmul bf16",
                  "float8_e4m3fn": "matmul fp8", "float8_e5m2": "matmul fp8", "float64": "matmul fp64"}
FASTEST_CEILING = {"float32": "matmul tf32", "float16": "matmul fp16", "bfloat16": "matmul bf16",
                   "float8_e4m3fn": "matmul fp8", "float8_e5m2": "matmul fp8", "float64": "matmul fp64"}
L2_FACTOR = 2  # data smaller than twice the L2 may be served from it: the HBM ceiling need not bind




def minimal_bytes(inputs: list, outputs: Any, module: Any = None) -> int:
    """Each input, parameter and buffer read once and each output written once, in bytes."""
    import torch
    read = tensors_of(list(inputs))
    if isinstance(module, torch.nn.Module):
        read += list(module.parameters()) + list(module.buffers())
    seen: set[int] = set()
    total = 0
    for t in read + tensors_of(outputs):
        if id(t) in seen:
            continue
        seen.add(id(t))
        total += t.numel() * t.element_size()
    return total


def count_flops(fn: Callable, inputs: list) -> float | None:
    """FLOPs of one call as torch counts them; None when it counts nothing (elementwise work)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        fn(*inputs)
    total = counter.get_total_flops()
    return float(total) if total else None


def resolve_declared(value: str | float | int | None, module: Any) -> float | None:
    """A declared amount: a number, or the name of a function in the reference's module that returns one."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(value)
    except ValueError:
        pass
    fn = getattr(module, str(value), None)
    if not callable(fn):
        raise ValueError(f"{value!r} is neither a number nor a function of the reference module")
    return float(fn())


def dtype_name(dtype: Any) -> str:
    return str(dtype).replace("torch.", "")


def roofline(nbytes: int, bytes_source: str, flops: float | None, flops_source: str, median_us: float,
             dtype: str, ceilings: Ceilings) -> Roofline | None:
    """Achieved rates and the percentage of the binding ceiling; None when the device has no copy ceiling."""
    copy = ceilings.get("copy")
    if copy is None or median_us <= 0:
        return None
    seconds = median_us * 1e-6
    mem_floor_us = nbytes / (copy.value * 1e9) * 1e6
    compute = ceilings.get(HONEST_CEILING.get(dtype, "")) if flops else None
    compute_floor_us = flops / (compute.value * 1e12) * 1e6 if compute is not None and flops else 0.0
    if compute is not None and compute_floor_us > mem_floor_us:
        bound, name, value, floor = "compute", compute.name, compute.value, compute_floor_us
    else:
        bound, name, value, floor = "memory", copy.name, copy.value, mem_floor_us
    return Roofline(bytes=nbytes, bytes_source=bytes_source, flops=flops, flops_source=flops_source,
                    gbps=nbytes / seconds / 1e9, tflops=(flops / seconds / 1e12) if flops else None, bound=bound,
                    ceiling=name, ceiling_value=value, floor_us=floor, percent=100.0 * floor / median_us,
                    l2_resident=nbytes < L2_FACTOR * ceilings.l2_bytes)


LIBRARY_MARGIN = 0.10  # how far a kernel may beat the library's measured matmul rate before it is impossible


def impossible(roof: Roofline, slowest_plausible_us: float, dtype: str, ceilings: Ceilings,
               cache: str = "cold") -> str | None:
    """Why a measured time is faster than the device allows, or None.

    `slowest_plausible_us` is the upper end of the implementation's time interval: the claim must hold even for
    it. Bandwidth counts only where HBM must be crossed (cold L2, data larger than twice the L2); compute is
    judged against the fastest ceiling a correct kernel of this dtype could use. Each ceiling may be exceeded by
    its own measured spread before the claim stands.
    """
    seconds = slowest_plausible_us * 1e-6
    streams = [c for c in (ceilings.get("copy"), ceilings.get("write")) if c is not None]
    if streams and cache == "cold" and not roof.l2_resident:
        gbps = roof.bytes / seconds / 1e9
        # Any mix of reads and writes: the fastest stream this device was measured to move (a copy, or writes only).
        fastest = max(streams, key=lambda c: c.value * (1 + c.spread))
        limit = fastest.value * (1 + fastest.spread)
        if gbps > limit:
            what = "copy bandwidth" if fastest.name == "copy" else f"{fastest.name} bandwidth (the fastest stream)"
            return (f"{gbps:.0f} GB/s for {roof.bytes / 1e6:.1f} MB of minimal traffic, above the measured {what} "
                    f"of {fastest.value:.0f} GB/s (+{100 * fastest.spread:.1f}% spread)")
    if roof.flops:
        fastest = ceilings.get(FASTEST_CEILING.get(dtype, ""))
        if fastest is not None:
            tflops = roof.flops / seconds / 1e12
            # The rate is cuBLAS's at 8192^3: a kernel may beat it by a few percent at its own shape (the H200's
            # bf16 and fp16 matmul tasks ran at 103-104% of it), a skipped or cached result by many times.
            limit = fastest.value * (1 + fastest.spread) * (1 + LIBRARY_MARGIN)
            if tflops > limit:
                return (f"{tflops:.1f} TFLOP/s, above the measured {fastest.name} rate of {fastest.value:.1f} "
                        f"TFLOP/s by over {100 * LIBRARY_MARGIN:.0f}% (+{100 * fastest.spread:.1f}% spread)")
    return None
