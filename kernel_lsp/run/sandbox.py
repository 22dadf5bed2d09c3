"""The sandbox every process that runs checked code starts in (docs/verification.md, "Sandbox").

The parent side (`child_env`) gives such a process a scrubbed environment: the allowlist of isolate.py plus the
user's `sandbox.env` names, with the Triton and Inductor cache folders pinned so that a private temporary folder
does not move them. The process itself (`enter`) then, before any checked code runs: works in a private folder
(its working and temporary directory), is confined by Landlock to writing there, in those caches and in the user's
`sandbox.writable` folders, may not open TCP connections, may not signal processes outside its sandbox, and
becomes a subreaper, so that nothing it starts can escape being killed with it (a `setsid` child included).

Code under check may read the environment, write files, spawn processes or phone home: none of that reaches the
user's files, keys or network. `sandbox.enabled = false` turns it off for users whose code needs more (docs say
what that gives up). The static screen of LLM candidates (propose/screen.py) is a fast first filter, not this.
"""

from __future__ import annotations

import os
import tempfile

from ..config import SandboxSettings
from ..jobs import SandboxOptions
from ..player import isolate
from ..trusted import cache_folders, cuda_cache_folder

# Our own variables a checker process needs (never secrets): which process is its parent, profiling, the device.
OWN = ("KERNEL_LSP_PARENT_PID", "KERNEL_LSP_PROFILE", "KERNEL_LSP_DEVICE", "KERNEL_LSP_WARM", "KERNEL_LSP_CEILINGS_DIR",
       "KERNEL_LSP_LOG")


def options_from(sandbox: SandboxSettings) -> SandboxOptions:
    """The `sandbox` settings as the job carries them."""
    return SandboxOptions(sandbox.enabled, list(sandbox.env), list(sandbox.writable), sandbox.network)


def child_env(options: SandboxOptions, base: dict[str, str] | None = None, own: bool = True) -> dict[str, str]:
    """The environment of a process that runs checked code: scrubbed (unless the sandbox is off), with the caches
    pinned. `own=False` leaves out every KERNEL_LSP_ variable (the neutral harness)."""
    base = dict(os.environ if base is None else base)
    if options.enabled:
        env = isolate.scrub_env(base, list(options.env) + (list(OWN) if own else []))
    else:
        env = dict(base)
    env.update(cache_folders(base))
    if not own:
        env = {k: v for k, v in env.items() if not k.startswith("KERNEL_LSP")}
    env.setdefault("PYTHONUNBUFFERED", "1")
    # Inductor compiles in this process instead of a pool of its own: a process pool would outlive the job it
    # was started by, and the sandbox kills whatever a job leaves behind.
    env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    return env


def writable_folders(options: SandboxOptions, private: str, env: dict[str, str] | None = None) -> list[str]:
    env = os.environ if env is None else env
    folders = [private] + list(cache_folders(env).values())
    folders.append(cuda_cache_folder(env))  # the CUDA driver's JIT cache
    folders += list(options.writable)
    if env.get("KERNEL_LSP_PROFILE"):  # a profiling run's stats, which a long-lived worker writes (run/serve.py)
        folders.append(env["KERNEL_LSP_PROFILE"])
    for folder in folders[1:]:
        try:
            os.makedirs(folder, exist_ok=True)  # a rule needs the folder to exist
        except OSError:
            pass
    return folders


def enter(options: SandboxOptions, private: str) -> str:
    """Confine this process before checked code runs: work in `private`, write only where allowed, no TCP, no
    signals out, and reap every orphan. Returns the one-line account for the logs and the report."""
    os.makedirs(private, exist_ok=True)
    os.chdir(private)
    for name in ("TMPDIR", "TEMP", "TMP"):
        os.environ[name] = private
    tempfile.tempdir = private
    isolate.become_subreaper()
    if not options.enabled:
        return "sandbox off (sandbox.enabled = false)"
    # Device files (/dev/null, a GPU's, opened read-write), never /dev itself: /dev/shm would outlive the check.
    return isolate.restrict(writable_folders(options, private) + isolate.device_files(), network=options.network)


def describe(options: SandboxOptions) -> str:
    if not options.enabled:
        return "off"
    abi = isolate.landlock_abi()
    return f"landlock ABI {abi}" if abi else "environment scrubbed; no Landlock on this kernel"


def secret_values(env: dict[str, str] | None = None, names: tuple[str, ...] = ()) -> list[str]:
    """The values of this process's variables named like a secret (isolate.SECRET) or listed in `names` (the LLM key's
    variable), longest first: what no finding, output or prompt may show."""
    env = os.environ if env is None else env
    found = {v for k, v in env.items() if (isolate.SECRET.search(k) or k in names) and len(v) >= 8}
    return sorted(found, key=len, reverse=True)


def redact(value, secrets: list[str]):
    """`value` (a string, or a list or dict holding strings) with every secret replaced by `[redacted]`."""
    if not secrets:
        return value
    if isinstance(value, str):
        for s in secrets:
            if s in value:
                value = value.replace(s, "[redacted]")
        return value
    if isinstance(value, list):
        return [redact(v, secrets) for v in value]
    if isinstance(value, dict):
        return {k: redact(v, secrets) for k, v in value.items()}
    return value


# Under the interpreter, one thread per process for OpenMP and the BLAS libraries (a setting of the user's own wins):
# an interpreted tl.dot is numpy's matmul and the reference's CPU ops are PyTorch's, whose sums split across threads
# differently per machine, and several workers and players at once oversubscribed the cores (a check of six corpus
# files two at a time on two cores: 12% less CPU time and 13-17% less wall time with one thread, 2026-12-06).
SINGLE_THREADED = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def single_threaded(env) -> None:
    """Set SINGLE_THREADED's variables in `env` (a dict or os.environ) where they are not set; before numpy or torch
    is imported in the process that gets them."""
    for name, value in SINGLE_THREADED.items():
        env.setdefault(name, value)
