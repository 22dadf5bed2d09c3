"""The performance findings as pure functions of a Measurement (the KL400-KL404 and KL406 decisions).

No torch and no GPU: tests/checker/measure/test_perf_rules.py feeds hand-made measurements. The measure stage
(measure.py) collects the numbers; this module decides what they mean and says it in one line each:
- KL403 when the time is below what the measured ceilings allow (then nothing else is claimed);
- KL406 when work escaped the caller's stream (the time is then the host clock's);
- KL404 for each side that is launch-bound: its host issue time (the Python wrapper) exceeds its GPU time, so a
  loop that calls it pays the host's time; the GPU time and the CUDA-graph time beside it;
- KL408 (information) when another process used the GPU during the timing, after one retry;
- KL400 when the whole 95% interval of the speedup over eager lies below 1, KL401 likewise for torch.compile (each
  baseline's code is registered with it, baselines.py); information only when the timing was disturbed (KL408) or
  taken by the host clock (KL406);
- KL402, always otherwise: the summary that the code lens shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...model import Measurement, SideTiming, Speedup, us
from . import baselines

LAUNCH_BOUND_WALL_FRACTION = 1.2  # issue and back-to-back times over this times the GPU time (plus LAUNCH_BOUND_MIN_US)
LAUNCH_BOUND_MIN_US = 5.0


@dataclass
class PerfFinding:
    code: str
    message: str
    severity: str | None = None  # None: the code's default


def short_gpu(name: str) -> str:
    return name.replace("NVIDIA ", "").strip()


def ratio_text(s: Speedup) -> str:
    return f"{s.ratio:.2f}x (95% CI {s.low:.2f}-{s.high:.2f}x)"


def verdict(s: Speedup) -> str:
    """"slower" when the whole 95% interval of the speedup lies below 1 (KL400, KL401), "faster" when it lies above,
    else "inconclusive": two runs of one kernel, alone and under load, may differ by inconclusive, never by slower
    against faster."""
    return "slower" if s.high < 1.0 else "faster" if s.low > 1.0 else "inconclusive"


def summary(m: Measurement) -> str:
    """"1.8x eager, 1.2x torch.compile, 71% of HBM bandwidth (H200)"; a speedup whose interval holds 1 says
    "(inconclusive)"."""
    parts = [f"{s.ratio:.2f}x {s.against}" + (" (inconclusive)" if verdict(s) == "inconclusive" else "")
             for s in m.speedups]
    r = m.roofline
    if r is not None:
        if r.bound == "memory":
            where = "HBM bandwidth" + (" (L2-resident data)" if r.l2_resident else "")
        else:
            where = f"{r.ceiling.replace('matmul ', '')} matmul peak"
            if r.ceiling == "matmul fp32" and r.percent > 100:
                # The fp32 ceiling is cuBLAS without TF32; fp32 accuracy from TF32 tensor cores (three TF32
                # products, tf32x3) legitimately passes it. The impossible-speed rule judges against TF32's rate.
                where += " (the rate without tensor cores, which fp32 computed as three TF32 products can pass)"
        parts.append(f"{r.percent:.0f}% of {where}")
    text = ", ".join(parts) if parts else us(m.sides[0].median_us)
    when = "back to back" if m.provenance.verdict_time == "wall" else "GPU time"
    return f"{text} ({when}, {short_gpu(m.provenance.gpu)})"


def slower(m: Measurement, against: str, label: str) -> str | None:
    s = m.speedup(against)
    impl, base = m.side("triton"), m.side(against)
    if s is None or impl is None or base is None or verdict(s) != "slower":
        return None
    return (f"slower than {label}: {ratio_text(s)}; {us(impl.median_us)} vs {us(base.median_us)} "
            f"{time_label(m)} on {short_gpu(m.provenance.gpu)}{other_time(m, impl, base)}")


def time_label(m: Measurement) -> str:
    return "per call back to back" if m.provenance.verdict_time == "wall" else "of GPU time"


def other_time(m: Measurement, impl: SideTiming, base: SideTiming) -> str:
    """The time the verdict does not use, for the same two sides."""
    if m.provenance.verdict_time == "wall" and impl.gpu_us is not None and base.gpu_us is not None:
        return f" (GPU time: {us(impl.gpu_us)} vs {us(base.gpu_us)})"
    if m.provenance.verdict_time == "gpu" and impl.wall_us is not None and base.wall_us is not None:
        return f" (back to back: {us(impl.wall_us)} vs {us(base.wall_us)})"
    return ""


def side_launch_bound(t: SideTiming) -> bool:
    """The host takes longer to issue a call (its Python wrapper) than the GPU takes to run it, and a loop that calls
    it without a CUDA graph pays for that: its back-to-back time is over LAUNCH_BOUND_WALL_FRACTION of the GPU time.
    The issue time alone, taken from an idle GPU, can be longer than what a loop pays (H200: torch.compile on
    rms_norm issued in 56 us, ran 41 us of kernels, and a loop paid 43 us per call): no diagnostic for that."""
    if t.host_us is None or t.gpu_us is None:
        return False
    slow = LAUNCH_BOUND_WALL_FRACTION * t.gpu_us + LAUNCH_BOUND_MIN_US
    return t.host_us > slow and (t.wall_us is None or t.wall_us > slow)


def launch_bound(m: Measurement) -> str | None:
    """The KL404 line: "launch-bound: the implementation's Python wrapper takes 120 us per call, its kernels 64 us
    (...); torch.compile's wrapper takes 130 us, its kernels 69.5 us: capture a CUDA graph or launch fewer
    kernels", or None when no side is."""
    bound = [t for t in m.sides if side_launch_bound(t)]
    if not bound:
        return None
    parts = []
    for t in bound:
        who = baselines.label(t.side)
        extra = [f"back to back {us(t.wall_us)} per call"] if t.wall_us is not None else []
        extra += [f"as a CUDA graph {us(t.graph_us)}"] if t.graph_us is not None else []
        parts.append(f"{who}'s Python wrapper takes {us(t.host_us)} per call, its kernels {us(t.gpu_us)}"
                     + (f" ({', '.join(extra)})" if extra else ""))
    impl = any(t.side in ("triton", "current") for t in bound)
    advice = ("capture a CUDA graph or launch fewer kernels" if impl else
              "the baseline's number is what a caller without CUDA graphs pays")
    return "launch-bound: " + "; ".join(parts) + f": {advice}"


