"""The parent's side of one job in a child process: start it (forked from the warm zygote, or fresh), enforce the
timeout and the cancel, turn its end into a typed outcome.

A forked or fresh child runs in its own process group, so that a timeout or a cancel kills the child and anything
it started. Its stderr goes to a file (no pipe to fill up); the tail is kept for crash messages such as glibc's
"malloc(): unaligned tcache chunk detected". Used by executor.LocalExecutor; front ends never call it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Callable

from ..jobs import LIVE, CheckJob, Preview, Stage
from . import reaper, sandbox
from .child import PARENT_ENV, kill_group
from .outcome import TimeLimit, WorkerOutcome
from .pool import ForkedChild, WarmPool
from .protocol import TornLine, parse_event, parse_events, read_events, write_job

POLL = 0.1  # seconds between looks at the child: its exit, its new events, the timeout and the cancel


def run_in_child(job: CheckJob, timeout: float, cancel: threading.Event, env: dict[str, str] | None = None,
                 on_event: Callable[[Stage | Preview], None] | None = None,
                 pool: WarmPool | None = None) -> WorkerOutcome:
    """Run one job in a child forked from `pool` (a cold process in a reaper when None or unusable) and wait for it.
    The child gets the sandbox's scrubbed environment and `work/` in the job's folder as its private folder."""
    with tempfile.TemporaryDirectory(prefix="kernel-lsp-") as tmp:
        job_path, err_path, work = (os.path.join(tmp, n) for n in ("job.json", "stderr", "work"))
        write_job(job, job_path)
        os.makedirs(work)
        env = sandbox.child_env(job.sandbox, env)
        env[PARENT_ENV] = str(os.getpid())  # a cold child dies with us (PDEATHSIG), even if we are SIGKILLed
        start = time.monotonic()
        outcome = WorkerOutcome()
        if cancel.is_set():
            outcome.cancelled = True
            return outcome
        channel = EventChannel(tmp, "events")
        with open(err_path, "wb") as err:
            waits = pool is not None and not pool.ready()  # the zygote is still starting: its imports, this job's wait
            forked = (pool.spawn(job_path, channel.path, err_path, env, job.device, work) if pool is not None
                      else None)
            outcome.warm = forked is not None
            if forked is not None and waits:
                # `check --timings` shows it as the worker's start, not inside the job's last stage; the job's time and
                # its timeout count from the fork, as a long-lived worker's count from its start: the wait for the warm
                # worker's imports is not the checked code's time.
                outcome.start_seconds = round(time.monotonic() - start, 3)
                start += outcome.start_seconds
            if forked is None and pool is not None:
                # The zygote did not say it forked in time; if it forks later, that child finds no listener.
                channel.close()
                channel = EventChannel(tmp, "events-cold")
            try:
                proc: subprocess.Popen | ForkedChild = forked or subprocess.Popen(
                    reaper.command([sys.executable, "-m", "kernel_lsp.run.child", job_path, channel.path, work]),
                    stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=env, start_new_session=True, cwd=work,
                )
            except BaseException:
                channel.close()
                raise
            limit = TimeLimit(timeout, start)
            outcome.returncode = _wait(proc, channel, limit, cancel, on_event)
            if outcome.returncode is None:
                outcome.timed_out, outcome.waited_s = not cancel.is_set(), limit.left_out()
                _stop(proc)
                outcome.returncode = proc.wait()
            # The child may have started processes of its own: they die with it (the zygote and the reaper are
            # subreapers that kill what a job leaves; its process group goes too, also after it exited).
            _stop(proc)
        channel.close()
        outcome.cancelled = cancel.is_set()
        outcome.seconds = time.monotonic() - start
        outcome.events = channel.events()
        with open(err_path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4000))
            outcome.stderr_tail = f.read().decode("utf-8", "replace")
        return outcome


def _stop(proc) -> None:
    if isinstance(proc, subprocess.Popen):
        reaper.stop(proc)  # the reaper kills the child's whole tree, orphans included
    kill_group(proc.pid)


def _wait(proc, channel: "EventChannel", limit: TimeLimit, cancel: threading.Event,
          on_event: Callable | None) -> int | None:
    """Wait for the child, forwarding its live events; None when its time limit passed (its waits left out, as
    `limit` saw them) or the job was cancelled."""
    def seen(event) -> None:
        limit.saw(event)
        if on_event is not None:
            on_event(event)
    offset = 0
    while True:
        try:
            code = proc.wait(timeout=POLL)
            if on_event is not None:
                channel.settle()
                _forward(channel, offset, on_event)  # what came after the last poll
            return code
        except subprocess.TimeoutExpired:
            pass
        offset = _forward(channel, offset, seen)
        if cancel.is_set() or limit.passed():
            return None


def _forward(channel: "EventChannel", offset: int, on_event: Callable) -> int:
    chunk = channel.read(offset)
    complete = chunk[: chunk.rfind(b"\n") + 1]
    for line in complete.decode("utf-8", "replace").splitlines():
        try:
            event = parse_event(line)
        except TornLine:
            continue
        if isinstance(event, LIVE):
            try:
                on_event(event)
            except Exception:
                pass
    return offset + len(complete)


class EventChannel:
    """The child's events, through a Unix socket the child connects to before any checked code runs (child.py).

    The checked code runs in the child's process and may know it is being checked: a file of events there could be
    rewritten without its error lines (pygpubench's thread_fd exploit; numbered lines only showed a rewrite that
    renumbered nothing). What the child has sent through a socket is here, out of its reach: it can add lines, which
    the numbering shows, but not take any back. One connection is taken, then the socket's name is removed.
    Where the folder's path is too long for a socket's name, the child writes a file as before."""

    def __init__(self, folder: str, name: str):
        self.data = bytearray()
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._stop = threading.Event()
        self.path = os.path.join(folder, name + ".sock")
        self._listener: socket.socket | None = None
        if len(self.path.encode()) < 100:
            try:
                self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self._listener.bind(self.path)
                self._listener.listen(1)
            except OSError:
                self._listener = None
        if self._listener is None:
            self.path = os.path.join(folder, name + ".jsonl")
            self._done.set()
            return
        threading.Thread(target=self._receive, name="kernel-lsp-events", daemon=True).start()

    def _receive(self) -> None:
        listener = self._listener
        assert listener is not None
        conn = None
        try:
            listener.settimeout(POLL)
            while conn is None:
                try:
                    conn, _ = listener.accept()
                except socket.timeout:
                    if self._stop.is_set():  # asked to stop, and no connection waiting either
                        break
        except OSError:
            pass
        finally:
            listener.close()
            try:
                os.unlink(self.path)
            except OSError:
                pass
        try:
            if conn is None:
                return
            with conn:
                conn.settimeout(POLL)
                while True:
                    try:
                        chunk = conn.recv(1 << 16)
                    except socket.timeout:
                        if self._stop.is_set():
                            return
                        continue
                    except OSError:
                        return
                    if not chunk:
                        return
                    with self._lock:
                        self.data += chunk
        finally:
            self._done.set()

    def read(self, offset: int) -> bytes:
        """What came from `offset` on (a file, where the child writes one)."""
        if self.path.endswith(".jsonl"):
            try:
                with open(self.path, "rb") as f:
                    f.seek(offset)
                    return f.read()
            except FileNotFoundError:
                return b""
        with self._lock:
            return bytes(self.data[offset:])

    def settle(self, wait: float = 2.0) -> None:
        """Once the child has exited: wait (a little) for the rest of what it sent."""
        self._done.wait(wait)

    def close(self) -> None:
        """Stop listening and reading, once what is in the socket is taken (the child and what it started are gone,
        so what they sent is there to read at once)."""
        self._stop.set()
        self._done.wait(5.0)

    def events(self) -> list:
        if self.path.endswith(".jsonl"):
            return read_events(self.path, numbered=True)
        with self._lock:
            text = self.data.decode("utf-8", "replace")
        return parse_events(text.splitlines(keepends=True), numbered=True)
