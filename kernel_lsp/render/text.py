"""Text output like ruff's: a short `path:line:col: CODE [severity] headline` (1-based) per problem, its details
indented below it, then a summary line.

A problem is one code at one line: the verifier keeps a value failure, a layout failure and a size failure at one
store as separate findings (JSON and the editor show each), but a reader sees one lead line, the first finding's
details, and `also on:` with every other input variant the code failed on there. The lead line stays near
LEAD_WIDTH characters (what is wrong, where, how many elements); nothing of a message is dropped, the rest of it
follows on detail lines, whole clauses packed to the same width. Nothing is ever cut inside backticks: code a
message shows (`# kernel-lsp: reference=problem.py`) is printed whole, as the user must type it.
"""

from __future__ import annotations

import re
import textwrap

from ..model import FileReport, Finding, Proposal, Severity
from ..verdict import coverage

LEAD_WIDTH = 120  # the lead line's target width; detail lines are packed to it
MIN_ROOM = 72  # the headline's room however long the path before it
MIN_CLAUSE = 30  # the shortest headline a cut at a clause may leave
_INDENT = "    "
_ALSO_ON = re.compile(r" \(also on: ([^()]*)\)")
# "How big", moved to the front: 1018 of 1024 elements (99.4%) out of budget; 12 of 64 elements disagree on NaN/inf.
_COUNT = re.compile(r"^\d+ of \d+ elements( \([^)]*\))? (out of budget|disagree on NaN/inf)$")
_TRAILING_NOTE = re.compile(r"^(?P<head>.*\S) \((?P<note>[^()]*(\([^()]*\)[^()]*)*)\)$")


def problem_groups(report: FileReport) -> list[list[Finding]]:
    """The report's findings grouped by (line, code), in report order: one problem per group."""
    return group_findings(report.findings)


def group_findings(findings: list[Finding]) -> list[list[Finding]]:
    """Findings grouped by (line, code), in their order: one problem per group (the text output and the editor
    show one each)."""
    groups: dict[tuple[int, str], list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.span.line, f.code), []).append(f)
    return list(groups.values())


def lead_finding(group: list[Finding]) -> Finding:
    """The finding that speaks for its group: the most severe (the first of them, in order)."""
    return min(group, key=lambda f: f.severity)


def other_variants(group: list[Finding]) -> list[str]:
    """Every input variant the group's findings name, once each, but the lead finding's own."""
    own = _variants(lead_finding(group))[:1]
    named = [v for f in group for v in _variants(f) + split_message(f.message)[2]]
    return [v for v in dict.fromkeys(named) if v not in own]


def problem_message(group: list[Finding]) -> str:
    """One message for a group: the lead finding's, its `(also on: ...)` naming every other variant of the group
    once (the editor's one diagnostic per problem, as the text output shows one lead line)."""
    first = lead_finding(group)
    if len(group) == 1:
        return first.message
    others = other_variants(group)
    return _ALSO_ON.sub("", first.message) + (f" (also on: {', '.join(others)})" if others else "")


def split_message(message: str) -> tuple[str, list[str], list[str]]:
    """(headline, detail clauses, variants named in "(also on: ...)"): the headline leads with how many elements
    are wrong when the message counts them, then the first clause without its trailing parenthesis."""
    also = [v.strip() for m in _ALSO_ON.finditer(message) for v in m.group(1).split(",") if v.strip()]
    clauses = [c for c in _clauses(_ALSO_ON.sub("", message)) if c]
    if not clauses:
        return "", [], also
    first, rest = clauses[0], clauses[1:]
    details: list[str] = []
    m = _TRAILING_NOTE.match(first)
    if m and len(first) > 60 and not _in_code(first, len(m["head"])):
        first = m["head"]
        details.append(m["note"])
    at = _find(first, ", e.g. ")
    if at >= 0 and len(first) > 60:
        first, example = first[:at], first[at + len(", e.g. "):]
        details.insert(0, f"e.g. {example}")
    count = next((c for c in rest if _COUNT.match(c)), None)
    if count is not None:
        rest.remove(count)
        first = f"{count}: {first}"
    return first, details + rest, also


def _in_code(text: str, i: int) -> bool:
    """Whether position i of `text` lies inside a backticked span (an odd number of backticks before it)."""
    return text.count("`", 0, i) % 2 == 1


def _find(text: str, mark: str, end: int | None = None) -> int:
    """The first `mark` in text[:end] that does not begin inside backticks, or -1."""
    at = text.find(mark, 0, end)
    while at >= 0 and _in_code(text, at):
        at = text.find(mark, at + 1, end)
    return at


def _rfind(text: str, mark: str, end: int) -> int:
    """The last `mark` in text[:end] that does not begin inside backticks, or -1."""
    at = text.rfind(mark, 0, end)
    while at >= 0 and _in_code(text, at):
        at = text.rfind(mark, 0, at)
    return at


def _clauses(text: str) -> list[str]:
    """The text split at "; " outside parentheses, brackets and backticks (a config list inside them stays whole,
    and so does code)."""
    out, depth, start, code = [], 0, 0, False
    for i, ch in enumerate(text):
        if ch == "`":
            code = not code
        elif code:
            continue
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif depth == 0 and text.startswith("; ", i):
            out.append(text[start:i])
            start = i + 2
    return out + [text[start:]]


