"""Hover and code actions, computed from what the last check of a document learned (no engine run here)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from lsprotocol import types

from ..source.discover import discover_source
from ..source.link import KERNELBENCH_NAMES, IGNORE_RE
from ..model import KernelFacts, split_lines, us
from ..verdict import fixable, optimizable, performance
from .scheduler import Document

VERIFY_NOW = "kernel-lsp.verifyNow"


def kernel_at(doc: Document, line: int, character: int) -> str | None:
    """The kernel whose name (at its def) or launch site covers the position."""
    found = discover_source(doc.text)
    for k in found.kernels:
        s = k.name_span
        if s.line == line and s.col <= character <= (s.end_col or s.col):
            return k.name
        for launch in k.launches:
            ls = launch.span
            if ls.line <= line <= (ls.end_line or ls.line):
                return k.name
    return None


def _fmt(x) -> str:
    return "-" if x is None else (f"{x:.3g}" if isinstance(x, float) else str(x))


def _ci(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"{_us(low)} - {_us(high)}"


def hover_markdown(doc: Document, kernel: str, chart: Path | None = None) -> str:
    facts = (doc.report.kernels.get(kernel) if doc.report else None) or KernelFacts()
    lines = [f"**{kernel}**"]
    compiled = facts.compile
    if compiled:
        lines += ["", "| target | config | registers | spills (B) | shared (KiB) |", "| --- | --- | --- | --- | --- |"]
        for c in compiled:
            lines.append(f"| {c.target} | {c.config} | {_fmt(c.registers)} | {_fmt(c.spill_bytes)} "
                         f"| {c.shared / 1024:.1f} |")
    ver = facts.verification
    if ver:
        lines += ["", verification_headline(ver) + (f", CPU sizes {ver.cpu_sizes}" if ver.cpu_sizes else ""),
                  "", "| variant | inputs | verdict | max error | PyTorch's error |", "| --- | --- | --- | --- | --- |"]
        for r in ver.variants:
            lines.append(f"| {r.variant} | {r.inputs} | {r.verdict} | {_fmt(r.max_abs)} | {_fmt(r.ref_max_abs)} |")
        if ver.skipped:
            lines.append("")
            skipped: dict[str, str] = {}  # a variant named once, with its first reason
            for row in ver.skipped:
                skipped.setdefault(row.variant, row.reason)
            lines.append("Skipped: " + "; ".join(f"{v} ({why})" for v, why in skipped.items()))
    if not compiled and not ver:
        lines += ["", "Not checked yet (or not linked to a reference)." if not doc.restricted else
                  "Restricted Mode: this workspace is not trusted, so kernel-lsp only parses it (nothing is "
                  "imported, compiled or run) until you trust it."]
    lines += [""] + performance_markdown(doc, kernel, chart)
    return "\n".join(lines)


def verification_headline(ver) -> str:
    """What verification concluded, in words: "Verified" only when every input variant it judged passed."""
    judged = [r for r in ver.variants if r.verdict != "cpu-limit"]
    failed = [r for r in judged if r.verdict != "ok"]
    if not judged:
        return f"Not verified on {ver.device}: no input variant could be judged"
    if not failed:
        return f"Verified on {ver.device}"
    if len(failed) == len(judged):
        return f"Failed verification on {ver.device}: every input variant ({len(judged)}) failed"
    return f"Failed verification on {ver.device}: {len(failed)} of {len(judged)} input variants failed"


def _us(x: float | None) -> str:
    return "-" if x is None else us(x)


def performance_markdown(doc: Document, kernel: str, chart: Path | None = None) -> list[str]:
    """The measurement table, only from a report of the text as it is now: never a number from an older version."""
    current = doc.current_report()
    facts = current.kernels.get(kernel) if current else None
    if facts is None:
        return ["**Performance**: not measured for this version of the file yet."]
    m = facts.measurement
    if m is None:
        return [f"**Performance**: {facts.performance_note or 'not measured'}."]
    p = m.provenance
    clock = f", SM {p.sm_clock_mhz} MHz" if p.sm_clock_mhz else ""
    wall = p.verdict_time == "wall"
    out = [f"**Performance**: {m.summary}", "",
           "| side | back to back | 95% CI | GPU time | 95% CI | host issue | CUDA graph | note |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for side in m.sides:
        note = ""
        if side.compile_seconds is not None:
            note = f"compile {side.compile_seconds:.2f} s" + (" (cached)" if side.cached_compile else "") + ", excluded"
        gpu = (side.gpu_us, side.gpu_low_us, side.gpu_high_us) if side.gpu_us is not None else \
            (side.median_us, side.low_us, side.high_us)
        out.append(f"| {side.side} | {_us(side.wall_us)} | {_ci(side.wall_low_us, side.wall_high_us)} | "
                   f"{_us(gpu[0])} | {_ci(gpu[1], gpu[2])} | {_us(side.host_us)} | {_us(side.graph_us)} | {note} |")
    out.append("")
    out.append(f"Speedup ({'back to back' if wall else 'GPU time'}): "
               + "; ".join(f"{s.ratio:.2f}x over {s.against} (95% CI {s.low:.2f}-{s.high:.2f})" for s in m.speedups))
    if m.disturbed:
        out.append(f"Timing disturbed by another process: {m.disturbed}")
    r = m.roofline
    if r is not None:
        rates = f"{r.gbps:.0f} GB/s" + (f", {r.tflops:.1f} TFLOP/s" if r.tflops else "")
        out.append("")
        out.append(f"Roofline: {rates}; {r.bound}-bound, {r.percent:.0f}% of {r.ceiling} "
                   f"({r.ceiling_value:.0f} {'GB/s' if r.ceiling == 'copy' else 'TFLOP/s'}, floor {_us(r.floor_us)})"
                   f"; {r.bytes / 1e6:.1f} MB ({r.bytes_source}), "
                   + (f"{r.flops / 1e9:.3g} GFLOP ({r.flops_source})" if r.flops else "no FLOPs counted")
                   + ("; the data fits in L2" if r.l2_resident else ""))
    out += ["", f"Measured on {p.gpu}{clock}, driver {p.driver}, torch {p.torch}, triton {p.triton}; {p.cache} L2, "
                f"{p.timer}{', CUDA graphs' if p.graph else ''}; {p.date}"]
    if chart is not None:
        out += ["", f"[Roofline chart]({chart.resolve().as_uri()})"]
    return out


def code_lenses(doc: Document) -> list[types.CodeLens]:
    """The one-line performance summary on each measured kernel's launch lines, for the current text only."""
    current = doc.current_report()
    if current is None:
        return []
    lenses = []
    for k in discover_source(doc.text).kernels:
        facts = current.kernels.get(k.name)
        if facts is None or facts.measurement is None:
            continue
        for launch in k.launches:
            line = launch.span.line
            lenses.append(types.CodeLens(
                range=types.Range(types.Position(line, 0), types.Position(line, 0)),
                command=types.Command(title=f"kernel-lsp: {facts.measurement.summary}", command=VERIFY_NOW,
                                      arguments=[doc.uri])))
    return lenses


