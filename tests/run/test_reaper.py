"""The reaper (run/reaper.py) ends its command when its parent process dies, and only then: not when the thread
that started it ends (a warm-up thread, a Ray actor's job thread), as PR_SET_PDEATHSIG would."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time

from kernel_lsp.run import reaper
from kernel_lsp.run.child import PARENT_ENV
from tests.lsp.rawclient import alive, wait_ended

SLEEPER = [sys.executable, "-c", "import os, time; print(os.getpid(), flush=True); time.sleep(120)"]


def test_reaper_outlives_the_thread_that_started_it():
    procs, pids = [], []

    def start():  # as a warm-up thread does: start the worker, wait until it runs, end
        proc = subprocess.Popen(reaper.command(SLEEPER), stdout=subprocess.PIPE, text=True,
                                env={**os.environ, PARENT_ENV: str(os.getpid())}, start_new_session=True)
        procs.append(proc)
        pids.append(int(proc.stdout.readline()))

    thread = threading.Thread(target=start)
    thread.start()
    thread.join()
    (proc,), (command,) = procs, pids
    try:
        time.sleep(1.0)  # the thread is gone; a parent-death signal would have come by now
        assert proc.poll() is None and alive(command)
    finally:
        reaper.stop(proc)
    assert wait_ended(command)


def test_reaper_ends_its_command_when_its_parent_dies():
    parent = textwrap.dedent(f"""
        import os, subprocess, sys, time
        from kernel_lsp.run import reaper
        env = {{**os.environ, {PARENT_ENV!r}: str(os.getpid())}}
        p = subprocess.Popen(reaper.command({SLEEPER!r}), stdout=subprocess.PIPE, text=True, env=env)
        print(p.stdout.readline().strip(), flush=True)
        time.sleep(120)
    """)
    proc = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True)
    command = int(proc.stdout.readline())
    assert alive(command)
    proc.kill()  # SIGKILL: the parent gets no chance to stop anything itself
    proc.wait()
    assert wait_ended(command), "the reaper's command outlived the reaper's parent"
