"""The folders whose files kernel-lsp's own processes read back and trust, and the players' own folders beside them.

The checker (a worker: the referee) and the compile warmer write, and later load or obey, what is in: Triton's and
Inductor's compile caches (the kernels of the torch.compile baseline), the GPU's measured ceilings, the GPU leases
(checker/measure/gpu_lease.py) and the CUDA driver's JIT cache. A player (the process that runs the implementation)
gets folders of its own inside the compile caches and a JIT cache of its own, and may write none of the checker's.
`unsafe_writable` says which `sandbox.writable` entries would give a player one of them anyway: settings.py refuses
them, and run/players.py leaves them out of a player's sandbox.

Standard library only, and below every part that needs it: the settings, the sandbox and the leases compute the same
folders from the same environment.
"""

from __future__ import annotations

import getpass
import os
import tempfile
from pathlib import Path

PLAYERS = "kernel-lsp-players"  # the players' own folder inside each compile cache and the CUDA driver's


def default_locks_folder(env: dict[str, str] | None = None) -> str:
    """Where the GPU leases live for this user (the parent computes it and pins it for its workers)."""
    env = os.environ if env is None else env
    if env.get("KERNEL_LSP_LOCKS_DIR"):
        return env["KERNEL_LSP_LOCKS_DIR"]
    runtime = env.get("XDG_RUNTIME_DIR")
    return (os.path.join(runtime, "kernel-lsp", "gpu-locks") if runtime
            else os.path.join(tempfile.gettempdir(), f"kernel-lsp-{os.getuid()}", "gpu-locks"))


def _home(env: dict[str, str]) -> str:
    return env.get("HOME") or str(Path.home())


def cuda_cache_folder(env: dict[str, str] | None = None) -> str:
    """The folder of the CUDA driver's JIT cache of the checker's processes (the driver keeps its ComputeCache in
    it)."""
    return os.path.join(_home(os.environ if env is None else env), ".nv")


def cache_folders(env: dict[str, str] | None = None) -> dict[str, str]:
    """The compile caches a checker's process may write, by the variable that names each: Triton's, Inductor's, where
    kernel-lsp keeps the GPU's measured ceilings, and the GPU leases. Computed by the parent, before a private TMPDIR
    would move them, and pinned for its workers (run/sandbox.py)."""
    env = os.environ if env is None else env
    home = _home(env)
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid_{os.getuid()}"
    return {
        "TRITON_CACHE_DIR": env.get("TRITON_CACHE_DIR") or os.path.join(home, ".triton", "cache"),
        "TORCHINDUCTOR_CACHE_DIR": env.get("TORCHINDUCTOR_CACHE_DIR")
        or os.path.join(tempfile.gettempdir(), f"torchinductor_{user}"),
        "KERNEL_LSP_CEILINGS_DIR": env.get("KERNEL_LSP_CEILINGS_DIR")
        or os.path.join(home, ".cache", "kernel-lsp", "ceilings"),
        "KERNEL_LSP_LOCKS_DIR": default_locks_folder(env),  # every process's GPU timing leases
    }


def player_cache_folders(env: dict[str, str] | None = None) -> dict[str, str]:
    """The caches of a player, by the variable that names each: a folder of its own inside Triton's and Inductor's,
    and a CUDA JIT cache of its own. The checker's torch.compile of the reference compiles into and loads from the
    caches themselves, and the checker's CUDA driver loads what it once compiled from its own JIT cache: a player may
    read those but never write them, so checked code cannot replace the baseline's kernels."""
    env = os.environ if env is None else env
    caches = cache_folders(env)
    out = {name: os.path.join(caches[name], PLAYERS) for name in ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR")}
    out["CUDA_CACHE_PATH"] = os.path.join(cuda_cache_folder(env), PLAYERS)
    return out


_WHAT = {"TRITON_CACHE_DIR": "Triton's compile cache", "TORCHINDUCTOR_CACHE_DIR": "Inductor's compile cache",
         "KERNEL_LSP_CEILINGS_DIR": "the GPU's measured ceilings", "KERNEL_LSP_LOCKS_DIR": "the GPU leases"}


def trusted_folders(env: dict[str, str] | None = None) -> dict[str, str]:
    """What the checker's processes trust, {what it is: folder}: the caches of `cache_folders` and the CUDA driver's
    JIT cache (CUDA_CACHE_PATH too, where it is set)."""
    env = os.environ if env is None else env
    out = {_WHAT[name]: folder for name, folder in cache_folders(env).items()}
    out["the CUDA driver's JIT cache"] = cuda_cache_folder(env)
    if env.get("CUDA_CACHE_PATH"):
        out["the CUDA driver's JIT cache (CUDA_CACHE_PATH)"] = env["CUDA_CACHE_PATH"]
    return out


def lies_within(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or lies in it (both absolute, as they are: resolve symlinks first)."""
    return os.path.commonpath([path, folder]) == folder


def unsafe_writable(entries, env: dict[str, str] | None = None,
                    extra: dict[str, str] | None = None) -> dict[str, str]:
    """The `sandbox.writable` entries that would let a player write where the checker trusts what it reads, each with
    why: an entry that is, holds or lies in a folder of `trusted_folders(env)` or of `extra` ({what: folder}),
    symlinks resolved as Landlock resolves them. An entry inside a player's own caches is safe, and so is a relative
    one without `..`: it names a folder inside the player's own work folder (one with `..` climbs out of it, to a
    folder of the same depth on every check: refused, whatever it reaches)."""
    guarded = {what: os.path.realpath(folder) for what, folder in {**trusted_folders(env), **(extra or {})}.items()}
    own = [os.path.realpath(folder) for folder in player_cache_folders(env).values()]
    out = {}
    for entry in entries:
        if not os.path.isabs(entry):
            if ".." in Path(entry).parts:
                out[entry] = "climbs out of the player's own work folder (`..`)"
            continue
        path = os.path.realpath(entry)
        if any(lies_within(path, folder) for folder in own):
            continue
        for what, folder in guarded.items():
            if path == folder:
                out[entry] = f"is {what} ({folder})"
            elif lies_within(path, folder):
                out[entry] = f"lies in {what} ({folder})"
            elif lies_within(folder, path):
                out[entry] = f"holds {what} ({folder})"
            else:
                continue
            break
    return out
