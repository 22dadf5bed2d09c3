"""The warm worker (a zygote that imports torch and triton once and forks per job) gives the same results as
a cold process, and its children are as isolated: killed by process group, dead when the zygote dies."""

from __future__ import annotations

import os
import signal
import time

from kernel_lsp.config import Settings
from kernel_lsp.check import CheckRequest, check_file
from kernel_lsp.worker.pool import WarmPool
from tests.conftest import CORPUS, FIXTURES
from tests.lsp.rawclient import kernel_lsp_processes, wait_gone


def _codes(report) -> list[tuple[str, int]]:
    return sorted((f.code, f.span.line) for f in report.findings)


def test_warm_and_cold_workers_agree():
    pool = WarmPool()
    try:
        path = CORPUS / "bug_relu_drops_nan.py"
        warm = check_file(CheckRequest(path, Settings(), CORPUS, pool=pool))
        cold = check_file(CheckRequest(path, Settings(), CORPUS))
        assert warm.stats["warm_workers"] == 1 and cold.stats["warm_workers"] == 0
        assert _codes(warm) == _codes(cold) == [("KL201", 15)]
        # A second warm job runs in a fresh fork: nothing the first job's user code did carries over.
        again = check_file(CheckRequest(path, Settings(), CORPUS, pool=pool))
        assert _codes(again) == _codes(warm) and again.stats["warm_workers"] == 1
    finally:
        pool.close()


def _alive(pid: int) -> bool:
    return pid in kernel_lsp_processes()


def _wait_dead(pid: int) -> bool:
    return wait_gone({pid}, timeout=10.0)


def _hanging_check(pool: WarmPool):
    """Start checking hang.py in a thread; return (thread, its running WorkerJob)."""
    import threading
    req = CheckRequest(FIXTURES / "faults" / "hang.py", Settings(timeout=120), FIXTURES / "faults", pool=pool)
    thread = threading.Thread(target=check_file, args=(req,), daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if req.jobs and req.jobs[0]._proc is not None and req.jobs[0]._proc.pid:
            return thread, req.jobs[0]
        time.sleep(0.05)
    raise AssertionError("the worker never started")


def test_timeout_kills_a_forked_child(tmp_path):
    pool = WarmPool()
    try:
        src = FIXTURES / "faults" / "hang.py"
        report = check_file(CheckRequest(src, Settings(timeout=8), FIXTURES / "faults", pool=pool))
        assert [f.code for f in report.findings] == ["KL301"]
        assert report.stats["warm_workers"] == 1
    finally:
        pool.close()


def test_children_die_with_the_zygote():
    pool = WarmPool()
    thread, job = _hanging_check(pool)
    time.sleep(1.0)  # let it reach the user's endless loop
    child = job._proc.pid
    assert job.warm and _alive(child)
    os.kill(pool._proc.pid, signal.SIGKILL)  # the zygote dies: the kernel kills its children (PDEATHSIG)
    assert _wait_dead(child), "a forked worker outlived its zygote"
    thread.join(timeout=10)
    assert not thread.is_alive()  # and the parent is not left waiting for it
    pool.close()


def test_closing_the_pool_kills_running_children():
    pool = WarmPool()
    _, job = _hanging_check(pool)
    time.sleep(1.0)
    assert job.warm and _alive(job._proc.pid)
    child, zygote = job._proc.pid, pool._proc.pid
    pool.close()  # what the parent's exit does: EOF on the zygote's stdin
    assert _wait_dead(child) and _wait_dead(zygote)
