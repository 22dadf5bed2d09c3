"""The parent's side of a worker: start a child, enforce the timeout, turn its death into a typed outcome.

Each job runs in its own process group so that a timeout or a cancel kills the child and anything it
started. The child's stderr goes to a file (no pipe to fill up); its tail is kept for crash messages such as
glibc's "malloc(): unaligned tcache chunk detected".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .child import PARENT_ENV
from .pool import ForkedChild, WarmPool
from .protocol import read_events


@dataclass
class WorkerOutcome:
    events: list[dict[str, Any]] = field(default_factory=list)
    returncode: int | None = None
    timed_out: bool = False
    cancelled: bool = False
    stderr_tail: str = ""
    seconds: float = 0.0
    warm: bool = False  # forked from the warm zygote rather than started cold

    @property
    def completed(self) -> bool:
        return any(e.get("event") == "done" for e in self.events)

    @property
    def signal_name(self) -> str | None:
        if self.returncode is not None and self.returncode < 0:
            try:
                return signal.Signals(-self.returncode).name
            except ValueError:
                return f"signal {-self.returncode}"
        return None

    def last_stage(self) -> dict[str, Any] | None:
        stages = [e for e in self.events if e.get("event") == "stage"]
        return stages[-1] if stages else None


class WorkerJob:
    """One job in one child process; `cancel()` from any thread kills it."""

    def __init__(self, job: dict[str, Any], timeout: float, env: dict[str, str] | None = None,
                 on_stage=None, pool: WarmPool | None = None):
        self.job, self.timeout = job, timeout
        self.env = env
        self.on_stage = on_stage  # called (from this thread) with each "stage" event as the child starts it
        self.pool = pool  # a warm zygote to fork from; a cold process when None or unusable
        self.warm = False
        self._proc: subprocess.Popen | ForkedChild | None = None
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        self._cancelled.set()
        self._kill()

    def _kill(self) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def run(self) -> WorkerOutcome:
        with tempfile.TemporaryDirectory(prefix="kernel-lsp-") as tmp:
            job_path, out_path, err_path = (os.path.join(tmp, n) for n in ("job.json", "events.jsonl", "stderr"))
            with open(job_path, "w", encoding="utf-8") as f:
                json.dump(self.job, f)
            env = dict(os.environ if self.env is None else self.env)
            env.setdefault("PYTHONUNBUFFERED", "1")
            env[PARENT_ENV] = str(os.getpid())  # a cold child dies with us (PDEATHSIG), even if we are SIGKILLed
            start = time.monotonic()
            outcome = WorkerOutcome()
            with open(err_path, "wb") as err:
                if self._cancelled.is_set():
                    outcome.cancelled = True
                    return outcome
                forked = (self.pool.spawn(job_path, out_path, err_path, env, self.job.get("device", "auto"))
                          if self.pool is not None else None)
                self.warm = forked is not None
                self._proc = forked or subprocess.Popen(
                    [sys.executable, "-m", "kernel_lsp.worker.child", job_path, out_path],
                    stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=env, start_new_session=True,
                )
                if self._cancelled.is_set():  # cancelled while it was starting
                    self._kill()
                outcome.returncode = self._wait(out_path, start)
                if outcome.returncode is None:
                    outcome.timed_out = True
                    self._kill()
                    outcome.returncode = self._proc.wait()
                # The child may have started processes of its own: they die with its group.
                self._kill_group_leftovers()
            outcome.cancelled = self._cancelled.is_set()
            outcome.warm = self.warm
            outcome.seconds = time.monotonic() - start
            outcome.events = read_events(out_path)
            with open(err_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 4000))
                outcome.stderr_tail = f.read().decode("utf-8", "replace")
            return outcome

    def _wait(self, out_path: str, start: float) -> int | None:
        """Wait for the child, forwarding its stage events; None when the timeout passed."""
        offset = 0
        while True:
            try:
                return self._proc.wait(timeout=0.1)
            except subprocess.TimeoutExpired:
                pass
            if self.on_stage is not None:
                offset = self._forward_stages(out_path, offset)
            if time.monotonic() - start > self.timeout:
                return None

    def _forward_stages(self, out_path: str, offset: int) -> int:
        try:
            with open(out_path, encoding="utf-8") as f:
                f.seek(offset)
                chunk = f.read()
        except FileNotFoundError:
            return offset
        complete = chunk[: chunk.rfind("\n") + 1]
        for line in complete.splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if event.get("event") == "stage":
                try:
                    self.on_stage(event)
                except Exception:
                    pass
        return offset + len(complete.encode("utf-8"))

    def _kill_group_leftovers(self) -> None:
        if self._proc is not None:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
