"""The Ray side of the Ray executor (ray_executor.py): what runs in a Ray worker process or actor.

`run_task` is the Ray task of one CPU job, run through a `LocalExecutor` kept per Ray worker process (Ray reuses its
workers, so the zygote and the re-run's harness stay warm across jobs); `warm_task` starts that executor's zygote
ahead of the jobs. `DeviceWorker` is the actor of one GPU, holding `WorkerPoolExecutor.local_gpus` for the GPU Ray
gave it. `who_runs_here` says which kernel-lsp a Ray worker imports, and where.

Both run a job through `serve_job`: the job's files are written under a fresh root (serve.place_files), the job runs
there through an ordinary executor of that machine, and its live events and then its `WorkerOutcome` stream back as
plain data (protocol.outcome_to_dict), with that root taken out of every path so the paths are the caller's again.
"""

from __future__ import annotations

import os
import queue
import shutil
import socket
import threading
import traceback
from typing import Any, Iterator

from .. import __version__
from ..codes import severity_of
from ..jobs import CheckJob, Done, FindingEvent, SandboxOptions, event_to_dict
from ..model import Finding, Span
from .local import Executor, LocalExecutor, WorkerPoolExecutor
from .outcome import WorkerOutcome
from .protocol import PROTOCOL, outcome_to_dict
from .serve import place_files

_LOCAL: dict[str, LocalExecutor] = {}
_LOCAL_LOCK = threading.Lock()


def _local_executor(sandbox: dict) -> LocalExecutor:
    """This Ray worker process's executor, kept between tasks so its zygote (and re-run harness) stay warm."""
    key = repr(sorted(sandbox.items()))
    with _LOCAL_LOCK:
        if key not in _LOCAL:
            _LOCAL[key] = LocalExecutor(1, "cpu", sandbox=SandboxOptions.from_dict(sandbox))
        return _LOCAL[key]


def who_runs_here() -> dict:
    """Which kernel-lsp a Ray worker imports, and where: RayExecutor's first task, and every job's first item."""
    return {"protocol": PROTOCOL, "version": __version__, "pid": os.getpid(), "host": socket.gethostname()}


def warm_task(sandbox: dict) -> int:
    _local_executor(sandbox).warm_up()
    return os.getpid()


def run_task(job: dict, files: dict[str, str] | None, timeout: float) -> Iterator[dict]:
    """A Ray task: one job on this Ray worker's CPU."""
    sandbox = job.get("sandbox") or {}
    yield from serve_job(_local_executor(sandbox), job, files, timeout, threading.Event())


class DeviceWorker:
    """A Ray actor holding one GPU's long-lived workers, `per_gpu` of them (the gpu-workers setting; its `num_gpus`
    decide which GPU: Ray sets CUDA_VISIBLE_DEVICES), the GPU's executor as on a machine of its own."""

    def __init__(self, device: str, sandbox: dict, per_gpu: int = 1):
        self.executor = WorkerPoolExecutor.local_gpus(device, sandbox=SandboxOptions.from_dict(sandbox),
                                                      per_gpu=per_gpu)
        self.executor.warm_up()
        self.cancels: dict[int, threading.Event] = {}

    def ping(self) -> list:
        """[host, pid]: which process this incarnation of the actor is (the job's first item says the same)."""
        return [socket.gethostname(), os.getpid()]

    def run(self, job_id: int, job: dict, files: dict[str, str] | None, timeout: float) -> Iterator[dict]:
        cancel = self.cancels.setdefault(job_id, threading.Event())
        try:
            yield from serve_job(self.executor, job, files, timeout, cancel)
        finally:
            self.cancels.pop(job_id, None)

    def cancel(self, job_id: int) -> None:
        self.cancels.setdefault(job_id, threading.Event()).set()


def serve_job(executor: Executor, job_dict: dict, files: dict[str, str] | None, timeout: float,
              cancel: threading.Event) -> Iterator[dict]:
    """Run one job here and stream it: who runs it, its live events, then its outcome, each as plain data with the
    shipped files' root taken out of every string (so paths are the caller's again). Closing the stream (a
    cancelled task) cancels the job and waits for its processes to end."""
    yield {"started": who_runs_here()}
    job = CheckJob.from_dict(job_dict)
    path = job.path
    root = place_files(job, files) if files else None
    items: queue.Queue = queue.Queue()

    def work() -> None:
        try:
            items.put(("outcome", executor.run(job, None, timeout, lambda e: items.put(("event", e)), cancel)))
        except BaseException as e:  # a fault of kernel-lsp itself: a finding, as serve.py makes it
            finding = Finding(path, Span(0), severity_of("KL900"), "KL900",
                              f"kernel-lsp failed in its Ray worker: {type(e).__name__}: {e}"[:400],
                              data={"traceback": traceback.format_exc()})
            items.put(("outcome", WorkerOutcome(events=[FindingEvent(finding), Done()])))

    thread = threading.Thread(target=work, name="kernel-lsp-ray-job", daemon=True)
    thread.start()
    try:
        while True:
            kind, value = items.get()
            if kind == "event":
                yield {"event": _unroot(event_to_dict(value), root)}
            else:
                yield {"outcome": _unroot(outcome_to_dict(value), root)}
                return
    finally:
        cancel.set()
        thread.join()
        if root:
            shutil.rmtree(root, ignore_errors=True)


def _unroot(value: Any, root: str | None) -> Any:
    """`value` with the shipped files' root removed from every string in it."""
    if not root:
        return value
    if isinstance(value, str):
        return value.replace(root, "")
    if isinstance(value, list):
        return [_unroot(v, root) for v in value]
    if isinstance(value, dict):
        return {k: _unroot(v, root) for k, v in value.items()}
    return value
