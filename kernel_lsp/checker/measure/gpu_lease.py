"""Who times on a GPU: one process at a time per GPU, across every kernel-lsp process of the machine (the language
server's workers, CLI runs, CI jobs, executors). Worker side, on a GPU only.

The lease is an exclusive `flock` on `<locks folder>/<GPU UUID>.lock`. The folder is shared by every kernel-lsp
process of the user (KERNEL_LSP_LOCKS_DIR, which the parent pins and the sandbox lets workers write; else
`$XDG_RUNTIME_DIR/kernel-lsp/gpu-locks` or the temporary folder's `kernel-lsp-<uid>/gpu-locks`). The kernel drops a
flock when its holder dies, however it dies, so a crashed holder never blocks the GPU. The holder writes its pid
and what it times into the file, so a waiter can say whom it waits for. Held only around the measure stage's
timed calls: verification runs in parallel on a GPU, timing never does.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import time
from typing import Callable, Iterator

POLL_S = 0.05


def default_locks_folder(env: dict[str, str] | None = None) -> str:
    """Where the leases live for this user (the parent computes it and pins it for its workers)."""
    env = os.environ if env is None else env
    if env.get("KERNEL_LSP_LOCKS_DIR"):
        return env["KERNEL_LSP_LOCKS_DIR"]
    runtime = env.get("XDG_RUNTIME_DIR")
    return (os.path.join(runtime, "kernel-lsp", "gpu-locks") if runtime
            else os.path.join(tempfile.gettempdir(), f"kernel-lsp-{os.getuid()}", "gpu-locks"))


def locks_folder() -> str:
    folder = default_locks_folder()
    os.makedirs(folder, exist_ok=True)
    return folder


def gpu_identity() -> tuple[str, int]:
    """(a stable name of the current CUDA device, its index as this process sees it): the UUID where torch or NVML
    gives it, else the PCI bus id, else the index (good enough on one machine)."""
    import torch
    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    uuid = getattr(props, "uuid", None)
    if uuid:
        return f"GPU-{uuid}", index
    bus = getattr(props, "pci_bus_id", None)
    return (f"pci-{props.pci_domain_id}-{bus}-{props.pci_device_id}" if bus is not None else f"index-{index}"), index


def holder_of(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


@contextlib.contextmanager
def lease(name: str, what: str, on_wait: Callable[[str], None] | None = None,
          folder: str | None = None, timeout: float = 600.0) -> Iterator[float]:
    """Hold the GPU `name` exclusively; yields the seconds waited for it. `on_wait(holder)` is called once if
    another process holds it (holder: "pid 1234: timing softmax.py"). Past `timeout` the GPU is used anyway (a
    holder that hangs must not stop every check): the caller is told by the wait having reached it."""
    path = os.path.join(folder or locks_folder(), f"{name}.lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    start = time.monotonic()
    told = False
    held = False
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = True
                break
            except BlockingIOError:
                if not told and on_wait is not None:
                    on_wait(holder_of(path))
                    told = True
                if time.monotonic() - start > timeout:
                    break
                time.sleep(POLL_S)
        if held:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}: {what}".encode(), 0)
        yield time.monotonic() - start
    finally:
        if held:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
