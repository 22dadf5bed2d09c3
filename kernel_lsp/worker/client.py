"""The parent's side of one job in a child process: start it (forked from the warm zygote, or fresh), enforce the
timeout and the cancel, turn its end into a typed outcome.

A forked or fresh child runs in its own process group, so that a timeout or a cancel kills the child and anything
it started. Its stderr goes to a file (no pipe to fill up); the tail is kept for crash messages such as glibc's
"malloc(): unaligned tcache chunk detected". Used by executor.LocalExecutor; front ends never call it.
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
from . import reaper, sandbox
from .child import PARENT_ENV, kill_group
from .outcome import WorkerOutcome
from .pool import ForkedChild, WarmPool
from .protocol import TornLine, parse_event, read_events, write_job

POLL = 0.1  # seconds between looks at the child: its exit, its new events, the timeout and the cancel


def run_in_child(job: CheckJob, timeout: float, cancel: threading.Event, env: dict[str, str] | None = None,
                 on_event: Callable[[Stage | Preview], None] | None = None,
                 pool: WarmPool | None = None) -> WorkerOutcome:
    """Run one job in a child forked from `pool` (a cold process in a reaper when None or unusable) and wait for it.
    The child gets the sandbox's scrubbed environment and `work/` in the job's folder as its private folder."""
    with tempfile.TemporaryDirectory(prefix="kernel-lsp-") as tmp:
        job_path, out_path, err_path, work = (os.path.join(tmp, n) for n in ("job.json", "events.jsonl", "stderr",
                                                                              "work"))
        write_job(job, job_path)
        os.makedirs(work)
        env = sandbox.child_env(job.sandbox, env)
        env[PARENT_ENV] = str(os.getpid())  # a cold child dies with us (PDEATHSIG), even if we are SIGKILLed
        start = time.monotonic()
        outcome = WorkerOutcome()
        if cancel.is_set():
            outcome.cancelled = True
            return outcome
        with open(err_path, "wb") as err:
            forked = pool.spawn(job_path, out_path, err_path, env, job.device, work) if pool is not None else None
            outcome.warm = forked is not None
            proc: subprocess.Popen | ForkedChild = forked or subprocess.Popen(
                reaper.command([sys.executable, "-m", "kernel_lsp.worker.child", job_path, out_path, work]),
                stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=env, start_new_session=True, cwd=work,
            )
            outcome.returncode = _wait(proc, out_path, start, timeout, cancel, on_event)
            if outcome.returncode is None:
                outcome.timed_out = not cancel.is_set()
                _stop(proc)
                outcome.returncode = proc.wait()
            # The child may have started processes of its own: they die with it (the zygote and the reaper are
            # subreapers that kill what a job leaves; its process group goes too, also after it exited).
            _stop(proc)
        outcome.cancelled = cancel.is_set()
        outcome.seconds = time.monotonic() - start
        outcome.events = read_events(out_path, numbered=True)
        with open(err_path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4000))
            outcome.stderr_tail = f.read().decode("utf-8", "replace")
        return outcome


def _stop(proc) -> None:
    if isinstance(proc, subprocess.Popen):
        reaper.stop(proc)  # the reaper kills the child's whole tree, orphans included
    kill_group(proc.pid)


def _wait(proc, out_path: str, start: float, timeout: float, cancel: threading.Event,
          on_event: Callable | None) -> int | None:
    """Wait for the child, forwarding its live events; None when the timeout passed or the job was cancelled."""
    offset = 0
    while True:
        try:
            code = proc.wait(timeout=POLL)
            if on_event is not None:
                _forward(out_path, offset, on_event)  # what came after the last poll
            return code
        except subprocess.TimeoutExpired:
            pass
        if on_event is not None:
            offset = _forward(out_path, offset, on_event)
        if cancel.is_set() or time.monotonic() - start > timeout:
            return None


def _forward(out_path: str, offset: int, on_event: Callable) -> int:
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
                on_event(event)
            except Exception:
                pass
    return offset + len(complete.encode("utf-8"))
