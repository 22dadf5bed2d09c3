"""The bundled tasks: a workspace of PyTorch references and Triton kernels (tasks/ in a clone, shipped in the wheel
as kernel_lsp/bundled_tasks by setup.py), and `kernel-lsp init-tasks DIR`, which copies them where a user can
check and edit them. Standard library only; never overwrites a file.
"""

from __future__ import annotations

import shutil
from pathlib import Path


class BundleError(Exception):
    """The tasks cannot be copied (none bundled, or the destination is in the way)."""


def tasks_dir() -> Path | None:
    """Where the bundled tasks are: the wheel's copy, else the clone's tasks/ beside the package."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "bundled_tasks", here.parent / "tasks"):
        if (candidate / "index.json").is_file():
            return candidate
    return None


def copy_tasks(dest: Path) -> int:
    """Copy the bundled tasks into `dest` (made if absent, refused if it holds anything); returns the file count."""
    src = tasks_dir()
    if src is None:
        raise BundleError("this installation has no bundled tasks (neither kernel_lsp/bundled_tasks nor a clone's "
                          "tasks/)")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise BundleError(f"{dest} already exists and is not an empty folder: nothing was copied (choose a new one)")
    try:
        shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"), dirs_exist_ok=True)
    except OSError as e:
        raise BundleError(f"cannot copy the tasks to {dest}: {e.strerror or e}") from e
    return sum(1 for p in dest.rglob("*") if p.is_file())
