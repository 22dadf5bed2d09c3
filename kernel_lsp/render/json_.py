"""JSON output; the schema is kernel_lsp/schemas/check-output.schema.json (documented in docs/output.md)."""

from __future__ import annotations

import json

from .. import __version__
from ..model import FileReport

SCHEMA_VERSION = 1


def render_json(reports: list[FileReport], stats: dict | None = None) -> str:
    doc = {
        "version": SCHEMA_VERSION,
        "tool": {"name": "kernel-lsp", "version": __version__},
        "stats": stats or {},
        "files": [r.to_dict() for r in reports],
        "diagnostics": [f.to_dict() for r in reports for f in r.findings],
    }
    return json.dumps(doc, indent=2, default=str) + "\n"
