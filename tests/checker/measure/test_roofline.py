"""The roofline arithmetic and the impossible-speed rule (checker/measure/roofline.py), with made-up ceilings."""

from __future__ import annotations

import pytest
import torch

from kernel_lsp.checker.measure.roofline import (count_flops, impossible, minimal_bytes, resolve_declared, roofline)
from kernel_lsp.model import Ceiling, Ceilings

H200 = Ceilings("NVIDIA H200", "580.1", 60 << 20, [
    Ceiling("copy", 4270.0, 0.01), Ceiling("matmul fp32", 50.0, 0.02), Ceiling("matmul tf32", 400.0, 0.03),
    Ceiling("matmul bf16", 790.0, 0.02), Ceiling("matmul fp16", 800.0, 0.02)])
MB512 = 512 << 20


def test_roofline_memory_bound_elementwise():
    # 512 MiB moved in 131 us: 4098 GB/s, 96% of the 4270 GB/s copy.
    r = roofline(MB512, "inputs and outputs", None, "none", 131.0, "float32", H200)
    assert r.bound == "memory" and r.ceiling == "copy" and r.tflops is None
    assert r.gbps == pytest.approx(MB512 / 131e-6 / 1e9) and r.percent == pytest.approx(100 * r.floor_us / 131.0)
    assert 95 < r.percent < 97 and not r.l2_resident


def test_roofline_compute_bound_matmul_uses_the_dtypes_honest_ceiling():
    n = 8192
    flops, nbytes = 2.0 * n ** 3, 3 * n * n * 2
    r = roofline(nbytes, "inputs and outputs", flops, "counted", 1600.0, "bfloat16", H200)
    assert r.bound == "compute" and r.ceiling == "matmul bf16"
    assert r.tflops == pytest.approx(flops / 1600e-6 / 1e12) and r.percent == pytest.approx(100 * r.tflops / 790.0)


def test_roofline_small_data_is_marked_l2_resident():
    r = roofline(4 << 20, "inputs and outputs", None, "none", 5.0, "float32", H200)
    assert r.l2_resident


def test_roofline_impossible_bandwidth_fires_only_beyond_the_ceilings_spread():
    slow_enough = roofline(MB512, "x", None, "none", 126.5, "float32", H200)  # 4244 GB/s: under the ceiling
    assert impossible(slow_enough, 126.5, "float32", H200) is None
    cheat = roofline(MB512, "x", None, "none", 20.0, "float32", H200)  # 26.8 TB/s: no HBM does that
    reason = impossible(cheat, 20.0, "float32", H200)
    assert reason and "above the measured copy bandwidth of 4270 GB/s" in reason
    # Within the spread (1%): 4300 GB/s is not a claim of cheating.
    edge_us = MB512 / 4300e9 * 1e6
    assert impossible(roofline(MB512, "x", None, "none", edge_us, "float32", H200), edge_us, "float32", H200) is None


def test_roofline_a_stream_of_writes_is_judged_against_the_measured_write_rate():
    """The H200 writes faster than it copies: torch.compile's outer product (537 MB written, 96 KB read) ran at
    4.47 TB/s against a copy ceiling of 4.22. The impossible-speed rule takes the fastest measured stream, so such a
    kernel is not called impossible; above the write rate it still is, and without a write ceiling the copy rule
    stands as before."""
    h200 = Ceilings("NVIDIA H200", "580.1", 60 << 20, [Ceiling("copy", 4216.0, 0.003), Ceiling("write", 4520.0, 0.004)])
    outer = 536_969_216
    writes = roofline(outer, "x", None, "none", 121.6, "float32", h200)  # 4416 GB/s
    assert writes.percent > 100 and writes.ceiling == "copy"  # the percentage stays against the copy
    assert impossible(writes, 121.6, "float32", h200) is None
    faster = roofline(outer, "x", None, "none", 115.0, "float32", h200)  # 4669 GB/s: above writes too
    reason = impossible(faster, 115.0, "float32", h200)
    assert reason and "write bandwidth (the fastest stream) of 4520 GB/s" in reason
    copy_only = Ceilings("NVIDIA H200", "580.1", 60 << 20, [Ceiling("copy", 4216.0, 0.003)])
    assert "copy bandwidth of 4216 GB/s" in impossible(writes, 121.6, "float32", copy_only)


def test_ceilings_cached_by_an_older_version_without_a_write_rate_are_measured_again(tmp_path, monkeypatch):
    import json

    from kernel_lsp.checker.measure import ceilings as ce
    monkeypatch.setenv("KERNEL_LSP_CEILINGS_DIR", str(tmp_path))
    monkeypatch.setattr(ce, "device_identity", lambda: ("NVIDIA H200", "580.1"))
    fresh = Ceilings("NVIDIA H200", "580.1", 1, [Ceiling("copy", 4216.0, 0.003), Ceiling("write", 4520.0, 0.004)])
    monkeypatch.setattr(ce, "measure", lambda: fresh)
    old = Ceilings("NVIDIA H200", "580.1", 1, [Ceiling("copy", 4216.0, 0.003)])
    path = ce._cache_file("NVIDIA H200", "580.1")
    path.write_text(json.dumps(old.to_dict()))
    got, cached = ce.load_or_measure()
    assert not cached and got.get("write") is not None
    again, cached = ce.load_or_measure()  # now stored with both
    assert cached and again.get("write").value == 4520.0