def judge(m: Measurement, impossible_reason: str | None, compile_severity: str = "info") -> list[PerfFinding]:
    if impossible_reason is not None:
        counted = m.roofline is not None and m.roofline.bytes_source != "declared" and "GB/s" in impossible_reason
        return [PerfFinding("KL403", f"faster than physically possible: {impossible_reason} on "
                            f"{short_gpu(m.provenance.gpu)}: the kernel skips work or the measurement is broken "
                            "(results computed lazily, cached, or on another stream)"
                            + ("; the minimal traffic reads every input element once: where the output does not "
                               "depend on all of them (a causal mask), declare the bytes the kernel must move "
                               "(`bytes=` on the pragma line)" if counted else ""))]
    out: list[PerfFinding] = []
    host = m.provenance.timer == "host clock"
    if host:
        out.append(PerfFinding("KL406", "work ran outside the caller's CUDA stream: timed by the host clock "
                               "instead of CUDA events; a caller that reads the result on its own stream may see "
                               "it unfinished (synchronize the streams, or launch on the current one)"))
    if m.held_up:  # the implementation's work went on while PyTorch's side was timed: its times say nothing
        out.append(PerfFinding("KL406", f"work ran outside the implementation's calls: {m.held_up}, also when "
                               "timed again; a caller's next work would wait for it (end every thread and process "
                               "the implementation starts, and leave no GPU work queued when a call returns)"))
    bound = launch_bound(m)
    if bound is not None:
        out.append(PerfFinding("KL404", bound))
    # A time the host clock took (work escaped the stream, or the events were patched) holds the host's own cost of
    # a synchronized call, which the baselines' CUDA events do not: a "slower than" from it is information only.
    note = " (the implementation timed by the host clock: see KL406)" if host else ""
    for b in baselines.BASELINES.values():  # KL400 (eager), KL401 (torch.compile): the whole interval below 1
        text = slower(m, b.name, b.label)
        if not text:
            continue
        if m.held_up:
            out.append(PerfFinding(b.slower_code, text + " (the implementation's work ran on beside it: see KL406)",
                                   "info"))
        elif m.disturbed:  # taken while another process used the GPU (also when taken again): never a CI failure
            out.append(PerfFinding(b.slower_code, text + " (timing disturbed by another process: see KL408)", "info"))
        elif host:
            out.append(PerfFinding(b.slower_code, text + note, "info"))
        else:
            out.append(PerfFinding(b.slower_code, text, "warning" if b.severity_set_by_compile_severity
                                   and compile_severity == "warning" else None))
    if m.disturbed:
        out.append(PerfFinding("KL408", f"timing disturbed by another process on GPU "
                               f"{m.provenance.gpu_index if m.provenance.gpu_index is not None else '?'} "
                               f"({m.disturbed}), also when taken again: the intervals may be wide"))
    out.append(PerfFinding("KL402", summary(m)))
    return out