def _ignore_edit(doc: Document, line: int, code: str) -> types.TextEdit:
    lines = split_lines(doc.text)
    text = lines[line] if line < len(lines) else ""
    m = IGNORE_RE.search(text)
    if m:
        codes = sorted({c.strip() for c in m["codes"].split(",") if c.strip()} | {code})
        start, end = m.span()
        return types.TextEdit(types.Range(types.Position(line, start), types.Position(line, end)),
                              f"# kernel-lsp: ignore[{', '.join(codes)}]")
    end = len(text.rstrip())
    return types.TextEdit(types.Range(types.Position(line, end), types.Position(line, len(text))),
                          f"  # kernel-lsp: ignore[{code}]")


def reference_candidates(path: Path, limit: int = 5) -> list[Path]:
    """KernelBench problem files near the implementation: its folder, its parent, and their subfolders."""
    seen, out = set(), []
    roots = [path.parent, path.parent.parent]
    for root in roots:
        for p in sorted(root.glob("*.py")) + sorted(root.glob("*/*.py")):
            if p == path or p in seen or len(out) >= limit:
                continue
            seen.add(p)
            try:
                text = p.read_text(encoding="utf-8")
                if not all(re.search(rf"^(def|class) {n}\b", text, re.M) for n in KERNELBENCH_NAMES):
                    continue
                ast.parse(text)
            except (OSError, UnicodeDecodeError, SyntaxError):
                continue
            out.append(p)
    return out


