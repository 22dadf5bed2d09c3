"""The parent's side of one long-lived worker (serve.py): a GPU's, or one behind a `runner` command.

A `PersistentWorker` owns one process speaking serve.py's protocol (typed messages, protocol.py) over its stdio. Its state is explicit and
logged at each change (not started, starting, ready, busy, dead); a failed start is a state, not an exception,
and becomes a clear finding for the job that needed it. Any fault replaces the process: a timeout or a cancel
that the job does not honour within CANCEL_GRACE kills its process group; a crash (segfault, abort, a CUDA fault
that makes the worker exit) is seen as EOF on its stdout. The next job starts a fresh one.

executor.py's `WorkerPoolExecutor` hands out idle workers: one job per worker at a time, so one timing job per GPU.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Callable

from ..device import visible_gpus  # noqa: F401  (the executors import it from here)
from ..jobs import LIVE, CheckJob, Preview, SandboxOptions, Stage
from . import reaper
from .child import PARENT_ENV, WORKDIR_ENV
from .outcome import TimeLimit, WorkerOutcome
from .protocol import (CancelJob, JobEnd, JobEvent, ProtocolError, RunJob, WorkerReady, decode, decode_event,
                       encode)

log = logging.getLogger(__name__)

READY_TIMEOUT = 180.0  # seconds for a worker to import torch and triton and open a CUDA context (or ssh in)
CANCEL_GRACE = 3.0  # seconds a cancelled job has to stop before its worker is killed


def local_command(device: str, sandbox: SandboxOptions | None = None) -> list[str]:
    """`kernel-lsp worker` on this machine: serve.py in a reaper (nothing its jobs start outlives it)."""
    return reaper.command([sys.executable, "-m", "kernel_lsp.run.serve", "--device", device,
                           *sandbox_args(sandbox)])


def sandbox_args(sandbox: SandboxOptions | None) -> list[str]:
    return ["--sandbox", json.dumps(sandbox.to_dict())] if sandbox is not None else []


class PersistentWorker:
    def __init__(self, command: list[str], env: dict[str, str] | None = None, name: str = "worker"):
        self.command, self.env, self.name = command, env, name
        self.state = "not started"
        self._proc: subprocess.Popen | None = None
        self._lines: queue.Queue = queue.Queue()
        self._stderr = tempfile.NamedTemporaryFile(prefix="kernel-lsp-worker-", suffix=".log", delete=False)
        self._ids = 0
        self._workdir: str | None = None  # the worker's private folder, removed once the worker has ended
        self.info: dict = {}
        self.lock = threading.Lock()  # held by the job using this worker

    def _set(self, state: str) -> None:
        if state != self.state:
            log.info("%s: %s -> %s", self.name, self.state, state)
            self.state = state

    def stderr_tail(self, limit: int = 4000) -> str:
        try:
            with open(self._stderr.name, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - limit))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> str | None:
        """Start the process and wait until it is ready; None on success, else why it failed."""
        if self.alive() and self.state in ("ready", "busy"):
            return None
        self.kill()
        self._set("starting")
        env = dict(os.environ if self.env is None else self.env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        env[PARENT_ENV] = str(os.getpid())
        self._workdir = tempfile.mkdtemp(prefix="kernel-lsp-worker-")
        env[WORKDIR_ENV] = self._workdir  # a runner's shell does not pass it on: a remote worker makes its own
        self._lines = queue.Queue()
        try:
            self._proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=self._stderr, env=env, start_new_session=True)
        except OSError as e:
            self._set("dead")
            return f"`{shlex.join(self.command)}` could not be started: {e.strerror or e}"
        threading.Thread(target=self._read, args=(self._proc, self._lines), name=f"{self.name}-stdout",
                         daemon=True).start()
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            try:
                message = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.kill()
                return f"`{shlex.join(self.command)}` did not become ready within {READY_TIMEOUT:.0f} s"
            if message is None:
                code = self._proc.wait()
                self._set("dead")
                tail = self.stderr_tail().strip().splitlines()
                return (f"`{shlex.join(self.command)}` exited with status {code} before it was ready"
                        + (f": {tail[-1][:300]}" if tail else ""))
            if isinstance(message, ProtocolError):  # a worker of another kernel-lsp version
                self.kill()
                return f"`{shlex.join(self.command)}` was refused: {message}"
            if isinstance(message, WorkerReady):
                self.info = message.to_dict()
                self._set("ready")
                return None

    @staticmethod
    def _read(proc: subprocess.Popen, lines: queue.Queue) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            try:
                lines.put(decode(raw))
            except ProtocolError as e:
                if "protocol" in str(e):
                    lines.put(e)  # a ready message of another version: refused by start()
                continue  # not ours (a stray write by a runner's shell): skipped
        lines.put(None)

    def kill(self) -> None:
        """Stop the worker and everything it started: SIGTERM to its reaper, then its process group."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            reaper.stop(proc)
        if proc is not None:
            self._set("dead")
        if self._workdir is not None and (proc is None or proc.poll() is not None):
            shutil.rmtree(self._workdir, ignore_errors=True)  # what the worker's jobs left there goes with it
            self._workdir = None

    def close(self) -> None:
        """Ask the worker to end (EOF on its stdin), then make sure it has."""
        proc = self._proc
        if proc is None:
            return
        try:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()
        try:
            os.unlink(self._stderr.name)
        except OSError:
            pass

    def _send(self, message) -> bool:
        try:
            assert self._proc is not None and self._proc.stdin is not None
            self._proc.stdin.write(encode(message).encode())
            self._proc.stdin.flush()
            return True
        except (OSError, ValueError):
            return False

    def run(self, job: CheckJob, files: dict[str, str] | None, timeout: float,
            on_stage: Callable[[Stage | Preview], None] | None = None, cancel: threading.Event | None = None) -> WorkerOutcome:
        """Run one job. The caller holds `self.lock`."""
        outcome = WorkerOutcome(worker=self.name)
        outcome.warm = self.alive() and self.state == "ready"
        began = time.monotonic()
        failure = self.start()
        if not outcome.warm:
            outcome.start_seconds = round(time.monotonic() - began, 3)
            if failure is None:  # else `info` is still the previous process's
                outcome.startup = dict(self.info.get("startup") or {})
        if failure is not None:
            outcome.start_failed = failure
            outcome.stderr_tail = self.stderr_tail()
            return outcome
        self._ids += 1
        job_id = self._ids
        start = time.monotonic()
        limit = TimeLimit(timeout, start)
        self._set("busy")
        if not self._send(RunJob(job_id, job, files)):
            return self._died(outcome, start)
        cancel_sent_at = None
        while True:
            if cancel is not None and cancel.is_set() and cancel_sent_at is None:
                self._send(CancelJob(job_id))
                cancel_sent_at = time.monotonic()
                outcome.cancelled = True
            if cancel_sent_at is not None and time.monotonic() - cancel_sent_at > CANCEL_GRACE:
                self.kill()  # the job did not stop in time (stuck in a kernel): the worker goes
                break
            if limit.passed():
                outcome.timed_out, outcome.waited_s = True, limit.left_out()
                self.kill()
                break
            try:
                message = self._lines.get(timeout=0.1)
            except queue.Empty:
                continue
            if message is None:
                return self._died(outcome, start)
            if getattr(message, "id", None) != job_id:
                continue  # the tail of an earlier, cancelled job
            if isinstance(message, JobEvent):
                event = decode_event(message.event)
                if event is None:
                    continue
                outcome.events.append(event)
                limit.saw(event)
                if isinstance(event, LIVE) and on_stage is not None:
                    try:
                        on_stage(event)
                    except Exception:
                        pass
            elif isinstance(message, JobEnd):
                outcome.cancelled = outcome.cancelled or message.cancelled
                if message.exiting:
                    self._retire()  # the job is complete; the process leaves and the next job starts a new one
                else:
                    self._set("ready")
                break
        outcome.seconds = time.monotonic() - start
        if not self.alive() and not outcome.completed:
            outcome.returncode = self._proc.returncode if self._proc is not None else None
            outcome.stderr_tail = self.stderr_tail()
        return outcome

    def _retire(self) -> None:
        proc = self._proc
        if proc is not None:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        self._set("dead")

    def _died(self, outcome: WorkerOutcome, start: float) -> WorkerOutcome:
        proc = self._proc
        outcome.returncode = proc.wait() if proc is not None else None
        outcome.seconds = time.monotonic() - start
        outcome.stderr_tail = self.stderr_tail()
        self._set("dead")
        return outcome
