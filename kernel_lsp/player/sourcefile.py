"""A source file imported as a module, the same way in the checker (the reference side) and in the player (the
implementation): its lines split as Python's tokenizer splits them, the editor's unsaved text run instead of the
file's bytes, and linecache primed with that text, so that Triton, which reads kernel source through `inspect`, sees
what runs. Standard library only; imports nothing of kernel_lsp (the player runs it as a plain file)."""

from __future__ import annotations

import importlib.util
import linecache
import re
import sys

_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str) -> list[str]:
    """A source's lines with their endings, as Python's tokenizer reads them: ended by `\r\n`, `\r` or `\n` only (the
    rule of kernel_lsp.model.split_lines)."""
    return _LINE_RE.findall(text)


def exec_file(path: str, name: str, source: str | None, folder: str):
    """Import `path` as the module `name` (registered in sys.modules), with `folder` first on sys.path for the
    imports it makes; `source`, when given, runs instead of the file's bytes."""
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    if source is None:
        # Compiled from the file's bytes (their declared encoding read by compile), never from a cached .pyc: one
        # is taken as current while the source's size and modification second match, and an edit of the same
        # length within that second ran the file as it was.
        with open(path, "rb") as f:
            code = compile(f.read(), spec.origin, "exec", dont_inherit=True)
        exec(code, module.__dict__)
    else:
        linecache.cache[spec.origin] = (len(source), None, split_lines(source), spec.origin)
        exec(compile(source, spec.origin, "exec", dont_inherit=True), module.__dict__)
    return module
