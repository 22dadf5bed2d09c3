"""`kernel-lsp check --report DIR`: a roofline chart per measured file (PNG) and an index page linking them.

Needs matplotlib (`pip install matplotlib`, or the `report` extra); it is imported only here. A chart shows the
device's measured ceilings and, for each side (the Triton implementation and each baseline it is timed against), one
point: with counted or declared FLOPs, the classic roofline (achieved TFLOP/s against FLOPs per byte, the copy
bandwidth as the slanted roof and each matmul rate as a flat one); without FLOPs, achieved bandwidth against the
copy ceiling. Files without a measurement get a line in the index saying why, never a number.
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

from ..model import FileReport, Measurement

IMPLEMENTATION_COLOR = "#d62728"
# the other sides (the baselines, the current version) in the order the measurement lists them
PALETTE = ("#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")


def side_colors(m: Measurement) -> dict[str, str]:
    """A colour per side of the measurement: the implementation's ("triton") always red, the others from PALETTE in
    the measurement's order, so a newly registered baseline gets a colour of its own without a change here."""
    others = iter(PALETTE * (1 + len(m.sides) // len(PALETTE)))
    return {side.side: IMPLEMENTATION_COLOR if side.side == "triton" else next(others) for side in m.sides}


class ReportError(Exception):
    """The report cannot be written (matplotlib missing, a directory that cannot be made)."""


def chart_name(path: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(path).as_posix().strip("/")) + ".png"


def measurement_of(report: FileReport) -> Measurement | None:
    return next((k.measurement for k in report.kernels.values() if k.measurement is not None), None)


def ceiling_labels(ceilings: list[tuple[str, float]], apart: float = 1.3) -> list[tuple[float, str]]:
    """One label per group of flat ceilings whose values lie within a factor `apart` of each other (on a log axis
    their labels would print over one another: an H200's bf16 and fp16 matmul rates are within 1%), each at the
    group's highest value: [(value, "matmul bf16 790, matmul fp16 795 TFLOP/s")]."""
    out: list[tuple[float, str]] = []
    group: list[tuple[str, float]] = []
    for name, value in sorted(ceilings, key=lambda c: c[1]) + [("", float("inf"))]:
        if group and value > group[0][1] * apart:
            out.append((group[-1][1], ", ".join(f"{n} {v:.0f}" for n, v in group) + " TFLOP/s"))
            group = []
        group.append((name, value))
    return out


def roofline_chart(m: Measurement, title: str, out: Path) -> Path:
    """Draw the roofline chart of one measurement to the PNG `out`."""
    fig = roofline_figure(m, title)
    import matplotlib.pyplot as plt
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
    return out


def roofline_figure(m: Measurement, title: str):
    """The chart as a matplotlib figure (the caller saves and closes it)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ReportError("charts need matplotlib: pip install matplotlib") from e
    r = m.roofline
    colors = side_colors(m)
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    copy = m.device.get("copy") if m.device else None
    if r is not None and r.flops:
        intensity = r.flops / r.bytes
        xs = [intensity / 100, intensity * 100]
        if copy is not None:
            ax.plot(xs, [x * copy.value / 1e3 for x in xs], color="gray", lw=1,
                    label=f"copy {copy.value:.0f} GB/s")
        flat = [(c.name, c.value) for c in (m.device.ceilings if m.device else []) if c.name.startswith("matmul")]
        for _, value in flat:
            ax.axhline(value, color="gray", lw=0.8, ls="--")
        for value, label in ceiling_labels(flat):
            ax.text(xs[0], value * 1.05, label, fontsize=7, color="gray")
        for side in m.sides:
            ax.scatter([intensity], [r.flops / (side.median_us * 1e-6) / 1e12], color=colors[side.side],
                       label=f"{side.side} {side.median_us:.1f} us", zorder=3)
        ax.set_xscale("log")
        ax.set_yscale("log")
        rates = [r.flops / (side.median_us * 1e-6) / 1e12 for side in m.sides]
        tops = [c.value for c in (m.device.ceilings if m.device else []) if c.name.startswith("matmul")] + rates
        ax.set_ylim(min(rates) / 5, max(tops) * 2)
        ax.set_xlabel("FLOPs per byte (reference's minimal traffic)")
        ax.set_ylabel("achieved TFLOP/s")
    elif r is not None:
        for side in m.sides:
            ax.bar(side.side, r.bytes / (side.median_us * 1e-6) / 1e9, color=colors[side.side],
                   label=f"{side.side} {side.median_us:.1f} us")
        if copy is not None:
            ax.axhline(copy.value, color="gray", ls="--", lw=1, label=f"copy {copy.value:.0f} GB/s")
        ax.set_ylabel("achieved GB/s (reference's minimal traffic)")
    ax.set_title(f"{title}\n{m.summary}", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    p = m.provenance
    fig.text(0.01, 0.01, f"{p.gpu}, driver {p.driver}, torch {p.torch}, triton {p.triton}, {p.cache} L2, {p.date}",
             fontsize=6, color="gray")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig


def write_report(reports: list[FileReport], directory: Path, root: str | None = None) -> Path:
    """Charts for measured files and index.html; returns the index's path."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ReportError(f"cannot create {directory}: {e.strerror or e}") from e
    rows = []
    for report in reports:
        name = os.path.relpath(report.path, root) if root else report.path
        m = measurement_of(report)
        if m is None:
            note = next((k.performance_note for k in report.kernels.values() if k.performance_note), None)
            rows.append(f"<tr><td>{html.escape(name)}</td><td>{html.escape(note or 'not measured')}</td><td></td></tr>")
            continue
        png = roofline_chart(m, name, directory / chart_name(name))
        rows.append(f"<tr><td>{html.escape(name)}</td><td>{html.escape(m.summary)}</td>"
                    f"<td><a href=\"{png.name}\"><img src=\"{png.name}\" width=\"360\"></a></td></tr>")
    index = directory / "index.html"
    index.write_text("<!doctype html><meta charset=\"utf-8\"><title>kernel-lsp performance</title>"
                     "<style>body{font-family:sans-serif}td{vertical-align:top;padding:4px 10px}</style>"
                     "<h1>kernel-lsp: performance against PyTorch</h1><table><tr><th>file</th><th>summary</th>"
                     "<th>roofline</th></tr>" + "".join(rows) + "</table>\n", encoding="utf-8")
    return index
