"""The KL400-KL408 decisions from hand-made measurements (checker/measure/perf_rules.py)."""

from __future__ import annotations

from kernel_lsp.checker.measure.perf_rules import judge, summary
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


def test_perf_rules_a_disturbed_timing_never_fails_ci_even_with_compile_severity_warning():
    m = measurement()
    m.disturbed = "pid 7 (python)"
    out = {f.code: f for f in judge(m, None, "warning")}
    assert out["KL401"].severity == "info" and out["KL400"].severity == "info"
    assert out["KL401"].message.endswith("(timing disturbed by another process: see KL408)")


def test_perf_rules_a_registered_baseline_gets_its_own_verdict_and_label(monkeypatch):
    """Adding a baseline is registering it (baselines.py): its "slower than" verdict and its name in KL404 follow."""
    from kernel_lsp.checker.measure import baselines
    monkeypatch.setattr(baselines, "BASELINES", dict(baselines.BASELINES))
    baselines.baseline("cublas", "cuBLAS", "cuBLAS's matmul", "KL400")(lambda ctx: [])
    m = measurement()
    m.sides.append(SideTiming("cublas", 20.0, 19.0, 21.0, 50))
    m.speedups.append(Speedup("cublas", 0.5, 0.45, 0.55))
    assert [f.message.split(":")[0] for f in judge(m, None) if f.code in ("KL400", "KL401")] == [
        "slower than PyTorch eager", "slower than torch.compile", "slower than cuBLAS"]
    assert baselines.label("cublas") == "cuBLAS" and baselines.label("triton") == "the implementation"


def test_perf_rules_a_side_whose_wrapper_outlasts_its_kernels_is_launch_bound():
    """pointwise_conv2d's Triton side on the H200: 124 us per call back to back, 64 us of GPU time (the Python
    wrapper takes 120): KL404 names both numbers; the verdicts stand beside it."""
    m = measurement(eager=(0.9, 0.85, 0.95), triton_us=124.0)
    m.provenance.verdict_time = "wall"
    t = m.side("triton")
    t.gpu_us, t.wall_us, t.host_us, t.graph_us = 64.0, 124.0, 120.0, 66.0
    out = judge(m, None)
    assert codes(out) == ["KL404", "KL400", "KL401", "KL402"]
    assert out[0].message == ("launch-bound: the implementation's Python wrapper takes 120.0 us per call, its "
                              "kernels 64.0 us (back to back 124.0 us per call, as a CUDA graph 66.0 us): capture a "
                              "CUDA graph or launch fewer kernels")
    # torch.compile's own wrapper too (index_add on the H200: 135 us back to back, 69.5 us of GPU time)
    c = m.side("torch.compile")
    c.gpu_us, c.wall_us, c.host_us = 69.5, 135.0, 130.0
    (bound,) = [f.message for f in judge(m, None) if f.code == "KL404"]
    assert "; torch.compile's Python wrapper takes 130.0 us per call, its kernels 69.5 us" in bound


def test_perf_rules_gpu_bound_sides_are_not_launch_bound():
    m = measurement()
    for t in m.sides:
        t.gpu_us, t.wall_us, t.host_us = t.median_us, t.median_us * 1.02, 12.0
    assert "KL404" not in codes(judge(m, None))


def test_perf_rules_a_slow_issue_that_a_loop_does_not_pay_is_not_launch_bound():
    """H200, 2026-12-02: torch.compile's wrapper on rms_norm took 56 us to issue from an idle GPU, its kernels ran
    41 us, and a loop paid 43 us per call: the loop hides the wrapper, so no KL404."""
    m = measurement()
    c = m.side("torch.compile")
    c.gpu_us, c.wall_us, c.host_us = 40.6, 43.1, 55.9
    assert "KL404" not in codes(judge(m, None))
    c.wall_us = 66.0  # layer_norm's: the loop pays the wrapper
    assert "KL404" in codes(judge(m, None))


def test_perf_rules_a_verdict_says_which_time_it_uses_and_shows_the_other():
    m = measurement()
    m.provenance.verdict_time = "wall"
    impl, eager = m.side("triton"), m.side("eager")
    impl.gpu_us, eager.gpu_us = 30.0, 20.0
    message = judge(m, None)[0].message
    assert "41.0 us vs 25.4 us per call back to back on H200 (GPU time: 30.0 us vs 20.0 us)" in message


def test_perf_rules_a_disturbed_timing_is_information():
    m = measurement(eager=(1.2, 1.1, 1.3), compiled=(1.1, 1.05, 1.2))
    m.disturbed, m.provenance.gpu_index = "pid 4242, python, 97% of the SMs", 0
    out = judge(m, None)
    assert codes(out) == ["KL408", "KL402"]
    assert out[0].message.startswith("timing disturbed by another process on GPU 0 (pid 4242, python, 97% of the SMs)")


def test_perf_rules_impossible_speed_is_the_only_claim():
    out = judge(measurement(eager=(50.0, 48.0, 52.0)), "26800 GB/s for 536.9 MB of minimal traffic, above ...")
    assert codes(out) == ["KL403"] and "faster than physically possible" in out[0].message


