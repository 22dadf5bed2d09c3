"""A worker child: `python -m kernel_lsp.worker.child JOB.json EVENTS.jsonl`.

Reads one job, runs it, appends events. A fault of kernel-lsp itself becomes a KL900 finding, never a silent
exit; a fault of the user's code that kills the process (segfault, abort) is diagnosed by the parent.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import traceback

from .protocol import EventWriter

PR_SET_NAME, PR_SET_PDEATHSIG = 15, 1
PARENT_ENV = "KERNEL_LSP_PARENT_PID"


def prctl(option: int, value) -> None:
    """Linux prctl(2); a no-op where it does not exist."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def die_with_parent(expected_parent: int | None) -> None:
    """Ask the kernel for SIGKILL when the parent dies (even by SIGKILL); exit now if it already has."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if expected_parent and os.getppid() != expected_parent:
        os._exit(1)


def choose_device(requested: str) -> str:
    """Pick where kernels run, before triton is imported: TRITON_INTERPRET is read at import time."""
    if requested == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
        return "cpu"
    import torch
    if torch.cuda.is_available():
        os.environ.pop("TRITON_INTERPRET", None)
        return "cuda"
    if requested == "cuda":
        raise RuntimeError("device = cuda was requested but no CUDA GPU is visible to torch")
    os.environ["TRITON_INTERPRET"] = "1"
    return "cpu"


def main(argv: list[str]) -> int:
    job_path, out_path = argv[1], argv[2]
    parent = os.environ.get(PARENT_ENV)
    die_with_parent(int(parent) if parent and parent.isdigit() else None)
    with open(job_path, encoding="utf-8") as f:
        job = json.load(f)
    with open(out_path, "a", encoding="utf-8") as out:
        w = EventWriter(out)
        try:
            job["device"] = choose_device(job.get("device", "auto"))
            w.emit("device", device=job["device"])
            if job["kind"] == "check":
                from ..engine.pipeline import run_check
                run_check(job, w)
            else:
                raise ValueError(f"unknown job kind {job['kind']!r}")
        except MemoryError as e:
            w.finding(_oom_finding(job, f"host memory ran out: {e}"))
        except Exception as e:
            if type(e).__name__ == "OutOfMemoryError":  # torch.OutOfMemoryError, without importing torch here
                w.finding(_oom_finding(job, str(e).splitlines()[0]))
                w.emit("done")
                return 0
            w.finding({"path": job.get("path", ""), "range": {"line": 0, "col": 0, "end_line": 0, "end_col": 1},
                       "severity": "error", "code": "KL900", "source": "kernel-lsp",
                       "message": "kernel-lsp failed while checking this file: "
                                  + traceback.format_exc(limit=-3).strip().splitlines()[-1],
                       "data": {"traceback": traceback.format_exc()}})
        w.emit("done")
    return 0


def _oom_finding(job: dict, detail: str) -> dict:
    return {"path": job.get("path", ""), "range": job.get("anchor") or {"line": 0, "col": 0, "end_line": 0, "end_col": 1},
            "severity": "error", "code": "KL302", "source": "kernel-lsp.worker",
            "message": f"out of memory while checking this file ({detail[:200]}); on a GPU, check one file at a "
                       "time (--jobs 1) or lower the problem's sizes", "data": {}}


if __name__ == "__main__":
    sys.exit(main(sys.argv))
