"""Conversions between engine types and LSP types. Both sides are 0-based for lines and characters."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

from lsprotocol import types

from ..config import mask_secrets
from ..model import Finding
from ..render.text import group_findings, lead_finding, problem_message


def lsp_range(f: Finding) -> types.Range:
    s = f.span.to_dict()
    return types.Range(types.Position(s["line"], s["col"]), types.Position(s["end_line"], s["end_col"]))


def lsp_diagnostic(f: Finding) -> types.Diagnostic:
    """An engine finding as an LSP diagnostic; `data` carries the evidence a code action needs."""
    return types.Diagnostic(
        range=lsp_range(f),
        message=mask_secrets(f.message),
        severity=types.DiagnosticSeverity(int(f.severity)),
        code=f.code,
        source=f.source,
        code_description=types.CodeDescription(
            href=f"https://github.com/kernel-lsp/kernel-lsp/blob/main/docs/diagnostics.md#{f.code.lower()}"),
        data={"code": f.code, **{k: v for k, v in f.data.items() if isinstance(v, (str, int, float, bool, list))}},
    )


def lsp_diagnostics(findings: list[Finding]) -> list[types.Diagnostic]:
    """One diagnostic per problem (a code at a line), as the CLI's text shows one lead line: the verifier keeps a
    value, a layout and a size failure at one store as separate findings, which an editor would stack as
    near-identical squiggles. The lead finding speaks for the group, its `also on:` naming every variant."""
    out = []
    for group in group_findings(findings):
        d = lsp_diagnostic(lead_finding(group))
        if len(group) > 1:
            d.message = mask_secrets(problem_message(group))
            variants = [v for f in group for v in (f.data.get("variants") or [f.data.get("variant")]) if v]
            if variants:
                d.data["variants"] = list(dict.fromkeys(variants))
            d.data["findings"] = len(group)
        out.append(d)
    return out


def path_of(uri: str) -> Path:
    parsed = urlparse(uri)
    return Path(unquote(parsed.path))


def uri_of(path: Path) -> str:
    return path.resolve().as_uri()
