"""What the command line's commands share: the exit codes, UsageError (exit code 2), the settings that
pyproject.toml and the flags make (an error names the flag the user typed), and output with secrets masked. cli.py
and cli_check.py (the `check` command) import it; it imports neither.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .config import (ConfigError, Settings, apply_overrides, find_git_root, find_pyproject, load_pyproject,
                     mask_secrets)
from .device import gpu_present
from .run.executor import check_gpus

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
# The settings a flag sets: errors name the flag the user typed.
FLAGS = {"targets": "--target", "timeout": "--timeout", "device": "--device", "workers": "--jobs",
         "runner": "--runner", "runners": "--runner", "gpus": "--gpus", "executor": "--executor",
         "ray_address": "--ray-address"}


class UsageError(Exception):
    """Bad command-line usage; exit code 2."""


def _settings_for(args: argparse.Namespace) -> tuple[Settings, Path]:
    start = Path(args.paths[0]) if args.paths else Path.cwd()
    pyproject = Path(args.config) if args.config else find_pyproject(start)
    settings, root = load_pyproject(pyproject)
    runners = list(args.runner or [])
    flags = {"targets": args.target, "timeout": args.timeout, "device": args.device, "workers": args.jobs,
             "runner": runners[0] if len(runners) == 1 else None, "runners": runners if len(runners) > 1 else None,
             "gpus": getattr(args, "gpus", None), "ray_address": getattr(args, "ray_address", None),
             "executor": getattr(args, "executor", None) or ("ray" if getattr(args, "ray_address", None) else None)}
    for key, value in flags.items():  # one at a time, so an error names the flag that caused it
        try:
            settings = apply_overrides(settings, {key: value})
        except ConfigError as e:
            raise UsageError(f"{FLAGS[key]}: {str(e).split(': ', 1)[-1]}") from None
    extra: dict = {}
    if args.no_verify:
        extra["verification"] = False
    if args.no_measure:
        extra["measure"] = {"mode": "off"}
    settings = apply_overrides(settings, extra)
    if (settings.device == "cuda" and not (settings.runner or settings.runners) and settings.executor == "local"
            and not gpu_present()):
        origin = "--device cuda" if args.device == "cuda" else "device = \"cuda\" in [tool.kernel-lsp]"
        raise UsageError(f"{origin}, but this machine has no CUDA GPU: use --device cpu (Triton's interpreter) "
                         "or --runner to check on a machine that has one")
    problem = check_gpus(settings)
    if problem:
        raise UsageError(problem)
    # Without a pyproject.toml, the project is the git checkout the path is in; failing both, the current directory
    # (whose cache then goes to the user's cache directory unless it is itself a project: config.cache_path).
    return settings, (root or find_git_root(start) or Path.cwd()).resolve()


def _check_reference_option(option: str | None) -> None:
    if option and Path(option).is_dir():
        raise UsageError(f"--reference {option}: is a folder; name the reference's Python file")
    if option and not Path(option).is_file():
        raise UsageError(f"--reference file does not exist: {option}")


class _Masked:
    """A text stream whose writes have secrets masked (config.mask_secrets): whatever a command prints (findings, a
    configuration error, an endpoint's reply) never shows a key in full."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(mask_secrets(text))

    def __getattr__(self, name):
        return getattr(self._stream, name)
