"""Text output like ruff's: `path:line:col: CODE message`, 1-based, then a summary line."""

from __future__ import annotations

from ..model import FileReport, Severity


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
