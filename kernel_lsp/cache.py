"""On-disk cache of file reports, keyed by a content hash of everything that can change a result.

The key covers the implementation's bytes, the reference's and input factory's bytes, the link, the settings
that affect results, the versions of kernel-lsp, Triton and torch, and a digest of the verifier's own rule set
(the source of the modules that decide verdicts), so a verdict cached by another version of the rules is never
served as current, even by a development checkout whose version number has not moved. Entries are written atomically
(temp file + rename), so a reader never sees half a file. Versions are read from package metadata: the
parent never imports torch or triton.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from . import __version__
from .device import gpu_models, gpu_present
from .model import FileReport

CACHE_FORMAT = 2
# The modules whose source decides a verdict: every stage of the checker, the parent's discovery and linking, what runs
# beside the implementation, the processes and their fault findings (run/, check.py), the codes and their severities,
# and the records the findings travel in. Relative to the package directory; tests/test_keys.py fails on a module that
# decides findings outside them.
# Every module that can change a verdict, and every module of the package those import (tests/test_keys.py checks
# the closure): a change to any of them invalidates cached verdicts.
RULE_MODULES = ("source", "checker", "player", "run", "check.py", "codes.py", "model.py", "records.py", "jobs.py",
                "verdict.py", "targets.py", "config.py", "settings.py", "device.py", "trusted.py", "cache.py",
                "__init__.py")


@lru_cache(maxsize=None)
def package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


@lru_cache(maxsize=None)
def rules_digest(package: str | None = None) -> str:
    """SHA-256 over the source of RULE_MODULES (file names and bytes, in a fixed order), computed once per
    process: a changed rule, message or threshold invalidates every cached verdict."""
    base = Path(package or Path(__file__).parent)
    files: list[Path] = []
    for name in RULE_MODULES:
        p = base / name
        files += sorted(p.rglob("*.py")) if p.is_dir() else [p]
    h = hashlib.sha256()
    for f in files:
        h.update(f.relative_to(base).as_posix().encode() + b"\0")
        try:
            h.update(f.read_bytes())
        except OSError:
            h.update(b"unreadable")
        h.update(b"\0")
    return h.hexdigest()


def _file_digest(path: str | Path | None) -> str:
    if not path:
        return ""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return "unreadable"


def cache_key(source: str, link: dict[str, Any] | None, fingerprint: dict[str, Any],
              dependencies: list[str] = ()) -> str:
    digests: dict[str, str] = {}  # the reference is often also an input file and a dependency: read it once

    def digest(path: str | None) -> str:
        if not path:
            return ""
        if path not in digests:
            digests[path] = _file_digest(path)
        return digests[path]

    parts = {
        "format": CACHE_FORMAT,
        "kernel_lsp": __version__,
        "rules": rules_digest(),
        "triton": package_version("triton"),
        "torch": package_version("torch"),
        "gpu": gpu_present(),
        "gpu_models": gpu_models(),
        "source": hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest(),
        "link": link,
        "reference": digest(link and link.get("reference")),
        "inputs": digest(link and link.get("inputs_path")),
        "settings": fingerprint,
        "dependencies": {d: digest(d) for d in dependencies},
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


class Cache:
    def __init__(self, directory: Path | None):
        self.directory = directory

    def _make_directory(self) -> None:
        """The cache directory, with a `.gitignore` of `*` in it (as ruff does for .ruff_cache), so it is never
        committed by accident."""
        assert self.directory is not None
        ignore = self.directory / ".gitignore"
        if not ignore.exists():
            self.directory.mkdir(parents=True, exist_ok=True)
            ignore.write_text("# Created by kernel-lsp: its cache of check results, safe to delete.\n*\n")

    def _path(self, key: str) -> Path | None:
        return self.directory / key[:2] / f"{key}.json" if self.directory else None

    def get(self, key: str) -> FileReport | None:
        p = self._path(key)
        if p is None or not p.is_file():
            return None
        try:
            report = FileReport.from_dict(json.loads(p.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError):
            return None
        report.cached = True
        return report

    def put(self, key: str, report: FileReport) -> None:
        p = self._path(key)
        if p is None:
            return
        try:
            self._make_directory()
            p.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=p.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(report.to_dict(), f)
            os.replace(tmp, p)
        except OSError:
            pass  # a cache that cannot be written only costs speed