def _variants(f: Finding) -> list[str]:
    named = f.data.get("variants") if isinstance(f.data, dict) else None
    if isinstance(named, list) and named:
        return [str(v) for v in named]
    variant = f.data.get("variant") if isinstance(f.data, dict) else None
    return [str(variant)] if variant else []


def _fit(prefix: str, headline: str) -> tuple[str, str]:
    """The headline, cut where a clause or a parenthesis begins so that prefix + headline stays within LEAD_WIDTH
    (at least MIN_ROOM characters of it, however long the path), and the remainder for the detail lines. Words are
    cut (with an ellipsis) only where no such place leaves MIN_CLAUSE characters, and never inside backticks: a cut
    there would print code the user copies (`# kernel-lsp: reference=...`) in two pieces, its colon lost."""
    room = max(MIN_ROOM, LEAD_WIDTH - len(prefix))
    if len(headline) <= room:
        return headline, ""
    for mark, keep in ((": ", 0), (" (", 1), (", ", 0)):
        at = _rfind(headline, mark, room)
        if at >= MIN_CLAUSE:
            return headline[:at], headline[at + len(mark) - keep:]
    cut = _rfind(headline, " ", room - 1)
    cut = cut if cut > room // 2 else room - 1
    if _in_code(headline, cut):  # a long code span: cut before it rather than through it, or not at all
        cut = headline.rfind("`", 0, cut)
        if cut < MIN_CLAUSE:
            return headline, ""
    return headline[:cut].rstrip() + "\u2026", "\u2026" + headline[cut:].lstrip()


def _packed(clauses: list[str]) -> list[str]:
    """Detail lines: whole clauses, joined by "; " while they fit LEAD_WIDTH; a clause is never broken (a search
    for its words finds it), so one longer than the width has a line of its own."""
    lines: list[str] = []
    for clause in clauses:
        if lines and len(lines[-1]) + 2 + len(clause) <= LEAD_WIDTH:
            lines[-1] += "; " + clause
        else:
            lines.append(_INDENT + clause)
    return lines


def _wrapped(text: str) -> list[str]:
    return textwrap.wrap(text, LEAD_WIDTH, initial_indent=_INDENT, subsequent_indent=_INDENT,
                         break_long_words=False, break_on_hyphens=False)


def problem_lines(group: list[Finding], path: str) -> list[str]:
    """One problem: the lead line, then its details and the other variants it was found on."""
    first = lead_finding(group)
    headline, details, _ = split_message(first.message)
    prefix = f"{path}:{first.span.line + 1}:{first.span.col + 1}: {first.code} [{first.severity.label}] "
    shown, overflow = _fit(prefix, headline)
    lines = [prefix + shown] + _packed(([overflow] if overflow else []) + details)
    others = other_variants(group)
    if others:
        note = f" ({len(group)} findings at this line in --format json)" if len(group) > 1 else ""
        lines += _wrapped(f"also on: {', '.join(others)}{note}")
    return lines


def file_lines(report: FileReport, cwd: str | None = None) -> list[str]:
    """One file's problems: each a short lead line `path:line:col: CODE [severity] headline` (1-based) and its
    indented details."""
    import os
    path = os.path.relpath(report.path, cwd) if cwd else report.path
    return [line for group in problem_groups(report) for line in problem_lines(group, path)]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary_lines(reports: list[FileReport]) -> list[str]:
    """The closing lines: the performance note (when no GPU ran anything) and the summary."""
    counts = {s: 0 for s in Severity}
    for r in reports:
        for group in problem_groups(r):  # as the lines show them: one problem per code and line
            counts[min(f.severity for f in group)] += 1
    c = coverage(reports)
    cached = sum(1 for r in reports if r.cached)
    scope = f"{_plural(c['files'], 'file')}, {_plural(c['kernels'], 'kernel')}"
    parts = [f"{c['verified']} verified"]
    if c["failed"]:
        parts.append(f"{c['failed']} failed verification")
    if c["compile_failed"]:
        parts.append(f"{c['compile_failed']} failed to compile")
    if c["unlinked"]:
        parts.append(f"{c['unlinked']} without a usable reference")
    if c["unverified"]:
        parts.append(f"{c['unverified']} not verified")
    # its Ray worker, actor or node was lost mid-job, or it ran out of GPU memory beside other checks (gpu-workers)
    retried = sum(1 for r in reports if r.stats.get("retried"))
    origin = f"{cached} from cache" + (f", {retried} retried" if retried else "")
    problems = counts[Severity.ERROR] + counts[Severity.WARNING]
    # Counted by the labels the lead lines show, so each number can be found among them: information (what was
    # measured, or could not be judged) is not advice; a hint is (docs/diagnostics.md).
    summary = (f"Checked {scope} ({', '.join(parts)}; {origin}): "
               f"{_plural(counts[Severity.ERROR], 'error')}, {_plural(counts[Severity.WARNING], 'warning')}, "
               f"{counts[Severity.INFO]} info, {_plural(counts[Severity.HINT], 'hint')}")
    if not problems and c["kernels"] and not c["unlinked"] and not c["unverified"] and not c["compile_failed"]:
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
                     f"({', '.join(dict.fromkeys(v.variant for v in p.variants))})")
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
