"""Who times on a GPU: one process at a time per GPU, across every kernel-lsp process of the machine (the language
server's workers, CLI runs, CI jobs, executors). Worker side, on a GPU only.

The lease is an exclusive `flock` on `<locks folder>/<GPU UUID>.lock`. The folder is shared by every kernel-lsp
process of the user (KERNEL_LSP_LOCKS_DIR, which the parent pins and the sandbox lets workers write; else
`$XDG_RUNTIME_DIR/kernel-lsp/gpu-locks` or the temporary folder's `kernel-lsp-<uid>/gpu-locks`). The kernel drops a
flock when its holder dies, however it dies, so a crashed holder never blocks the GPU. The holder writes its pid
and what it times into the file, so a waiter can say whom it waits for. Held only around the measure stage's
timed calls: verification runs in parallel on a GPU, timing never does.

A quiet GPU while timing: verification on a GPU holds `<GPU UUID>.busy` shared (`verifying`), the timing holds it
exclusively (inside `lease`), so nothing of kernel-lsp's own verifies on that GPU or its host while a side is timed,
and several checks verify at once otherwise. A turnstile, `<GPU UUID>.gate`, keeps a waiting timing from starving:
a verification passes through it before it takes its shared hold, and a timing holds it while it waits for the
verifications in flight, so none starts meanwhile. A verification lets a waiting timing in between its steps
(`let_timing_in`: after each variant and stage it gives its hold back while a timing waits, and takes it again
after), so a timing waits for one step of each verification in flight, not for the rest of it. Either wait has a
deadline past which it goes on anyway (a holder that hangs must not stop every check).

Memory beside other checks: each process of a check gives back the GPU memory its caching allocator holds unused
beyond a GiB after every variant (player/devmem.trim_cache; the player likewise after every request), so one
check's largest variant does not keep its blocks through the rest of it. A check that still runs out of memory
beside other checks ends with KL302, and the executor checks it again alone (run/local.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from typing import Any, Callable, Iterator

from ...trusted import default_locks_folder

POLL_S = 0.05
QUIET_TIMEOUT_S = 120.0  # the longest a timing waits for verifications in flight (then it times, disturbed)


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


def flock_waiting(fd: int, mode: int, deadline: float, on_wait: Callable[[], Any] | None = None,
           after: float = 0.0) -> bool:
    """Take `mode` (LOCK_EX or LOCK_SH) on `fd`, polling until `deadline` (time.monotonic()); `on_wait()` once if it
    has waited longer than `after` seconds, and what it returned, when callable, once the wait ends (jobs.Sink.wait:
    the worker says so, and the job's time limit leaves the wait out). True when held. The compile warmer's lock is
    waited for the same way (compiled.wait_for_lock)."""
    told = False
    ended: Any = None
    start = time.monotonic()
    try:
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if not told and on_wait is not None and time.monotonic() - start >= after:
                    ended = on_wait()
                    told = True
                if time.monotonic() > deadline:
                    return False
                time.sleep(POLL_S)
    finally:
        if callable(ended):
            ended()


def _open(folder: str | None, name: str, suffix: str) -> tuple[str, int]:
    path = os.path.join(folder or locks_folder(), f"{name}.{suffix}")
    return path, os.open(path, os.O_RDWR | os.O_CREAT, 0o644)


@contextlib.contextmanager
def lease(name: str, what: str, on_wait: Callable[[str], Any] | None = None,
          folder: str | None = None, timeout: float = 600.0,
          quiet_timeout: float = QUIET_TIMEOUT_S) -> Iterator[float]:
    """Hold the GPU `name` exclusively; yields the seconds waited for it. `on_wait(holder)` is called once if
    another process holds it (holder: "pid 1234: timing softmax.py"), or once verifications are in flight on it
    (holder: "verifications in flight"). Past `timeout` the GPU is used anyway (a holder that hangs must not stop
    every check): the caller is told by the wait having reached it. Once held, the verifications on this GPU
    (`verifying`) in flight are waited for, up to `quiet_timeout`, and no new one starts until the lease ends."""
    path, fd = _open(folder, name, "lock")
    _, gate = _open(folder, name, "gate")
    _, busy = _open(folder, name, "busy")
    start = time.monotonic()
    held = gated = quiet = False
    try:
        held = flock_waiting(fd, fcntl.LOCK_EX, start + timeout,
                      (lambda: on_wait(holder_of(path))) if on_wait is not None else None)
        if held:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}: {what}".encode(), 0)
        gated = flock_waiting(gate, fcntl.LOCK_EX, time.monotonic() + quiet_timeout)
        quiet = flock_waiting(busy, fcntl.LOCK_EX, time.monotonic() + quiet_timeout,
                       (lambda: on_wait("verifications in flight")) if on_wait is not None else None)
        yield time.monotonic() - start
    finally:
        for lock, on in ((busy, quiet), (gate, gated)):
            if on:
                fcntl.flock(lock, fcntl.LOCK_UN)
            os.close(lock)
        if held:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


class _Hold:
    """One `verifying` hold: the GPU's turnstile and busy files, and whether the busy file is held shared now."""

    def __init__(self, gate: int, busy: int, timeout: float):
        self.gate, self.busy, self.timeout, self.shared = gate, busy, timeout, False

    def enter(self, on_wait: Callable[[], Any] | None = None) -> float:
        """Through the turnstile (waiting while a timing waits or runs), then the busy file shared; the seconds
        waited. Past the timeout it goes on anyway."""
        start = time.monotonic()
        # Other verifications pass through the turnstile in a moment: only a longer wait is a timing's.
        if flock_waiting(self.gate, fcntl.LOCK_EX, start + self.timeout, on_wait, after=0.5):
            try:
                self.shared = flock_waiting(self.busy, fcntl.LOCK_SH, start + self.timeout)
            finally:
                fcntl.flock(self.gate, fcntl.LOCK_UN)
        return time.monotonic() - start

    def leave(self) -> None:
        if self.shared:
            fcntl.flock(self.busy, fcntl.LOCK_UN)
            self.shared = False


_holds = threading.local()  # this thread's `verifying` holds, innermost last


@contextlib.contextmanager
def verifying(name: str, folder: str | None = None, timeout: float = 600.0,
              on_wait: Callable[[], Any] | None = None) -> Iterator[float]:
    """Verify on the GPU `name` beside other verifications, never while a side is timed on it: passes through the
    turnstile (waiting while a timing waits or runs; `on_wait()` once if it does), then holds the GPU's `busy` file
    shared. Yields the seconds waited. Past `timeout` it goes on anyway. Inside it, `let_timing_in()` between two
    steps lets a timing that waits for this GPU have it before the next step."""
    _, gate = _open(folder, name, "gate")
    _, busy = _open(folder, name, "busy")
    hold = _Hold(gate, busy, timeout)
    stack = _holds.__dict__.setdefault("stack", [])
    try:
        waited = hold.enter(on_wait)
        stack.append(hold)
        yield waited
    finally:
        if stack and stack[-1] is hold:
            stack.pop()
        hold.leave()
        os.close(busy)
        os.close(gate)


def timing_waits(gate: int) -> bool:
    """Someone holds the turnstile: a timing that waits for the GPU or times on it (or, for a moment, a
    verification passing through)."""
    try:
        fcntl.flock(gate, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    fcntl.flock(gate, fcntl.LOCK_UN)
    return False


def let_timing_in(on_wait: Callable[[], Any] | None = None) -> float:
    """Between two steps of a verification (its variants, its stages): when a timing waits for this thread's GPU,
    give the shared hold back, wait at the turnstile until the timing has ended, and hold the GPU again; the
    seconds waited. A timing then waits for the step in flight of each verification, not for whole verifications
    (several seconds each, while the GPU's other verifications drain and none begins). Nothing outside `verifying`
    or when no timing waits."""
    stack = getattr(_holds, "stack", None)
    # A hold whose wait once reached its deadline (a holder that hangs) goes on without it: it waits no more.
    if not stack or not stack[-1].shared or not timing_waits(stack[-1].gate):
        return 0.0
    hold = stack[-1]
    hold.leave()
    return hold.enter(on_wait)


def verifying_here(device: str, on_wait: Callable[[int], Any] | None = None):
    """`verifying` on this process's current CUDA device (`on_wait(index)` once if it waits for a timing), or nothing
    to hold where `device` is not "cuda" (the CPU interpreter)."""
    if device != "cuda":
        return contextlib.nullcontext()
    uuid, index = gpu_identity()
    return verifying(uuid, on_wait=(lambda: on_wait(index)) if on_wait is not None else None)