def test_ceilings_are_cached_per_torch_version_and_measuring_code(tmp_path, monkeypatch):
    from importlib import metadata

    from kernel_lsp.checker.measure import ceilings as ce
    monkeypatch.setenv("KERNEL_LSP_CEILINGS_DIR", str(tmp_path))
    now = ce._cache_file("NVIDIA H200", "580.1")
    assert ce._cache_file("NVIDIA H200", "580.1") == now and ce._cache_file("NVIDIA H100", "580.1") != now
    import torch
    monkeypatch.setattr(torch, "__version__", "9.9.9")
    other_torch = ce._cache_file("NVIDIA H200", "580.1")
    assert other_torch != now
    monkeypatch.setattr(metadata, "version", lambda p: "12.9.9" if p == "nvidia-cublas-cu12" else "0")
    assert ce._cache_file("NVIDIA H200", "580.1") != other_torch  # another cuBLAS wheel


def test_roofline_impossible_is_judged_on_the_slow_end_of_the_interval():
    fast_median = roofline(MB512, "x", None, "none", 110.0, "float32", H200)
    assert impossible(fast_median, 110.0, "float32", H200) is not None
    assert impossible(fast_median, 140.0, "float32", H200) is None  # the interval reaches a possible time


def test_roofline_bandwidth_is_not_judged_hot_or_in_l2():
    cheat = roofline(MB512, "x", None, "none", 20.0, "float32", H200)
    assert impossible(cheat, 20.0, "float32", H200, cache="hot") is None
    small = roofline(8 << 20, "x", None, "none", 0.5, "float32", H200)
    assert impossible(small, 0.5, "float32", H200) is None


def test_roofline_fp32_compute_is_judged_against_tf32_the_fastest_plausible():
    n = 8192
    flops = 2.0 * n ** 3
    tf32_speed_us = flops / 300e12 * 1e6  # 300 TFLOP/s: above fp32's 50, possible with tf32
    r = roofline(3 * n * n * 4, "x", flops, "counted", tf32_speed_us, "float32", H200)
    assert r.percent > 100 and impossible(r, tf32_speed_us, "float32", H200) is None
    cheat_us = flops / 2000e12 * 1e6
    reason = impossible(roofline(3 * n * n * 4, "x", flops, "counted", cheat_us, "float32", H200), cheat_us,
                        "float32", H200)
    assert reason and "matmul tf32" in reason


def test_roofline_minimal_bytes_counts_inputs_parameters_and_outputs_once():
    lin = torch.nn.Linear(16, 8)
    x = torch.randn(4, 16)
    y = lin(x)
    assert minimal_bytes([x, x], y, lin) == (4 * 16 + 16 * 8 + 8 + 4 * 8) * 4  # x counted once


def test_roofline_flops_are_counted_for_matmuls_and_not_for_elementwise():
    a, b = torch.randn(32, 64), torch.randn(64, 16)
    assert count_flops(torch.matmul, [a, b]) == 2 * 32 * 64 * 16
    assert count_flops(torch.relu, [a]) is None


def test_roofline_declared_work_is_a_number_or_a_reference_function():
    class Module:
        @staticmethod
        def flops():
            return 1234

    assert resolve_declared("5e8", Module) == 5e8 and resolve_declared(7, Module) == 7.0
    assert resolve_declared("flops", Module) == 1234.0 and resolve_declared(None, Module) is None
    with pytest.raises(ValueError, match="neither a number nor a function"):
        resolve_declared("nope", Module)


def test_roofline_declared_bytes_are_never_below_the_outputs_bytes():
    """`bytes=` declares the least traffic of a kernel that legitimately reads less than all of its inputs (a causal
    mask); it can lower the count to the outputs' bytes, never below: every output element is written once, so a
    declaration cannot switch the impossible-speed rule off."""
    from types import SimpleNamespace

    import torch

    from kernel_lsp.checker.measure.report import _reference_work
    x = torch.randn(64, 64)
    ref = torch.nn.Softmax(dim=-1)
    out = ref(x)
    for declared, expected in ((1, 64 * 64 * 4), (3 * 64 * 64 * 2, 3 * 64 * 64 * 2)):
        nbytes, source, *_ = _reference_work(SimpleNamespace(bytes=declared, flops=None), None, ref, [x], out)
        assert (nbytes, source) == (expected, "declared")
