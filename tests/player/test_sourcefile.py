"""sourcefile.exec_file: a checked file runs as it is on disk or in the editor, never as a cached .pyc says."""

import os
import py_compile
import sys

from kernel_lsp.player.sourcefile import exec_file


def test_a_file_edited_within_its_cached_bytecodes_second_runs_as_edited(tmp_path):
    """Python takes a .pyc as current while the source's size and modification second match: an edit of the same
    length within that second ran the file as it was (a reference's truth, an implementation's kernel)."""
    path = tmp_path / "problem.py"
    path.write_text("VALUE = 2.0\n")
    py_compile.compile(str(path), cfile=__import__("importlib.util").util.cache_from_source(str(path)),
                       invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    stat = path.stat()
    path.write_text("VALUE = 3.0\n")  # the same length
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the same second
    try:
        assert exec_file(str(path), "kl_sourcefile_case", None, str(tmp_path)).VALUE == 3.0
    finally:
        sys.modules.pop("kl_sourcefile_case", None)
        sys.path.remove(str(tmp_path))


def test_a_file_runs_without_the_future_imports_of_kernel_lsp(tmp_path):
    """exec_file's own module has `from __future__ import annotations`; the file it runs, from disk or from the
    editor's text, must not inherit it (annotations are evaluated as Python evaluates them)."""
    text = "def f(x: int) -> int:\n    return x\n\nANNOTATION = f.__annotations__['x']\n"
    path = tmp_path / "ann.py"
    path.write_text(text)
    try:
        assert exec_file(str(path), "kl_sourcefile_disk", None, str(tmp_path)).ANNOTATION is int
        assert exec_file(str(path), "kl_sourcefile_editor", text, str(tmp_path)).ANNOTATION is int
    finally:
        for name in ("kl_sourcefile_disk", "kl_sourcefile_editor"):
            sys.modules.pop(name, None)
        sys.path.remove(str(tmp_path))
