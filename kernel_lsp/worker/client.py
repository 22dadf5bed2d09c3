"""The parent's side of a worker job: run it, enforce the timeout, turn its end into a typed outcome.

Where it runs: on a long-lived worker when one is given (a GPU's, or the runner's: persistent.py); else in a
child forked from the warm zygote (pool.py); else in a fresh process. A forked or fresh child runs in its own
process group, so that a timeout or a cancel kills the child and anything it started. Its stderr goes to a file
(no pipe to fill up); the tail is kept for crash messages such as glibc's "malloc(): unaligned tcache chunk
detected".
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from typing import Callable

from ..jobs import LIVE, CheckJob, Preview, Stage
from .child import PARENT_ENV, kill_group
from .outcome import WorkerOutcome
from .persistent import PersistentPool
from .pool import ForkedChild, WarmPool
from .protocol import TornLine, parse_event, read_events, write_job


class WorkerJob:
    """One job; `cancel()` from any thread stops it (kills its child, or interrupts it on a long-lived worker)."""

    def __init__(self, job: CheckJob, timeout: float, env: dict[str, str] | None = None,
                 on_stage: Callable[[Stage | Preview], None] | None = None, pool: WarmPool | None = None,
                 persistent: PersistentPool | None = None, files: dict[str, str] | None = None):
        self.job, self.timeout = job, timeout
        self.env = env
        self.on_stage = on_stage  # called (from this thread) with each "stage" event as the child starts it
        self.pool = pool  # a warm zygote to fork from; a cold process when None or unusable
        self.persistent = persistent  # long-lived workers: used for every job when given
        self.files = files  # file texts shipped with the job (a runner on another machine)
        self.warm = False
        self._proc: subprocess.Popen | ForkedChild | None = None
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        self._cancelled.set()
        self._kill()

    def _kill(self) -> None:
        """Kill the child's process group: the child and anything it started, also after the child itself
        has exited (its group may outlive it)."""
        if self._proc is not None and self._proc.pid:
            kill_group(self._proc.pid)

    def run(self) -> WorkerOutcome:
        if self.persistent is not None:
            return self._run_persistent(self.persistent)
        with tempfile.TemporaryDirectory(prefix="kernel-lsp-") as tmp:
            job_path, out_path, err_path = (os.path.join(tmp, n) for n in ("job.json", "events.jsonl", "stderr"))
            write_job(self.job, job_path)
            env = dict(os.environ if self.env is None else self.env)
            env.setdefault("PYTHONUNBUFFERED", "1")
            env[PARENT_ENV] = str(os.getpid())  # a cold child dies with us (PDEATHSIG), even if we are SIGKILLed
            start = time.monotonic()
            outcome = WorkerOutcome()
            with open(err_path, "wb") as err:
                if self._cancelled.is_set():
                    outcome.cancelled = True
                    return outcome
                forked = (self.pool.spawn(job_path, out_path, err_path, env, self.job.device)
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
                self._kill()
            outcome.cancelled = self._cancelled.is_set()
            outcome.warm = self.warm
            outcome.seconds = time.monotonic() - start
            outcome.events = read_events(out_path)
            with open(err_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 4000))
                outcome.stderr_tail = f.read().decode("utf-8", "replace")
            return outcome

    def _run_persistent(self, pool: PersistentPool) -> WorkerOutcome:
        worker = pool.acquire(self._cancelled)
        if worker is None:
            return WorkerOutcome(cancelled=True)
        try:
            outcome = worker.run(self.job, self.files, self.timeout, self.on_stage, self._cancelled)
        finally:
            pool.release(worker)
        self.warm = outcome.warm
        return outcome

    def _wait(self, out_path: str, start: float) -> int | None:
        """Wait for the child, forwarding its stage events; None when the timeout passed."""
        offset = 0
        while True:
            try:
                code = self._proc.wait(timeout=0.1)
                if self.on_stage is not None:
                    self._forward_stages(out_path, offset)  # what came after the last poll
                return code
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
                event = parse_event(line)
            except TornLine:
                continue
            if isinstance(event, LIVE):
                try:
                    self.on_stage(event)
                except Exception:
                    pass
        return offset + len(complete.encode("utf-8"))
