"""The performance findings as pure functions of a Measurement (the KL400-KL404 and KL406 decisions).

No torch and no GPU: tests/measure/test_perf_rules.py feeds hand-made measurements. The measure stage
(measure.py) collects the numbers; this module decides what they mean and says it in one line each:
- KL403 when the time is below what the measured ceilings allow (then nothing else is claimed);
- KL406 when work escaped the caller's stream (the time is then the host clock's);
- KL404 instead of "slower" when the call is launch-bound, with the CUDA-graph time beside it;
- KL400 when the whole 95% interval of the speedup over eager lies below 1, KL401 likewise for torch.compile;
- KL402, always otherwise: the summary that the code lens shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import Measurement, Speedup

LAUNCH_BOUND_GRAPH_FRACTION = 0.5  # graph replay under half the eager-launched time: launch overhead dominates


@dataclass
class PerfFinding:
    code: str
    message: str
    severity: str | None = None  # None: the code's default


def us(x: float) -> str:
    return f"{x:.1f} us" if x < 1000 else f"{x / 1000:.2f} ms"


def short_gpu(name: str) -> str:
    return name.replace("NVIDIA ", "").strip()


def ratio_text(s: Speedup) -> str:
    return f"{s.ratio:.2f}x (95% CI {s.low:.2f}-{s.high:.2f}x)"


def summary(m: Measurement) -> str:
    """"1.8x eager, 1.2x torch.compile, 71% of HBM bandwidth (H200)"."""
    parts = [f"{s.ratio:.2f}x {s.against}" for s in m.speedups]
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
    return f"{text} ({short_gpu(m.provenance.gpu)})"


def slower(m: Measurement, against: str, label: str) -> str | None:
    s = m.speedup(against)
    impl, base = m.side("triton"), m.side(against)
    if s is None or impl is None or base is None or not s.high < 1.0:
        return None
    return (f"slower than {label}: {ratio_text(s)}; {us(impl.median_us)} vs {us(base.median_us)} "
            f"on {short_gpu(m.provenance.gpu)}")


def launch_bound(m: Measurement) -> str | None:
    impl = m.side("triton")
    if not m.launch_bound or impl is None or impl.graph_us is None:
        return None
    empty = f", an empty kernel launch takes {us(m.empty_launch_us)}" if m.empty_launch_us is not None else ""
    baselines = "; ".join(f"{s.side} as a graph: {us(s.graph_us)}" for s in m.sides
                          if s.side != "triton" and s.graph_us is not None)
    return (f"launch-bound: {us(impl.median_us)} per call{empty}; replayed as a CUDA graph: {us(impl.graph_us)}"
            + (f" ({baselines})" if baselines else "") + ": fuse launches or capture the caller in a graph")


def judge(m: Measurement, impossible_reason: str | None, compile_severity: str = "info") -> list[PerfFinding]:
    if impossible_reason is not None:
        return [PerfFinding("KL403", f"faster than physically possible: {impossible_reason} on "
                            f"{short_gpu(m.provenance.gpu)}: the kernel skips work or the measurement is broken "
                            "(results computed lazily, cached, or on another stream)")]
    out: list[PerfFinding] = []
    if m.provenance.timer == "host clock":
        out.append(PerfFinding("KL406", "work ran outside the caller's CUDA stream: timed by the host clock "
                               "instead of CUDA events; a caller that reads the result on its own stream may see "
                               "it unfinished (synchronize the streams, or launch on the current one)"))
    bound = launch_bound(m)
    if bound is not None:
        out.append(PerfFinding("KL404", bound))
    else:
        eager = slower(m, "eager", "PyTorch eager")
        if eager:
            out.append(PerfFinding("KL400", eager))
        compiled = slower(m, "torch.compile", "torch.compile")
        if compiled:
            out.append(PerfFinding("KL401", compiled, "warning" if compile_severity == "warning" else None))
    out.append(PerfFinding("KL402", summary(m)))
    return out
