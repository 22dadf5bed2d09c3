"""The local files a check depends on: modules imported from the workspace, followed transitively.

A kernel file's result depends on its own text, its reference, and the workspace modules either imports
(a shared helper, a kernel defined elsewhere). They feed the cache key, so editing a helper never returns a
stale cached result, and the language server re-checks open documents when one of them changes on disk.
Installed packages (torch, triton, numpy, ...) are not followed: they resolve outside the search roots.
Parsed with `ast` only; nothing is imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .discover import parse

MAX_FILES = 64


def _module_files(module: str, level: int, here: Path, roots: list[Path]) -> list[Path]:
    parts = module.split(".") if module else []
    if level:
        base = here
        for _ in range(level - 1):
            base = base.parent
        bases = [base]
    else:
        bases = roots
    found = []
    for base in bases:
        stem = base.joinpath(*parts) if parts else base
        for candidate in (stem.with_suffix(".py") if parts else None, stem / "__init__.py"):
            if candidate is not None and candidate.is_file():
                found.append(candidate.resolve())
                break
    return found


def imported_files(source: str, path: Path, roots: list[Path]) -> list[Path]:
    """Workspace files that `source` (the text of `path`) imports directly."""
    try:
        tree = parse(source)
    except (SyntaxError, ValueError):
        return []
    here = path.parent
    out: list[Path] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out += _module_files(alias.name, 0, here, roots)
        elif isinstance(node, ast.ImportFrom):
            out += _module_files(node.module or "", node.level, here, roots)
            for alias in node.names:  # `from pkg import module` imports pkg/module.py
                out += [f for f in _module_files(f"{node.module}.{alias.name}" if node.module else alias.name,
                                                 node.level, here, roots) if f.name != "__init__.py"]
    return out


def dependencies(source: str, path: Path, root: Path | None, extra: list[Path] = ()) -> list[Path]:
    """Every workspace file the check of `path` depends on (not `path` itself), transitively, sorted. `extra`: the
    reference's and the input factory's files, whose folders are searched too, as they are first on the path when
    they are imported: a helper beside a reference in another folder is a dependency (an edit to it is no stale
    cached result)."""
    path = path.resolve()
    extra = [Path(e).resolve() for e in extra]
    roots: list[Path] = []
    for folder in [path.parent] + [e.parent for e in extra] + ([root.resolve()] if root is not None else []):
        if folder not in roots:
            roots.append(folder)
    seen: set[Path] = {path}
    todo: list[tuple[Path, str | None]] = [(path, source)] + [(e, None) for e in extra]
    while todo and len(seen) < MAX_FILES:
        file, text = todo.pop()
        if file != path:
            if file in seen:
                continue
            seen.add(file)
        if text is None:
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
        for dep in imported_files(text, file, roots):
            if dep not in seen:
                todo.append((dep, None))
    return sorted(seen - {path})
