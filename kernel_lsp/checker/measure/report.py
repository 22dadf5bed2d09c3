"""What the measure stage reports: each side's timing and the implementation's speedup over each other side, the
reference's bytes and FLOPs for the roofline, where the numbers come from (the GPU, its clock, its driver, Triton),
and the performance findings (perf_rules.judge), with the measurement as each launched kernel's facts. GPU only.
"""

from __future__ import annotations

from ...model import KernelFacts, Measurement, Severity, SideTiming, Speedup
from . import perf_rules
from .roofline import count_flops, dtype_name, minimal_bytes, resolve_declared, tensors_of
from .stats import median, median_interval, ratio_of_medians
from ..verify.plan.variants import clone_inputs

SOURCE = "kernel-lsp.measure"


def _first_float_dtype(tensors: list) -> str:
    for t in tensors:
        if t.is_floating_point():
            return dtype_name(t.dtype)
    return dtype_name(tensors[0].dtype) if tensors else "float32"


def _gpu_name() -> str:
    import torch
    return torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU (host clock, tests only)"


def _sm_clock_mhz() -> int | None:
    try:
        import pynvml
        import torch
        if not torch.cuda.is_available():
            return None
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        return int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
    except Exception:
        return None


def _timing(name: str, gpu: list[float], gpu_groups: list[int], wall: list[float] | None, wall_groups: list[int],
            issue: list[float] | None, verdict: str, graph: list[float] | None = None) -> SideTiming:
    g = median_interval(gpu, groups=gpu_groups)
    w = median_interval(wall, groups=wall_groups) if wall else None
    chosen, n = (w, len(wall)) if verdict == "wall" and w is not None else (g, len(gpu))
    return SideTiming(name, round(chosen.estimate, 3), round(chosen.low, 3), round(chosen.high, 3), n,
                      round(median(graph), 3) if graph else None,
                      gpu_us=round(g.estimate, 3), gpu_low_us=round(g.low, 3), gpu_high_us=round(g.high, 3),
                      wall_us=round(w.estimate, 3) if w else None, wall_low_us=round(w.low, 3) if w else None,
                      wall_high_us=round(w.high, 3) if w else None,
                      host_us=round(median(issue), 3) if issue else None)


def _speedup(against: str, base: list[float], base_groups: list[int], impl: list[float],
             impl_groups: list[int]) -> Speedup:
    ci = ratio_of_medians(base, impl, numerator_groups=base_groups, denominator_groups=impl_groups)
    return Speedup(against, round(ci.estimate, 4), round(ci.low, 4), round(ci.high, 4))


def _report_wrong_timed_output(rep, problem_text: str, where, launched: list[str]) -> None:
    """Say that the timed calls' output is wrong (KL405), and that each launched kernel is not measured."""
    rep.add("KL405", f"the output of the timed calls is wrong once warmed up: {problem_text[:600]}", where,
            source=SOURCE)
    for qual in launched:
        rep.w.kernel(qual.rsplit(".", 1)[-1], KernelFacts(
            performance_note="not measured: the output of the timed calls is wrong (KL405)"))


def _side_timings(sides: dict, times: dict, samples: dict, back: dict, graphs: dict, verdict: str,
                  first_calls: dict[str, tuple[float, bool]]) -> tuple[list[SideTiming], list[Speedup]]:
    """Each side's timing (GPU and back-to-back times, the verdict's time, graph replays, a baseline's first call
    such as torch.compile's compile), and the implementation's speedup over each other side on the verdict's
    time."""
    wall = {name: (back[name].loop_us(), back[name].loop_groups()) if name in back else ([], []) for name in sides}
    timings = [_timing(name, times[name], samples[name].copy, wall[name][0], wall[name][1],
                       back[name].issue_us if name in back else None, verdict, graphs.get(name))
               for name in sides]
    for t in timings:
        if t.side in first_calls:
            t.compile_seconds, t.cached_compile = round(first_calls[t.side][0], 3), first_calls[t.side][1]
    chosen = {name: wall[name] if verdict == "wall" and wall[name][0] else (times[name], samples[name].copy)
              for name in sides}
    speedups = [_speedup(name, chosen[name][0], chosen[name][1], chosen["triton"][0], chosen["triton"][1])
                for name in sides if name != "triton"]
    return timings, speedups


def _reference_work(opts, module, ref, pristine: list, r) -> tuple:
    """The reference's bytes and FLOPs, declared (measure.bytes, measure.flops) or else counted from its inputs,
    outputs and operations, each with where it comes from, and the first float dtype among them."""
    nbytes = resolve_declared(opts.bytes, module)
    flops = resolve_declared(opts.flops, module)
    bytes_source = "declared" if nbytes is not None else "inputs and outputs"
    flops_source = "declared" if flops is not None else "counted"
    if nbytes is None:
        nbytes = minimal_bytes(pristine, r, ref)
    else:  # every output element is written at least once, whatever is declared (`bytes=1` would silence KL403)
        nbytes = max(nbytes, float(minimal_bytes([], r)))
    if flops is None:
        flops = count_flops(ref, clone_inputs(pristine))
        flops_source = "counted" if flops else "none"
    dtype = _first_float_dtype(tensors_of(pristine) + tensors_of(r))
    return nbytes, bytes_source, flops, flops_source, dtype


def _report_measurement(rep, m: Measurement, reason, compile_severity, where, launched: list[str]) -> None:
    """Emit the performance findings (perf_rules.judge), each with the measurement as evidence, and the
    measurement as each launched kernel's facts."""
    evidence = {"provenance": m.provenance.to_dict(), "summary": m.summary,
                "sides": [s.to_dict() for s in m.sides], "speedups": [s.to_dict() for s in m.speedups]}
    for f in perf_rules.judge(m, reason, compile_severity):
        rep.add(f.code, f.message, where, source=SOURCE,
                severity={"warning": Severity.WARNING, "info": Severity.INFO}.get(f.severity or ""), **evidence)
    for qual in launched:
        rep.w.kernel(qual.rsplit(".", 1)[-1], KernelFacts(measurement=m))


def _driver() -> str:
    import torch
    if not torch.cuda.is_available():
        return "none"
    from .ceilings import device_identity
    return device_identity()[1]


def _triton_version() -> str:
    import triton
    return triton.__version__
