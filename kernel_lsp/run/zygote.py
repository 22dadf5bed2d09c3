"""The warm worker: `python -m kernel_lsp.run.zygote`, a fork server for worker children.

Importing torch and triton costs seconds; the zygote pays it once, then forks one child per job, so a job
starts in tens of milliseconds with both already imported. Each child is what `kernel_lsp.run.child`
would be as a fresh process: its own session (process group) that the parent kills by pid, stdout and
stderr in the job's stderr file, and a copy of the zygote's memory in which no user code has ever run.

Used only where kernels run under the interpreter (no GPU): CUDA cannot be used in a child forked after it
was initialised, and the zygote never initialises it.

Protocol (protocol.py): parent to zygote on stdin, `ForkJob`; zygote to parent on stdout, `ZygoteReady` once,
`Forked` when a child started, `Exited` when it ended. On EOF of stdin (the parent is gone) the zygote kills every
child it started and exits; each child also asks the kernel for SIGKILL when the zygote dies.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback

from ..player import isolate
from .child import PARENT_ENV, PR_SET_NAME, die_with_parent, prctl
from .protocol import ForkJob, ZygoteReady
from .sandbox import single_threaded

CHILD_NAME = b"kernel-lsp-job"  # what ps and /proc/PID/comm show for a forked worker
ZYGOTE_NAME = b"kernel-lsp-warm"


def _warm() -> None:
    os.environ["TRITON_INTERPRET"] = "1"
    single_threaded(os.environ)  # before torch (and numpy) are imported here and in the players' server
    from . import players
    # The players' own fork server (run/players.py): it imports torch beside this process's own imports, and every
    # job forked here asks it for its player.
    players.install(players.PlayerServer("cpu", dict(os.environ)))
    import torch  # noqa: F401
    import triton  # noqa: F401
    from ..checker import pipeline  # noqa: F401  (imports the verifier and the stages it drives)
    from ..checker.problem.loader import warm_meta_device
    warm_meta_device()


def _child(zygote: int, cmd: ForkJob) -> None:
    """Runs in the forked child; never returns."""
    code = 1
    try:
        os.setsid()
        die_with_parent(zygote)  # and if the zygote died between fork and here, exit now
        prctl(PR_SET_NAME, CHILD_NAME)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        isolate.redirect_stdio(cmd.err)
        os.environ.clear()
        os.environ.update(cmd.env)
        if cmd.cwd:
            os.chdir(cmd.cwd)
        os.environ[PARENT_ENV] = str(zygote)
        os.environ.setdefault("TRITON_INTERPRET", "1")
        from .child import main
        code = main(["child", cmd.job, cmd.out] + ([cmd.cwd] if cmd.cwd else []))
        sys.stdout.flush()
        sys.stderr.flush()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:
        try:
            traceback.print_exc()
            sys.stderr.flush()
        except BaseException:
            pass
    os._exit(code)


def serve_forks() -> int:
    prctl(PR_SET_NAME, ZYGOTE_NAME)
    _warm()
    me = os.getpid()
    # A subreaper (isolate.fork_server): what a job starts and abandons (a `setsid` daemon whose parent exited)
    # re-parents here instead of to init, and is killed at once.
    from . import players
    keep = frozenset({players.installed().proc.pid}) if players.installed() else frozenset()
    return isolate.fork_server(ZygoteReady(me).to_dict() | {"type": "ZygoteReady"},
                               lambda request: _child(me, ForkJob.from_dict(
                                   {k: v for k, v in request.items() if k != "type"})), keep)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in a terminal reaches the parent, which decides
    code = serve_forks()
    sys.stdout.flush()
    os._exit(code)  # every child is gone; tearing down torch's modules would only keep the parent waiting