def test_perf_rules_an_impossible_bandwidth_on_counted_bytes_says_how_to_declare_them():
    """scale_causal_softmax reads only a row's unmasked part: 110% of the bandwidth on counted bytes (H100). KL403
    stands (it may be a cache), and says how a kernel that legitimately reads less declares its bytes."""
    roof = Roofline(1073741824, "inputs and outputs", 1.3e9, "counted", 3338.0, 0.0, "memory", "write", 3293.0,
                    291.0, 110.0)
    m = measurement(roof=roof)
    (f,) = judge(m, "3338 GB/s for 1073.7 MB of minimal traffic, above the measured write bandwidth ...")
    assert f.code == "KL403" and f.message.endswith("declare the bytes the kernel must move (`bytes=` on the pragma "
                                                    "line)")
    m.roofline.bytes_source = "declared"
    assert "bytes=" not in judge(m, "3338 GB/s for 805.3 MB of minimal traffic, above ...")[0].message


def test_perf_rules_work_outside_the_stream_is_said():
    assert codes(judge(measurement(eager=(1.2, 1.1, 1.3), compiled=(1.1, 1.05, 1.2), timer="host clock"), None)) \
        == ["KL406", "KL402"]


def test_perf_rules_a_host_clock_time_makes_slower_than_information_only():
    """The host clock holds a synchronized call's host cost that the baselines' events do not (on an H100 a stream
    injection read 202 us by the host clock against eager's 49 us of GPU time, 55 vs 48 us back to back): KL406 is
    the claim, KL400 and KL401 stay information and say which timer took them."""
    out = judge(measurement(eager=(0.25, 0.24, 0.26), compiled=(0.25, 0.24, 0.26), timer="host clock"), None)
    assert codes(out) == ["KL406", "KL400", "KL401", "KL402"]
    assert [f.severity for f in out[1:3]] == ["info", "info"] and all("host clock" in f.message for f in out[1:3])
    plain = judge(measurement(eager=(0.25, 0.24, 0.26), compiled=(0.25, 0.24, 0.26)), None)
    assert [f.severity for f in plain if f.code in ("KL400", "KL401")] == [None, None]


def test_perf_rules_a_speedup_whose_interval_holds_one_is_inconclusive():
    """Slower, faster or inconclusive by the whole interval: a run under load may widen an interval to hold 1 (then
    it says so), so two runs differ by inconclusive, never by slower against faster."""
    from kernel_lsp.checker.measure.perf_rules import verdict
    assert [verdict(Speedup("eager", *s)) for s in ((0.9, 0.85, 0.95), (1.1, 1.05, 1.2), (0.98, 0.93, 1.01))] == [
        "slower", "faster", "inconclusive"]
    text = summary(measurement(eager=(0.98, 0.93, 1.01), compiled=(1.5, 1.4, 1.6)))
    assert text.startswith("0.98x eager (inconclusive), 1.50x torch.compile (")
    assert "KL400" not in codes(judge(measurement(eager=(0.98, 0.93, 1.01)), None))


def test_perf_rules_summary_names_speedups_roofline_and_gpu():
    roof = Roofline(537_000_000, "inputs and outputs", None, "none", 4100.0, None, "memory", "copy", 4270.0, 125.7,
                    71.0)
    assert summary(measurement(eager=(1.8, 1.7, 1.9), compiled=(1.2, 1.1, 1.3), roof=roof)) == \
        "1.80x eager, 1.20x torch.compile, 71% of HBM bandwidth (GPU time, H200)"
    roof.bound, roof.ceiling = "compute", "matmul bf16"
    assert "71% of bf16 matmul peak" in summary(measurement(roof=roof))


def test_perf_rules_summary_says_why_an_fp32_kernel_passes_the_fp32_matmul_peak():
    roof = Roofline(400_000_000, "inputs and outputs", 4.3e10, "declared", 720.0, 76.4, "compute", "matmul fp32", 50.7,
                    847.0, 150.0)
    text = summary(measurement(roof=roof))
    assert "150% of fp32 matmul peak (the rate without tensor cores" in text
    roof.percent = 61.0
    assert "61% of fp32 matmul peak (GPU time, H200)" in summary(measurement(roof=roof))


def test_perf_rules_slower_than_eager_is_information_when_another_process_disturbed_the_timing():
    """Eight checks at once on one GPU: their timings are serialized, but another process's verification can still
    run beside a timing (then taken again, and KL408 when still disturbed). A verdict from such numbers never fails
    CI: KL400 becomes information and says why."""
    m = measurement()
    m.disturbed = "pid 4242 python"
    out = {f.code: f for f in judge(m, None)}
    assert out["KL400"].severity == "info" and "timing disturbed by another process" in out["KL400"].message
    assert "KL408" in out
    assert next(f for f in judge(measurement(), None) if f.code == "KL400").severity is None


def test_perf_rules_work_of_the_implementations_outside_its_calls_is_a_warning_and_no_verdict():
    """The implementation's processes went on (or left the GPU busy) while PyTorch's side was timed (sides.py
    `SplitClock.quiet`): a KL406 warning against it, and its "slower than" verdicts are information only."""
    m = measurement()
    m.held_up = "the GPU stayed busy after the implementation's processes had stopped"
    out = {f.code: f for f in judge(m, None, "warning")}
    assert out["KL406"].severity is None  # KL406's own: a warning
    assert "work ran outside the implementation's calls: the GPU stayed busy" in out["KL406"].message
    assert out["KL400"].severity == "info" and out["KL401"].severity == "info"
