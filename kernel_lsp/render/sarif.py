"""SARIF 2.1.0 output, as GitHub code scanning accepts it: one run, a rule per code, 1-based regions."""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote

from .. import __version__
from ..codes import CODES
from ..model import FileReport, Severity

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note", Severity.HINT: "note"}
HELP_URI = "https://github.com/kernel-lsp/kernel-lsp/blob/main/docs/diagnostics.md"


def _uri(path: str, root: str | None) -> str:
    """A SARIF artifact URI: relative to the root when under it, percent-encoded either way (a space is %20)."""
    if root:
        try:
            return quote(Path(path).resolve().relative_to(Path(root).resolve()).as_posix())
        except ValueError:
            pass
    return Path(path).resolve().as_uri()


def render_sarif(reports: list[FileReport], root: str | None = None) -> str:
    root = root or os.getcwd()
    used = sorted({f.code for r in reports for f in r.findings})
    rules = [{
        "id": code,
        "name": CODES[code].name if code in CODES else code,
        "shortDescription": {"text": CODES[code].summary if code in CODES else code},
        "helpUri": f"{HELP_URI}#{code.lower()}",
        "defaultConfiguration": {"level": _LEVEL[CODES[code].severity] if code in CODES else "warning"},
    } for code in used]
    index = {code: i for i, code in enumerate(used)}
    results = []
    for r in reports:
        for f in r.findings:
            span = f.span.to_dict()
            result = {
                "ruleId": f.code,
                "ruleIndex": index[f.code],
                "level": _LEVEL[f.severity],
                "message": {"text": f.message},
                "locations": [{"physicalLocation": {
                    "artifactLocation": {"uri": _uri(f.path, root), "uriBaseId": "%SRCROOT%"},
                    "region": {"startLine": span["line"] + 1, "startColumn": span["col"] + 1,
                               "endLine": span["end_line"] + 1, "endColumn": max(span["end_col"], span["col"] + 1) + 1
                               if span["end_line"] == span["line"] else span["end_col"] + 1},
                }}],
            }
            if f.data:
                result["properties"] = f.data  # the evidence: numbers, variants, and a measurement's provenance
            results.append(result)
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "kernel-lsp", "version": __version__, "informationUri": HELP_URI,
                                "rules": rules}},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path(root).resolve().as_uri() + "/"}},
            "results": results,
        }],
    }
    return json.dumps(doc, indent=2) + "\n"
