"""A worker child: `python -m kernel_lsp.run.child JOB.json EVENTS WORKDIR`.

Reads one job, connects to its parent's event socket (EVENTS ending in .sock; else a file to append to), enters
the sandbox (sandbox.py: WORKDIR is its private folder), runs the job, sends events, and kills whatever the checked
code left running. A fault of kernel-lsp itself becomes a KL900
finding, never a silent exit; a fault of the user's code that kills the process (segfault, abort) is diagnosed by
the parent.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import traceback

from ..codes import severity_of
from ..jobs import CheckJob, Device, Done, FindingEvent, JobKind, Stat
from ..model import Finding, Span
from ..checker.problem.errors import is_out_of_memory
from . import players
from .protocol import EventWriter, read_job
from .sandbox import single_threaded

PR_SET_NAME, PR_SET_PDEATHSIG = 15, 1
PARENT_ENV = "KERNEL_LSP_PARENT_PID"
WORKDIR_ENV = "KERNEL_LSP_WORKDIR"  # a long-lived worker's private folder, made and removed by its parent


def prctl(option: int, value) -> None:
    """Linux prctl(2); a no-op where it does not exist."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def kill_group(pid: int) -> bool:
    """SIGKILL the process group that `pid` leads (a process started in a session of its own): the process and
    anything it started, also after the leader itself has exited (its group may outlive it). False when there is
    no such group or it may not be signalled."""
    try:
        os.killpg(pid, signal.SIGKILL)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def die_with_parent(expected_parent: int | None) -> None:
    """Ask the kernel for SIGKILL when the parent dies (even by SIGKILL); exit now if it already has."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if expected_parent and os.getppid() != expected_parent:
        os._exit(1)


class NoDevice(RuntimeError):
    """`device = cuda` on a machine where torch sees no CUDA GPU."""


def start_device(requested: str) -> str:
    """`choose_device`, and on a GPU CUDA initialised (before the process confines itself)."""
    device = choose_device(requested)
    if device == "cuda":
        import torch
        torch.cuda.init()
    return device


def choose_device(requested: str) -> str:
    """Pick where kernels run, before triton is imported: TRITON_INTERPRET is read at import time."""
    if requested == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
        single_threaded(os.environ)
        return "cpu"
    import torch
    if torch.cuda.is_available():
        os.environ.pop("TRITON_INTERPRET", None)
        return "cuda"
    if requested == "cuda":
        raise NoDevice("device is cuda, but torch sees no CUDA GPU on this machine: use device auto or cpu, or a "
                       "runner that reaches a GPU")
    os.environ["TRITON_INTERPRET"] = "1"
    return "cpu"


def open_events(path: str):
    """Where events go: the parent's Unix socket (`*.sock`: what was sent is out of the checked code's reach), else
    a file."""
    if not path.endswith(".sock"):
        return open(path, "a", encoding="utf-8")
    import socket
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    out = sock.makefile("w", encoding="utf-8")
    sock.close()  # the file object keeps the connection
    return out


def main(argv: list[str]) -> int:
    job_path, out_path = argv[1], argv[2]
    workdir = argv[3] if len(argv) > 3 else os.path.join(os.path.dirname(os.path.abspath(out_path)), "work")
    parent = os.environ.get(PARENT_ENV)
    die_with_parent(int(parent) if parent and parent.isdigit() else None)
    os.environ.pop(PARENT_ENV, None)
    job = read_job(job_path)
    with open_events(out_path) as out:
        w = EventWriter(out, numbered=True)
        emit = EventWriter.emit  # the original: what the checked code may replace, the last findings bypass
        from .sandbox import enter
        w.emit(Stat("sandbox", 1 if job.sandbox.enabled else 0))
        if job.kind is JobKind.CHECK:
            players.prestart(job.device)  # before this process confines itself
        # The device too, CUDA started, as a long-lived worker does (serve.py): chosen after confining itself, a fresh
        # child on a fresh H100 saw no GPU (KL303 for every file with KERNEL_LSP_WARM=0; a first CUDA start may
        # create device files, /dev/nvidia-uvm, which the sandbox forbids).
        try:
            chosen: str | Exception = start_device(job.device)
        except Exception as e:  # said below, as a finding, once the events are confined too
            chosen = e
        confined = enter(job.sandbox, workdir)
        if os.environ.get("KERNEL_LSP_LOG") == "debug":
            sys.stderr.write(f"kernel-lsp job: {confined}\n")
        try:
            if isinstance(chosen, Exception):
                raise chosen
            job.device = chosen
            w.emit(Device(job.device))
            if job.kind is JobKind.CHECK:
                from ..checker.problem.loader import warm_meta_device
                from ..checker.pipeline import run_check
                from .tamper import Snapshot, finding_for
                warm_meta_device()  # torch._dynamo wraps torch.manual_seed when it loads: before the snapshot
                pristine = Snapshot()
                run_check(job, w, players.connector(job.sandbox))
                tampered = finding_for(pristine.changed(), job.path, job.anchor)
                if tampered is not None:
                    emit(w, FindingEvent(tampered))
            else:
                raise ValueError(f"unknown job kind {job.kind!r}")
        except NoDevice as e:
            w.finding(Finding(job.path, job.anchor, severity_of("KL303"), "KL303", f"no worker to run this file: {e}",
                              source="kernel-lsp.worker"))
        except MemoryError as e:
            w.finding(_oom_finding(job, f"host memory ran out: {e}"))
        except Exception as e:
            if is_out_of_memory(e):
                w.finding(_oom_finding(job, str(e).splitlines()[0]))
            elif type(e).__name__ != "DeviceFault":  # a GPU fault is reported by the pipeline, with its stage
                w.finding(Finding(job.path, Span(0), severity_of("KL900"), "KL900",
                                  "kernel-lsp failed while checking this file: "
                                  + traceback.format_exc(limit=-3).strip().splitlines()[-1],
                                  data={"traceback": traceback.format_exc()}))
        from ..player.isolate import kill_descendants
        players.close_owned()
        left = kill_descendants()
        if left:
            w.stat("processes_killed", left)
        emit(w, Done())
    return 0


def _oom_finding(job: CheckJob, detail: str) -> Finding:
    return Finding(job.path, job.anchor, severity_of("KL302"), "KL302",
                   f"out of memory while checking this file ({detail[:200]}); on a GPU, check one file at a time "
                   "(--jobs 1) or lower the problem's sizes", source="kernel-lsp.worker")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
