"""Text output like ruff's: `path:line:col: CODE message`, 1-based, then a summary line."""

from __future__ import annotations

from ..model import FileReport, Proposal, Severity


def render_text(reports: list[FileReport], cwd: str | None = None) -> str:
    import os
    lines = []
    counts = {s: 0 for s in Severity}
    for r in reports:
        path = os.path.relpath(r.path, cwd) if cwd else r.path
        for f in r.findings:
            counts[f.severity] += 1
            lines.append(f"{path}:{f.span.line + 1}:{f.span.col + 1}: {f.code} [{f.severity.label}] {f.message}")
    files = len(reports)
    cached = sum(1 for r in reports if r.cached)
    problems = counts[Severity.ERROR] + counts[Severity.WARNING]
    summary = (f"Checked {files} file{'s' if files != 1 else ''} ({cached} from cache): "
               f"{counts[Severity.ERROR]} error{'s' if counts[Severity.ERROR] != 1 else ''}, "
               f"{counts[Severity.WARNING]} warning{'s' if counts[Severity.WARNING] != 1 else ''}, "
               f"{counts[Severity.INFO] + counts[Severity.HINT]} advice")
    if not problems:
        summary += ". All checks passed!"
    note = performance_note(reports)
    if note:
        lines.append(f"Performance: {note}")
    lines.append(summary)
    return "\n".join(lines) + "\n"


def performance_note(reports: list[FileReport]) -> str | None:
    """One line for a run in which nothing could be timed because no GPU ran the kernels; never a number."""
    kernels = [k for r in reports for k in r.kernels.values()]
    if any(k.measurement for k in kernels):
        return None
    return next((k.performance_note for k in kernels
                 if k.performance_note and k.performance_note.startswith("not measured: no GPU")), None)


def render_proposal(p: Proposal) -> str:
    """A proposal as `kernel-lsp optimize` prints it: the verdict, the diff, and the evidence behind it."""
    lines = [f"{p.mode}: {'accepted' if p.accepted else 'nothing accepted'}: {p.summary}"]
    if p.diff:
        lines += ["", p.diff.rstrip("\n"), ""]
    if p.before is not None or p.after is not None:
        for label, m in (("before", p.before), ("after", p.after)):
            if m is not None:
                lines.append(f"{label}: {m.summary}")
    if p.variants:
        ok = sum(1 for v in p.variants if v.verdict == "ok")
        lines.append(f"verification of the accepted version: {ok} of {len(p.variants)} input variants pass "
                     f"({', '.join(v.variant for v in p.variants)})")
    if p.candidates:
        lines.append(f"candidates ({len(p.candidates)}):")
        for c in p.candidates:
            time = f", {c.median_us:.1f} us" if c.median_us is not None else ""
            race = (f", {c.speedup.ratio:.2f}x current (95% CI {c.speedup.low:.2f}-{c.speedup.high:.2f})"
                    if c.speedup else "")
            lines.append(f"  {c.origin}: {c.verdict}{time}{race}" + (f": {c.reason}" if c.reason else ""))
    for note in p.notes:
        lines.append(f"note: {note}")
    lines.append(f"{p.tokens} tokens, {p.seconds:.1f} s")
    return "\n".join(lines) + "\n"
