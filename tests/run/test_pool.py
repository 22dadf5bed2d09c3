"""The warm worker (a zygote that imports torch and triton once and forks per job) gives the same results as
a cold process, and its children are as isolated: killed by process group, dead when the zygote dies."""

from __future__ import annotations

import os
import signal
import time

from kernel_lsp.config import Settings
from kernel_lsp.check import CheckRequest, check_file
from kernel_lsp.run.executor import LocalExecutor
from tests.conftest import CORPUS, FIXTURES
from tests.lsp.rawclient import kernel_lsp_processes, wait_gone


def _codes(report) -> list[tuple[str, int]]:
    return sorted((f.code, f.span.line) for f in report.findings)


def test_warm_and_cold_workers_agree():
    with LocalExecutor() as executor:
        path = CORPUS / "bug_relu_drops_nan.py"
        warm = check_file(CheckRequest(path, Settings(), CORPUS, executor=executor))
        cold = check_file(CheckRequest(path, Settings(), CORPUS))
        assert warm.stats["warm_workers"] == 1 and cold.stats["warm_workers"] == 0
        assert _codes(warm) == _codes(cold) == [("KL201", 15)]
        # A second warm job runs in a fresh fork: nothing the first job's user code did carries over.
        again = check_file(CheckRequest(path, Settings(), CORPUS, executor=executor))
        assert _codes(again) == _codes(warm) and again.stats["warm_workers"] == 1


def _alive(pid: int) -> bool:
    return pid in kernel_lsp_processes()


def _wait_dead(pid: int) -> bool:
    return wait_gone({pid}, timeout=10.0)


def _forked_by(executor: LocalExecutor) -> list[int]:
    """The live children of this executor's zygote (other tests' workers may run beside ours)."""
    proc = executor.pool._proc if executor.pool is not None else None
    if proc is None:
        return []
    out = []
    for pid in kernel_lsp_processes():
        try:
            ppid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == proc.pid:
            out.append(pid)
    return out


def _hanging_check(executor: LocalExecutor):
    """Start checking hang.py in a thread; return (thread, the pid of its forked worker) once the worker calls the
    user's endless loop (its capture stage began) and is still alive; what the check returned if it ended first."""
    import threading
    from kernel_lsp.jobs import Stage
    calling, ended = threading.Event(), {}

    def on_event(event) -> None:
        if isinstance(event, Stage) and event.stage == "capture":
            calling.set()

    req = CheckRequest(FIXTURES / "faults" / "hang.py", Settings(timeout=120), FIXTURES / "faults", executor=executor,
                       on_event=on_event)
    thread = threading.Thread(target=lambda: ended.setdefault("report", check_file(req)), daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        jobs = _forked_by(executor)
        if jobs:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the worker never started")

    def what_ended() -> object:
        return [(f.code, f.message) for f in ended["report"].findings] if "report" in ended else "the check runs on"
    assert calling.wait(60), what_ended()
    assert _alive(jobs[0]), what_ended()
    return thread, jobs[0]


def test_timeout_kills_a_forked_child(tmp_path):
    with LocalExecutor() as executor:
        src = FIXTURES / "faults" / "hang.py"
        report = check_file(CheckRequest(src, Settings(timeout=8), FIXTURES / "faults", executor=executor))
        assert [f.code for f in report.findings] == ["KL301"]
        assert report.stats["warm_workers"] == 1


def test_children_die_with_the_zygote():
    executor = LocalExecutor()
    thread, child = _hanging_check(executor)
    os.kill(executor.pool._proc.pid, signal.SIGKILL)  # the zygote dies: the kernel kills its children (PDEATHSIG)
    assert _wait_dead(child), "a forked worker outlived its zygote"
    thread.join(timeout=10)
    assert not thread.is_alive()  # and the parent is not left waiting for it
    executor.close()


def test_closing_the_executor_kills_running_children():
    executor = LocalExecutor()
    _, child = _hanging_check(executor)
    zygote = executor.pool._proc.pid
    executor.close()  # what the parent's exit does: EOF on the zygote's stdin
    assert _wait_dead(child) and _wait_dead(zygote)


def test_cancel_kills_a_running_job_within_a_poll():
    """The request's cancel event is the only handle a front end has on a running check: setting it kills the
    worker and the check returns at once, cancelled (no finding about a dead worker)."""
    import threading
    with LocalExecutor() as executor:
        cancel = threading.Event()
        req = CheckRequest(FIXTURES / "faults" / "hang.py", Settings(timeout=120), FIXTURES / "faults",
                           executor=executor, cancel=cancel)
        result = {}
        thread = threading.Thread(target=lambda: result.setdefault("report", check_file(req)), daemon=True)
        thread.start()
        deadline = time.monotonic() + 60
        while not _forked_by(executor):
            assert time.monotonic() < deadline, "the worker never started"
            time.sleep(0.05)
        cancel.set()
        thread.join(timeout=5)
        assert not thread.is_alive()
        assert result["report"].findings == []


def test_a_check_leaves_no_temporary_folder_behind(tmp_path):
    """Every process of a check makes its folders under TMPDIR (the worker's private folder, the players' copies,
    the compile warmer's, the log of the worker's stderr); a run of `kernel-lsp check` that ends leaves none of
    them: a long-lived worker's folder is made by its parent, which removes it once the worker has ended, whatever
    its jobs left there."""
    import shutil

    from tests.conftest import run_cli
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    case = shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "add.py")
    proc = run_cli("check", str(case), "--no-cache", env={"TMPDIR": str(tmp)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # A long-lived worker too (a runner command; on a GPU and on a Ray actor it is the same kind of worker): its
    # private folder leaked from every run.
    import shlex
    import sys
    worker = shlex.join([sys.executable, "-m", "kernel_lsp.cli", "worker"])
    proc = run_cli("check", str(case), "--no-cache", "--runner", worker, env={"TMPDIR": str(tmp)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # Meant to outlive a run: the GPU lease's lock folder, shared by every kernel-lsp process of the user
    # (checker/measure/gpu_lease.py), and torch's own compile cache.
    import getpass
    kept = {f"kernel-lsp-{os.getuid()}", f"torchinductor_{getpass.getuser()}"}
    assert sorted(p.name for p in tmp.iterdir() if p.name not in kept) == []


def test_a_worker_whose_players_server_guessed_the_device_wrong_replaces_it(tmp_path, monkeypatch):
    """A long-lived worker starts its players' server before torch is imported, by the driver's files (serve.py): where
    torch then chooses another device (a GPU this torch cannot use), the server is replaced by one for torch's choice,
    and the environment the worker keeps says the same (TRITON_INTERPRET)."""
    from kernel_lsp.run import players, serve
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # what choose_device("auto") sets on a machine without CUDA
    parent = tmp_path / "worker"
    parent.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    before = players.installed()
    players.install(players.PlayerServer("cuda", env, parent=str(parent)))
    try:
        serve._match_players("cpu", env, str(parent))
        server = players.installed()
        assert server.device == "cpu" and server.dir == str(parent / "p") and env["TRITON_INTERPRET"] == "1"
        assert server.ready(60)
    finally:
        players.installed().close()
        players.install(before)
