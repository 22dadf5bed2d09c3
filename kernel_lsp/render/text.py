"""Text output like ruff's: `path:line:col: CODE message`, 1-based, then a summary line."""

from __future__ import annotations

from ..model import FileReport, Proposal, Severity


def file_lines(report: FileReport, cwd: str | None = None) -> list[str]:
    """One file's findings, ruff-like: `path:line:col: CODE [severity] message` (1-based)."""
    import os
    path = os.path.relpath(report.path, cwd) if cwd else report.path
    return [f"{path}:{f.span.line + 1}:{f.span.col + 1}: {f.code} [{f.severity.label}] {f.message}"
            for f in report.findings]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def coverage(reports: list[FileReport]) -> dict[str, int]:
    """What was and was not checked: files, kernels (helpers aside), verified, without a reference, not verified."""
    kernels = verified = unlinked = 0
    for r in reports:
        no_reference = any(f.code in ("KL004", "KL002", "KL003") for f in r.findings)
        for k in r.kernels.values():
            if k.helper:
                continue
            kernels += 1
            if k.verification is not None:
                verified += 1
            elif no_reference:
                unlinked += 1
    return {"files": len(reports), "kernels": kernels, "verified": verified, "unlinked": unlinked,
            "unverified": kernels - verified - unlinked}


def summary_lines(reports: list[FileReport]) -> list[str]:
    """The closing lines: the performance note (when no GPU ran anything) and the summary."""
    counts = {s: 0 for s in Severity}
    for r in reports:
        for f in r.findings:
            counts[f.severity] += 1
    c = coverage(reports)
    cached = sum(1 for r in reports if r.cached)
    scope = f"{_plural(c['files'], 'file')}, {_plural(c['kernels'], 'kernel')}"
    parts = [f"{c['verified']} verified"]
    if c["unlinked"]:
        parts.append(f"{c['unlinked']} without a usable reference")
    if c["unverified"]:
        parts.append(f"{c['unverified']} not verified")
    retried = sum(1 for r in reports if r.stats.get("retried"))  # its Ray worker, actor or node was lost mid-job
    origin = f"{cached} from cache" + (f", {retried} retried after a lost worker" if retried else "")
    problems = counts[Severity.ERROR] + counts[Severity.WARNING]
    summary = (f"Checked {scope} ({', '.join(parts)}; {origin}): "
               f"{_plural(counts[Severity.ERROR], 'error')}, {_plural(counts[Severity.WARNING], 'warning')}, "
               f"{counts[Severity.INFO] + counts[Severity.HINT]} advice")
    if not problems and c["kernels"] and not c["unlinked"] and not c["unverified"]:
        summary += ". All checks passed!"
    elif not problems and c["kernels"]:
        summary += ". No problems found in what was verified."
    out = []
    note = performance_note(reports)
    if note:
        out.append(f"Performance: {note}")
    out.append(summary)
    return out


def render_text(reports: list[FileReport], cwd: str | None = None) -> str:
    lines = [line for r in reports for line in file_lines(r, cwd)] + summary_lines(reports)
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


def timing_lines(report: FileReport, cwd: str | None = None) -> list[str]:
    """Where one file's time went (`check --timings`): the worker's start when one had to start (and its own
    account: imports, CUDA), each stage of the job in order, and the just-in-time compiles inside them."""
    import os
    s = report.stats
    path = os.path.relpath(report.path, cwd) if cwd else report.path
    if report.cached:
        return [f"{path}: from kernel-lsp's cache"]
    timeline, job = s.get("timeline") or [], s.get("seconds")
    if job is None:
        return [f"{path}: no worker ran (discovery and linking only)"]
    start = s.get("worker_start_s")
    out = [f"{path}: {job + (start or 0):.2f} s"]
    if start is not None:
        parts = ", ".join(f"{k} {v:.2f}" for k, v in (s.get("worker_startup") or {}).items())
        out.append(f"  {start:7.2f} s  worker start" + (f" ({parts})" if parts else ""))
    for i, (at, stage, detail) in enumerate(timeline):
        end = timeline[i + 1][0] if i + 1 < len(timeline) else job
        out.append(f"  {max(0.0, end - at):7.2f} s  {stage}" + (f": {detail}" if detail else ""))
    if s.get("jit_compiles"):
        out.append(f"  Triton just-in-time compiles (inside the stages above): {int(s['jit_compiles'])}, "
                   f"{s.get('jit_seconds', 0):.2f} s summed over them (compiles that ran in parallel overlap)")
    return out
