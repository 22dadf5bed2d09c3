"""The vocabulary every layer shares: spans, severities, findings and per-kernel facts.

Positions are 0-based for lines and columns, as in LSP; the text renderer adds 1. Everything here is plain
data that survives a JSON round trip (`to_dict` / `from_dict`), because findings cross the worker boundary
and live in the on-disk cache.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any


class Severity(enum.IntEnum):
    """Severities with LSP's numbering, so conversion to LSP is the identity."""

    ERROR = 1
    WARNING = 2
    INFO = 3
    HINT = 4

    @property
    def label(self) -> str:
        return {1: "error", 2: "warning", 3: "info", 4: "hint"}[int(self)]

    @classmethod
    def parse(cls, text: str) -> "Severity":
        return {"error": cls.ERROR, "warning": cls.WARNING, "info": cls.INFO, "hint": cls.HINT}[text]


@dataclass(frozen=True)
class Span:
    """A range in a file: 0-based line and column, end exclusive."""

    line: int
    col: int = 0
    end_line: int | None = None
    end_col: int | None = None

    def to_dict(self) -> dict[str, int]:
        return {
            "line": self.line,
            "col": self.col,
            "end_line": self.line if self.end_line is None else self.end_line,
            "end_col": (self.col + 1) if self.end_col is None else self.end_col,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Span":
        return cls(d["line"], d.get("col", 0), d.get("end_line"), d.get("end_col"))


@dataclass
class Finding:
    """One diagnostic: what was found, where, and the evidence (`data`) a front end or a code action needs."""

    path: str
    span: Span
    severity: Severity
    code: str
    message: str
    source: str = "kernel-lsp"
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "range": self.span.to_dict(),
            "severity": self.severity.label,
            "code": self.code,
            "message": self.message,
            "source": self.source,
            "data": self.data,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Finding":
        return cls(
            path=d["path"],
            span=Span.from_dict(d["range"]),
            severity=Severity.parse(d["severity"]),
            code=d["code"],
            message=d["message"],
            source=d.get("source", "kernel-lsp"),
            data=d.get("data", {}),
        )

    def sort_key(self) -> tuple:
        return (self.path, self.span.line, self.span.col, self.code, self.message)


@dataclass
class LaunchSite:
    """A `kernel[grid](...)` expression found by discovery."""

    kernel: str
    span: Span


@dataclass
class KernelInfo:
    """A `@triton.jit` function found by discovery, without importing the file."""

    name: str
    qualname: str
    def_span: Span  # the `def` keyword line; decorators start earlier
    name_span: Span  # the function's name, where hover and diagnostics about the kernel anchor
    end_line: int
    decorators: list[str]
    body_indent: int = 0
    is_helper: bool = False  # called from another kernel: a device function, never launched itself
    launches: list[LaunchSite] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["def_span"] = self.def_span.to_dict()
        d["name_span"] = self.name_span.to_dict()
        d["launches"] = [{"kernel": s.kernel, "span": s.span.to_dict()} for s in self.launches]
        return d


@dataclass
class FileReport:
    """Everything the engine learned about one file: findings plus per-kernel facts for hover and JSON."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    kernels: dict[str, dict[str, Any]] = field(default_factory=dict)  # kernel name -> facts (resources, verdicts)
    cached: bool = False
    stats: dict[str, Any] = field(default_factory=dict)
    dependencies: list[str] = field(default_factory=list)  # workspace files the result depends on

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "findings": [f.to_dict() for f in self.findings],
            "kernels": self.kernels,
            "cached": self.cached,
            "stats": self.stats,
            "dependencies": self.dependencies,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "FileReport":
        return cls(
            path=d["path"],
            findings=[Finding.from_dict(f) for f in d.get("findings", [])],
            kernels=d.get("kernels", {}),
            cached=d.get("cached", False),
            stats=d.get("stats", {}),
            dependencies=d.get("dependencies", []),
        )
