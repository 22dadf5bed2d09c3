"""What one job imports of the user's, forgotten when the job ends.

A long-lived worker (a GPU's, a `--runner`'s, a Ray actor's: serve.py) checks file after file in one process. A
reference's `import helper` is an ordinary import: it found the module an earlier job had imported, another folder's
helper of the same name or the file as it was before an edit, and the truth was computed with it (a wrong kernel
passed). The folders a job put on sys.path stayed there too, so a later job's import could resolve into them. The
CPU's workers are forks of a zygote, one per job, and start clean (zygote.py).

A module is a job's when its top-level package was not imported before the worker's first job and it was not loaded
from the Python installation (the standard library, site-packages), kernel-lsp itself or a folder on the worker's
path as it started (PYTHONPATH, an editable install; not its working folder): torch's, Triton's and NumPy's lazy
imports stay (a C extension cannot be loaded twice in one process), the user's modules go.
"""

from __future__ import annotations

import importlib
import os
import sys

from ..checker.problem.user_modules import installed_folders, is_users


class JobImports:
    """sys.modules and sys.path as the worker had them before its first job; `forget()`, before and after each job,
    drops the user's modules imported since and restores sys.path (before a job too: a forget a cancel interrupted
    is finished there)."""

    def __init__(self) -> None:
        self.modules = set(sys.modules)
        self.tops = {name.partition(".")[0] for name in self.modules}
        self.path = list(sys.path)
        # The worker's own path but its first entry (the folder it was started in, a user's project, as `python -m`
        # puts it there) and its working folder: PYTHONPATH's and editable installs' folders, whose packages (one
        # registering torch operators at import) must not be imported twice.
        here = {os.path.realpath(p) for p in (os.getcwd(), *self.path[:1]) if isinstance(p, str)}
        self.installed = installed_folders() + tuple(
            os.path.realpath(p) + os.sep for p in self.path
            if isinstance(p, str) and p and os.path.realpath(p) not in here)

    def forget(self) -> list[str]:
        """Drop the user's modules imported since the worker started (module docstring); returns their names."""
        sys.path[:] = self.path
        dropped = []
        for name, module in list(sys.modules.items()):
            if name in self.modules or name.partition(".")[0] in self.tops:
                continue
            if module is None or is_users(module, self.installed):
                sys.modules.pop(name, None)
                dropped.append(name)
        importlib.invalidate_caches()  # a file added or edited since is seen by the next job's imports
        return dropped
