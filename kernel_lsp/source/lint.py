"""What a file's text alone tells beyond its kernels and its link: a `# kernel-lsp` comment kernel-lsp cannot read
(KL009), and a file that links a PyTorch reference but defines no Triton kernel (a PyTorch fallback, KL205).

`check.check_file` leaves both out; the front ends add them to its report with `lint_report`, the CLI to every file
it checks (named directly or found in a folder, so the two agree) and the language server to every version of a
document. Both are cheap: a file that mentions no `lsp` is not tokenized, and only a file without kernels is linked
here. Parent side: reads text, never imports the user's code.
"""

from __future__ import annotations

import difflib
import io
import re
import tokenize
from pathlib import Path

from ..codes import severity_of
from ..model import FileReport, Finding, Span
from .discover import discover_source
from .link import IGNORE_RE, ignored_codes, link_file

SOURCE = "kernel-lsp.link"  # published with the link's findings (the language server's at-once stage)
KEYS = ("entry", "reference", "inputs", "flops", "bytes")  # what a pragma line may set (docs/linking.md)
# A comment that means kernel-lsp: `# kernel-lsp`, `#kernel_lsp`, `# Kernel-LSP` ...
_MENTION = re.compile(r"#\s*(?P<name>kernel[-_ ]?lsp)\b(?P<rest>.*)$", re.I)
_WORD_KV = re.compile(r"(?P<key>[A-Za-z_]+)\s*=")


def lint_report(report: FileReport, source: str | None, cli_reference: Path | None = None, root: Path | None = None,
                mapping: dict[str, str] | None = None, apply_ignores: bool = True) -> FileReport:
    """`report` with the findings of this module added (those an ignore pragma suppresses left out, unless
    `apply_ignores` is off, as for the batch API's items), sorted as check_file sorts them. `source` is the text the
    report describes (None: unreadable, nothing to add)."""
    if source is None:
        return report
    path = Path(report.path)
    found = malformed_pragmas(path, source)
    if not report.kernels and not any(f.code == "KL001" for f in report.findings):
        found += fallback(path, source, cli_reference, root, mapping)
    if not found:
        return report
    ignores = ignored_codes(source) if apply_ignores else {}
    report.findings += [f for f in found if f.code not in ignores.get(f.span.line, set())]
    report.findings.sort(key=Finding.sort_key)
    return report


def _comments(source: str) -> list[tuple[int, int, str]]:
    """(0-based line, column, text) of every comment; by lines starting with `#` where the file does not tokenize."""
    try:
        return [(t.start[0] - 1, t.start[1], t.string) for t in tokenize.generate_tokens(io.StringIO(source).readline)
                if t.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError):
        return [(i, len(line) - len(line.lstrip()), line.strip()) for i, line in enumerate(source.splitlines())
                if line.lstrip().startswith("#")]


def malformed_pragmas(path: Path, source: str) -> list[Finding]:
    """KL009 on each `# kernel-lsp` comment that looks like a pragma but is not read as one: no colon after
    `kernel-lsp` (or another spelling of it), `key = value` with spaces, an unknown key, a malformed ignore[...].
    Each message shows the form that is read. Prose that mentions kernel-lsp (no `=`, no `ignore`) is left alone."""
    if "lsp" not in source.lower():
        return []
    out = []
    for line, col, text in _comments(source):
        m = _MENTION.match(text)
        if not m:
            continue
        rest = m["rest"]
        looks_like_pragma = bool(_WORD_KV.search(rest)) or re.match(r"\s*:?\s*ignore\b", rest) is not None
        if not looks_like_pragma:
            continue
        right, why = _right_form(m["name"], rest)
        if right is None:
            continue
        span = Span(line, col, line, col + len(text))
        out.append(Finding(str(path), span, severity_of("KL009"), "KL009",
                           f"this comment is not read as a pragma: write `{right}`; {why}",
                           source=SOURCE, data={"replacement": right}))
    return out


def _right_form(name: str, rest: str) -> tuple[str | None, str]:
    """The pragma the comment means and why it is not read as written; (None, "") when it is read as written."""
    body = re.sub(r"^\s*:?\s*", "", rest).rstrip()
    problems = []
    if name != "kernel-lsp" or not rest.startswith(":"):
        problems.append("a pragma begins `# kernel-lsp:`, with the colon right after kernel-lsp")
    if re.match(r"ignore\b", body):
        if IGNORE_RE.search("# kernel-lsp: " + body) is None:
            problems.append("an ignore lists codes in brackets, such as ignore[KL200, KL104]")
            body = _ignore_form(body)
    else:
        spaced = re.sub(r"\b([A-Za-z_]+)\s*=\s*", r"\1=", body)
        if spaced != body:
            problems.append("no spaces around =")
            body = spaced
        for key in re.findall(r"\b([A-Za-z_]+)=", body):
            if key not in KEYS:
                close = difflib.get_close_matches(key.lower(), KEYS, n=1, cutoff=0.6)
                problems.append(f"unknown key {key!r}" + (f", did you mean {close[0]}?" if close else
                                                          f" (keys: {', '.join(KEYS)})"))
                if close:
                    body = re.sub(rf"\b{re.escape(key)}=", f"{close[0]}=", body)
    if not problems:
        return None, ""
    return f"# kernel-lsp: {body}", "; ".join(problems)


def _ignore_form(body: str) -> str:
    """`ignore KL200,KL104` or `ignore(KL200)` as `ignore[KL200, KL104]`."""
    codes = re.findall(r"KL\d{3}", body, re.I)
    return f"ignore[{', '.join(c.upper() for c in codes)}]" if codes else "ignore[KL200]"


def fallback(path: Path, source: str, cli_reference: Path | None = None, root: Path | None = None,
             mapping: dict[str, str] | None = None) -> list[Finding]:
    """KL205 for a file that links a reference (a pragma, a `[tool.kernel-lsp.references]` glob, --reference, or
    KernelBench's names) and defines no Triton kernel: whatever it computes, it is PyTorch's, never a kernel that was
    verified. Files that link nothing (a reference, a helper module) are left alone."""
    if not may_link(source):
        return []
    found = discover_source(source, str(path))
    if found.syntax_error is not None or found.kernels:
        return []
    linked = link_file(path, source, cli_reference=cli_reference, root=root, mapping=mapping)
    if linked.link is None:
        return []
    link = linked.link
    anchor = link.anchor if link.origin == "pragma" else _definition(source, link.entry) or link.anchor
    what = link.entry if link.kind == "native" else "ModelNew"
    return [Finding(str(path), anchor, severity_of("KL205"), "KL205",
                    "PyTorch fallback: links a reference but defines no Triton kernel, so nothing is verified; "
                    f"define the @triton.jit kernel that {what} launches in this file (a kernel imported from "
                    "another module is not followed)", source=SOURCE, data={"fallback": True})]


def may_link(source: str) -> bool:
    """Whether the text could link a reference at all (KernelBench's ModelNew, or a `# kernel-lsp:` line): a cheap
    test before anything is parsed."""
    return "ModelNew" in source or "kernel-lsp:" in source


def _definition(source: str, name: str) -> Span | None:
    m = re.search(rf"^([ \t]*)(?:async\s+)?(?:def|class)\s+{re.escape(name)}\b", source, re.M)
    if not m:
        return None
    line = source.count("\n", 0, m.start())
    return Span(line, len(m.group(1)), line, len(m.group(0)))
