"""What one job imports of the user's, forgotten when the job ends.

A long-lived worker (a GPU's, a `--runner`'s, a Ray actor's: serve.py) checks file after file in one process. A
reference's `import helper` is an ordinary import: it found the module an earlier job had imported, another folder's
helper of the same name or the file as it was before an edit, and the truth was computed with it (a wrong kernel
passed). The folders a job put on sys.path stayed there too, so a later job's import could resolve into them. The
CPU's workers are forks of a zygote, one per job, and start clean (zygote.py).

A module is the job's when its top-level package was not imported before the job and it was not loaded from the
Python installation (the standard library, site-packages) or kernel-lsp itself: torch's, Triton's and NumPy's lazy
imports stay (a C extension cannot be loaded twice in one process), the user's modules go.
"""

from __future__ import annotations

import importlib
import sys

from ..checker.problem.user_modules import installed_folders, is_users


class JobImports:
    """sys.modules and sys.path as a job found them; `forget()` drops the user's modules the job imported and
    restores sys.path."""

    def __init__(self) -> None:
        self.modules = set(sys.modules)
        self.tops = {name.partition(".")[0] for name in self.modules}
        self.path = list(sys.path)

    def forget(self) -> list[str]:
        """Drop the job's modules (module docstring); returns their names."""
        installed = installed_folders()
        dropped = []
        for name, module in list(sys.modules.items()):
            if name in self.modules or name.partition(".")[0] in self.tops:
                continue
            if module is None or is_users(module, installed):
                del sys.modules[name]
                dropped.append(name)
        sys.path[:] = self.path
        importlib.invalidate_caches()  # a file added or edited since is seen by the next job's imports
        return dropped
