"""Which imported modules are the user's: loaded from outside the Python installation (the standard library,
site-packages) and outside kernel-lsp itself. A long-lived worker forgets them after each job (run/job_imports.py),
and the measure stage keys its compiled reference on their files (measure/compiled.py)."""

from __future__ import annotations

import os
import site
import sys
import sysconfig


def installed_folders() -> tuple[str, ...]:
    """The installation's folders and kernel-lsp's own, each ending in a separator (for str.startswith)."""
    folders = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    folders.update(getattr(site, "getsitepackages", lambda: [])())
    folders.add(site.getusersitepackages())
    here = os.path.dirname(os.path.abspath(__file__))
    folders.add(os.path.dirname(os.path.dirname(here)))  # the kernel_lsp package
    return tuple({g + os.sep for f in folders if f for g in (os.path.abspath(f), os.path.realpath(f))})


def module_files(module) -> list[str]:
    """A module's file, or a namespace package's folders, as they were imported; empty for a built-in or a module
    made in code."""
    where = getattr(module, "__file__", None)
    if isinstance(where, str):
        return [where]
    return [p for p in getattr(module, "__path__", None) or [] if isinstance(p, str)]


def is_users(module, installed: tuple[str, ...]) -> bool:
    files = module_files(module)  # the path as imported first (thousands of torch's modules: no realpath each)
    return bool(files) and not any(f.startswith(installed) or os.path.realpath(f).startswith(installed)
                                   for f in files)


def user_module_files() -> list[str]:
    """The files of the user's modules this process has imported, sorted."""
    installed = installed_folders()
    return sorted({os.path.realpath(f) for m in list(sys.modules.values()) if m is not None and is_users(m, installed)
                   for f in module_files(m) if os.path.isfile(f)})
