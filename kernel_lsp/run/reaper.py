"""`python -m kernel_lsp.run.reaper CMD...`: run CMD so that nothing it starts outlives it.

The reaper is a subreaper: every process CMD starts that loses its parent (a daemon that double-forked, a `setsid`
child whose parent exited) re-parents to the reaper instead of init. When CMD exits, when the reaper is asked to
stop (SIGTERM, SIGINT or SIGHUP), or when its own parent dies (it looks five times a second), it kills CMD and every
descendant, stopped first so none forks a replacement, then exits with CMD's status (dying by the same signal
when CMD died by one; 128 + the signal when stopped). While
CMD runs, orphans are left alone: a job's helper processes may legitimately outlive the process that started them;
the job's own end (child.py, serve.py) kills what it left behind.

The parent stops a wrapped process by SIGTERM to the reaper, never by killing the reaper's process group: that
would kill the reaper first, and CMD's orphans would escape to init. Checked code is confined by Landlock's signal
scope (sandbox.py), so it cannot signal the reaper, which stays outside the sandbox. Standard library only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from ..player import isolate

PARENT_ENV = "KERNEL_LSP_PARENT_PID"  # as child.py names it (not imported: this module stays light)


def command(cmd: list[str]) -> list[str]:
    """CMD wrapped in a reaper."""
    return [sys.executable, "-m", "kernel_lsp.run.reaper", *cmd]


def stop(proc, grace: float = 3.0) -> None:
    """Stop a reaper started with `command` (a Popen): SIGTERM, so it kills its whole tree; the process group is
    killed outright only if it has not exited within `grace` seconds."""
    if proc.poll() is not None:
        return
    try:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=grace)
    except (OSError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()


def main(argv: list[str]) -> int:
    if not argv:
        sys.stderr.write("usage: python -m kernel_lsp.run.reaper CMD [ARGS...]\n")
        return 2
    isolate.become_subreaper()
    # Not PR_SET_PDEATHSIG: the kernel sends that when the *thread* that started us ends, and a parent may start a
    # long-lived worker from a short-lived thread (a warm-up thread, a Ray actor's job thread). The loop below
    # watches the parent process instead: once it is gone, we have been re-parented.
    expected = os.environ.get(PARENT_ENV, "")
    parent = int(expected) if expected.isdigit() else os.getppid()
    if os.getppid() != parent:
        return 128 + int(signal.SIGTERM)  # the parent died before we could watch it
    stopping = {"signal": 0}

    def stop(signum, _frame):
        stopping["signal"] = signum

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    os.environ[PARENT_ENV] = str(os.getpid())  # CMD dies with the reaper, and checks that it is its parent
    try:
        # Same stdio, same process group as the reaper (the parent signals the reaper alone).
        child = subprocess.Popen(argv, start_new_session=False)
    except OSError as e:
        sys.stderr.write(f"{argv[0]}: cannot start: {e.strerror or e}\n")
        return 127
    code = None
    while code is None and not stopping["signal"]:
        if os.getppid() != parent:
            stopping["signal"] = signal.SIGTERM
            break
        try:
            code = child.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            continue
        except InterruptedError:
            continue
    isolate.kill_descendants()
    if code is None:
        child.wait()
        return 128 + stopping["signal"]
    if code < 0:  # CMD died by a signal: so does the reaper, so the parent reads the same status
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
