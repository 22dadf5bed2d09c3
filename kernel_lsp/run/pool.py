"""The parent's side of the warm worker (see zygote.py): start it, hand it jobs, learn how they ended.

`WarmPool.spawn()` returns a handle shaped like `subprocess.Popen` (pid, poll, wait), so `WorkerJob` kills
and waits for a forked child exactly as for a cold one. When the pool cannot be used (a GPU is present, the
zygote failed to start or died) `spawn()` returns None and the caller starts a cold process instead.
"""

from __future__ import annotations

import itertools
import logging
import os
import signal
import subprocess
import sys
import threading

from .protocol import Exited, ForkJob, Forked, ProtocolError, ZygoteReady, decode, encode

log = logging.getLogger(__name__)

READY_TIMEOUT = 60.0


class ForkedChild:
    """A child of the zygote, seen from the parent."""

    def __init__(self, job_id: int):
        self.id = job_id
        self.pid = 0
        self.returncode: int | None = None
        self._started = threading.Event()
        self._ended = threading.Event()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired("kernel-lsp worker", timeout)
        return self.returncode  # type: ignore[return-value]

    def _end(self, returncode: int) -> None:
        self.returncode = returncode
        self._ended.set()
        self._started.set()


class WarmPool:
    def __init__(self, env: dict[str, str] | None = None, command: list[str] | None = None,
                 cwd: str | None = None, any_device: bool = False) -> None:
        self.env = env  # the zygote's environment (the sandbox's scrubbed one: its children's /proc/PID/environ)
        # Another fork server speaking the same messages (the isolated re-run's harness), started in `cwd`; one
        # that never initialises CUDA itself serves jobs on any device (`any_device`).
        self.command = command or [sys.executable, "-m", "kernel_lsp.run.zygote"]
        self.cwd, self.any_device = cwd, any_device
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._ready = threading.Event()
        self._failed = False
        self._children: dict[int, ForkedChild] = {}
        self._ids = itertools.count(1)

    @staticmethod
    def usable(device: str = "auto") -> bool:
        """Linux only (the children rely on prctl's parent-death signal), never for CUDA (it cannot be used in a
        forked child): jobs asked to run on the CPU, or any job on a machine without a GPU; not when disabled."""
        from ..device import gpu_present
        return (sys.platform.startswith("linux") and (device == "cpu" or (device != "cuda" and not gpu_present()))
                and os.environ.get("KERNEL_LSP_WARM", "1") != "0")

    def start(self, device: str = "auto") -> bool:
        """Start the zygote if it is not running (it warms up in the background); False when unusable."""
        with self._lock:
            return self._start_locked(device)

    def _start_locked(self, device: str) -> bool:
        if self._failed or not (self.usable(device) or (self.any_device and sys.platform.startswith("linux"))):
            return False
        if self._proc is not None and self._proc.poll() is None:
            return True
        self._ready.clear()
        try:
            self._proc = subprocess.Popen(
                self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, start_new_session=True, env=self.env, cwd=self.cwd,
            )
        except OSError as e:
            log.warning("warm worker could not start: %s", e)
            self._failed = True
            return False
        threading.Thread(target=self._read, args=(self._proc,), name="kernel-lsp-zygote", daemon=True).start()
        return True

    def _read(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                msg = decode(line)
            except ProtocolError as e:
                if "protocol" in str(e):  # a zygote of another version: never used
                    log.warning("warm worker refused: %s", e)
                    self._failed = True
                    self._ready.set()
                continue
            if isinstance(msg, ZygoteReady):
                self._ready.set()
                continue
            child = self._children.get(getattr(msg, "id", None))
            if child is None:
                continue
            if isinstance(msg, Forked):
                child.pid = msg.pid
                child._started.set()
            elif isinstance(msg, Exited):
                self._children.pop(child.id, None)
                child._end(msg.returncode)
        # The zygote is gone; its children die with it (PDEATHSIG). Nobody waits forever.
        with self._lock:
            if not self._ready.is_set():
                log.warning("warm worker exited before it was ready; workers start cold from now on")
                self._failed = True
            self._ready.set()
            for child in list(self._children.values()):
                child._end(-signal.SIGKILL)
            self._children.clear()

    def ready(self) -> bool:
        """The zygote has started and is ready to fork."""
        return self._ready.is_set() and not self._failed and self._proc is not None and self._proc.poll() is None

    def spawn(self, job_path: str, out_path: str, err_path: str, env: dict[str, str],
              device: str = "auto", cwd: str | None = None) -> ForkedChild | None:
        with self._lock:
            if not self._start_locked(device):
                return None
            proc = self._proc
        if not self._ready.wait(READY_TIMEOUT) or proc.poll() is not None or self._failed:
            return None
        child = ForkedChild(next(self._ids))
        with self._lock:
            self._children[child.id] = child
        cmd = ForkJob(child.id, job_path, out_path, err_path, env, cwd)
        try:
            assert proc.stdin is not None
            proc.stdin.write(encode(cmd).encode())
            proc.stdin.flush()
        except (OSError, ValueError):
            with self._lock:
                self._children.pop(child.id, None)
            return None
        child._started.wait(READY_TIMEOUT)
        if child.pid == 0:  # the zygote died before forking it
            return None
        return child

    def close(self) -> None:
        """Stop the zygote; it kills the children it still has."""
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            assert proc.stdin is not None
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