def proposal_actions(doc: Document, params: types.CodeActionParams, llm_configured: bool,
                     can_time: bool = True) -> list[types.CodeAction]:
    """Fix with LLM on compile and verification problems; optimize and tune on performance findings and on any
    verified kernel, only where a kernel can be timed (`can_time`: a GPU here, a runner or a cluster; elsewhere they
    could never accept anything). The heavy work runs when chosen (a command), and only a verified result is
    offered."""
    from .proposals import PROPOSE, TITLES
    ours = [d for d in params.context.diagnostics if (d.source or "").startswith("kernel-lsp") and d.code]
    problems = [d for d in ours if fixable(str(d.code)) and
                d.severity in (types.DiagnosticSeverity.Error, types.DiagnosticSeverity.Warning)]
    perf = [d for d in ours if performance(str(d.code))]
    kernel = kernel_at(doc, params.range.start.line, params.range.start.character)
    current = doc.current_report()
    verified = current is not None and optimizable(current)
    no_llm = types.CodeActionDisabled("set [tool.kernel-lsp.llm] endpoint and model (docs/code-actions.md)")
    out = []

    def action(mode: str, kind: str, diagnostics, disabled=None) -> types.CodeAction:
        return types.CodeAction(title=TITLES[mode], kind=kind, diagnostics=diagnostics or None, disabled=disabled,
                                command=types.Command(title=TITLES[mode], command=PROPOSE,
                                                      arguments=[doc.uri, doc.version, mode, kernel]))

    if problems:
        out.append(action("fix", types.CodeActionKind.QuickFix, problems, None if llm_configured else no_llm))
    if (perf or verified) and can_time:
        out.append(action("optimize", types.CodeActionKind.RefactorRewrite, perf, None if llm_configured else no_llm))
        out.append(action("tune", types.CodeActionKind.RefactorRewrite, perf))
    return out


def code_actions(doc: Document, params: types.CodeActionParams) -> list[types.CodeAction]:
    actions: list[types.CodeAction] = []
    for d in params.context.diagnostics:
        if not (d.source or "").startswith("kernel-lsp") or not d.code:
            continue
        code = str(d.code)
        if code == "KL004":
            for cand in reference_candidates(doc.path):
                rel = Path(_relpath(cand, doc.path.parent)).as_posix()
                edit = types.TextEdit(types.Range(types.Position(0, 0), types.Position(0, 0)),
                                      f"# kernel-lsp: reference={rel}\n")
                actions.append(types.CodeAction(
                    title=f"Link a PyTorch reference: {rel}", kind=types.CodeActionKind.QuickFix, diagnostics=[d],
                    edit=types.WorkspaceEdit(changes={doc.uri: [edit]})))
            continue
        actions.append(types.CodeAction(
            title=f"Ignore {code} on this line", kind=types.CodeActionKind.QuickFix, diagnostics=[d],
            edit=types.WorkspaceEdit(changes={doc.uri: [_ignore_edit(doc, d.range.start.line, code)]})))
    ours = [d for d in params.context.diagnostics if (d.source or "").startswith("kernel-lsp")]
    # On a kernel-lsp diagnostic it is a quick fix (the light bulb shows it); elsewhere a source action.
    actions.append(types.CodeAction(title="Verify again now",
                                    kind=types.CodeActionKind.QuickFix if ours else types.CodeActionKind.Source,
                                    diagnostics=ours or None,
                                    command=types.Command(title="Verify again now", command=VERIFY_NOW, arguments=[doc.uri])))
    return actions


def _relpath(target: Path, start: Path) -> str:
    import os
    return os.path.relpath(target, start)
