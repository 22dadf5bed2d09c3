"""The KL400-KL406 decisions from hand-made measurements (engine/perf_rules.py)."""

from __future__ import annotations

from kernel_lsp.engine.perf_rules import judge, summary
from kernel_lsp.model import Measurement, Provenance, Roofline, SideTiming, Speedup

PROV = Provenance("NVIDIA H200", 1980, "580.1", "2.11.0", "3.6.0", "cold", False, "cuda events", "2026-11-30")


def measurement(eager=(0.62, 0.60, 0.64), compiled=(0.9, 0.85, 0.95), triton_us=41.0, graph_us=None,
                launch_bound=False, timer="cuda events", roof=None) -> Measurement:
    sides = [SideTiming("triton", triton_us, triton_us * 0.98, triton_us * 1.02, 50, graph_us),
             SideTiming("eager", 25.4, 25.0, 25.8, 50, 3.0 if graph_us else None),
             SideTiming("torch.compile", 36.9, 36.0, 37.5, 50)]
    speedups = [Speedup("eager", *eager), Speedup("torch.compile", *compiled)]
    prov = Provenance(**{**PROV.to_dict(), "timer": timer})
    return Measurement(sides, speedups, prov, roof, empty_launch_us=5.0, launch_bound=launch_bound)


def codes(findings) -> list[str]:
    return [f.code for f in findings]


def test_perf_rules_slower_than_eager_only_when_the_whole_interval_is_below_one():
    out = judge(measurement(), None)
    assert codes(out) == ["KL400", "KL401", "KL402"]
    assert out[0].message.startswith("slower than PyTorch eager: 0.62x (95% CI 0.60-0.64x); 41.0 us vs 25.4 us")
    assert codes(judge(measurement(eager=(0.97, 0.93, 1.01)), None))[0] != "KL400"  # the interval reaches 1


def test_perf_rules_compile_severity_is_configurable():
    default = next(f for f in judge(measurement(), None) if f.code == "KL401")
    assert default.severity is None  # the code's default: information
    warned = next(f for f in judge(measurement(), None, "warning") if f.code == "KL401")
    assert warned.severity == "warning"


def test_perf_rules_launch_bound_replaces_slower():
    out = judge(measurement(triton_us=9.0, graph_us=2.3, launch_bound=True), None)
    assert codes(out) == ["KL404", "KL402"]
    assert "launch-bound: 9.0 us per call, an empty kernel launch takes 5.0 us; replayed as a CUDA graph: 2.3 us" \
        in out[0].message and "eager as a graph: 3.0 us" in out[0].message


def test_perf_rules_impossible_speed_is_the_only_claim():
    out = judge(measurement(eager=(50.0, 48.0, 52.0)), "26800 GB/s for 536.9 MB of minimal traffic, above ...")
    assert codes(out) == ["KL403"] and "faster than physically possible" in out[0].message


def test_perf_rules_work_outside_the_stream_is_said():
    assert codes(judge(measurement(eager=(1.2, 1.1, 1.3), compiled=(1.1, 1.05, 1.2), timer="host clock"), None)) \
        == ["KL406", "KL402"]


def test_perf_rules_summary_names_speedups_roofline_and_gpu():
    roof = Roofline(537_000_000, "inputs and outputs", None, "none", 4100.0, None, "memory", "copy", 4270.0, 125.7,
                    71.0)
    assert summary(measurement(eager=(1.8, 1.7, 1.9), compiled=(1.2, 1.1, 1.3), roof=roof)) == \
        "1.80x eager, 1.20x torch.compile, 71% of HBM bandwidth (H200)"
    roof.bound, roof.ceiling = "compute", "matmul bf16"
    assert "71% of bf16 matmul peak" in summary(measurement(roof=roof))


def test_perf_rules_summary_says_why_an_fp32_kernel_passes_the_fp32_matmul_peak():
    roof = Roofline(400_000_000, "inputs and outputs", 4.3e10, "declared", 720.0, 76.4, "compute", "matmul fp32", 50.7,
                    847.0, 150.0)
    text = summary(measurement(roof=roof))
    assert "150% of fp32 matmul peak (the rate without tensor cores" in text
    roof.percent = 61.0
    assert "61% of fp32 matmul peak (H200)" in summary(measurement(roof=roof))
