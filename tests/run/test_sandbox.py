"""Checked code runs sandboxed (run/sandbox.py): a kernel file that tries every escape an adversarial candidate
tries (tests/fixtures/sandbox/escape.py) comes out clean, having read no secret, written no file, reached no port,
killed nothing and left nothing running; on every path a job takes (a fork of the warm zygote, a cold process, a
long-lived worker behind a runner command)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

from kernel_lsp.jobs import SandboxOptions
from kernel_lsp.player import isolate
from kernel_lsp.run.sandbox import child_env
from tests.conftest import FIXTURES, check_json

pytestmark = pytest.mark.skipif(isolate.landlock_abi() < 6, reason="needs Landlock ABI 6 (Linux 6.12+)")
SECRET = "sk-test-0123456789abcdef"
WORKER = [sys.executable, "-m", "kernel_lsp.cli", "worker"]


def _alive_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if marker.encode() in cmd and state != "Z":
                found.append(int(entry.name))
    return found


def _wait_none_alive(marker: str, timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while True:
        left = _alive_with(marker)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


@pytest.mark.parametrize("path", ["warm", "cold", "runner", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_sandbox_an_escaping_kernel_is_checked_clean_and_escapes_nowhere(tmp_path, monkeypatch, path):
    ws = tmp_path / "ws"
    ws.mkdir()
    case = Path(shutil.copy(FIXTURES / "sandbox" / "escape.py", ws / "escape.py"))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.setblocking(False)
    (ws / "port.txt").write_text(str(listener.getsockname()[1]))
    caches = [tmp_path / "triton-cache", tmp_path / "inductor-cache"]  # the checker's: the player may not write them
    for folder in caches:
        folder.mkdir()
    (ws / "caches.txt").write_text(" ".join(map(str, caches)))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(caches[0]))
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(caches[1]))
    home = tmp_path / "home"  # the checker's CUDA JIT cache is in ~/.nv
    (home / ".nv" / "ComputeCache").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    locks = tmp_path / "locks"  # the GPU leases, which the players' server hides
    locks.mkdir()
    (locks / "GPU-test.lock").write_text("")
    (ws / "locks.txt").write_text(str(locks))
    monkeypatch.setenv("KERNEL_LSP_LOCKS_DIR", str(locks))
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("MY_SERVICE_TOKEN", SECRET)
    extra = ("--no-cache", "--device", "cuda" if path == "gpu" else "cpu")  # gpu: the long-lived GPU worker's path
    if path == "cold":
        monkeypatch.setenv("KERNEL_LSP_WARM", "0")
    elif path == "runner":
        import shlex
        extra += ("--runner", shlex.join(WORKER))
    try:
        _, doc = check_json(case, extra=extra)
        problems = [(d["code"], d["message"][:200]) for d in doc["diagnostics"] if d["severity"] in ("error", "warning")
                    and not (path == "gpu" and d["code"] in ("KL400", "KL401"))]  # its speed is not the point
        assert problems == [], problems
        assert SECRET not in str(doc)
        written = sorted(p.name for folder in [ws, *caches] for p in folder.iterdir() if p.name.startswith("escaped"))
        written += sorted(str(p.relative_to(home)) for p in home.rglob("escaped*"))
        assert written == [], f"files written outside the sandbox: {written}"
        try:
            conn, _ = listener.accept()
            conn.close()
            raise AssertionError("the checked code opened a TCP connection")
        except BlockingIOError:
            pass
        assert _wait_none_alive("27182") == [], "a process the checked code started outlived its check"
    finally:
        listener.close()
        for pid in _alive_with("27182"):
            os.kill(pid, signal.SIGKILL)


def test_sandbox_the_api_key_is_in_no_worker_environment(tmp_path, monkeypatch):
    """Read /proc/PID/environ of the zygote and of a running job (what checked code could read of itself and of
    its parent): neither holds the key, nor any variable named like a secret."""
    from kernel_lsp.check import CheckRequest, check_file
    from kernel_lsp.config import Settings
    from kernel_lsp.run.executor import LocalExecutor
    from tests.run.test_pool import _forked_by

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("MY_SERVICE_TOKEN", SECRET)
    with LocalExecutor() as executor:
        req = CheckRequest(FIXTURES / "faults" / "hang.py", Settings(device="cpu", timeout=120), FIXTURES / "faults",
                           executor=executor)
        thread = threading.Thread(target=check_file, args=(req,), daemon=True)
        thread.start()
        deadline = time.monotonic() + 60
        environs: list[str] = []
        while not environs:  # a child of the zygote's, read while it lives (one may end between a listing and a read)
            assert time.monotonic() < deadline, "the worker never started"
            for pid in _forked_by(executor):
                with contextlib.suppress(OSError):
                    environs.append(Path(f"/proc/{pid}/environ").read_bytes().decode())
            if not environs:
                time.sleep(0.05)
        environs.append(Path(f"/proc/{executor.pool._proc.pid}/environ").read_bytes().decode())
        for environ in environs:
            assert SECRET not in environ
            assert "MY_SERVICE_TOKEN" not in environ and "OPENAI_API_KEY" not in environ
        req.cancel = req.cancel  # the executor stops the job when the pool closes


def test_sandbox_env_keeps_what_toolchains_need_and_drops_secrets():
    base = {"PATH": "/usr/bin", "HOME": "/root", "PYTHONPATH": "/src", "CUDA_VISIBLE_DEVICES": "1",
            "TRITON_CACHE_DIR": "/c/triton", "LC_ALL": "C.UTF-8", "OPENAI_API_KEY": SECRET,
            "AWS_SECRET_ACCESS_KEY": SECRET, "GITHUB_TOKEN": SECRET, "CUDA_AUTH_TOKEN": SECRET, "HF_HOME": "/hf"}
    env = child_env(SandboxOptions(), base)
    assert {"PATH", "HOME", "PYTHONPATH", "CUDA_VISIBLE_DEVICES", "LC_ALL"} <= set(env)
    assert env["TRITON_CACHE_DIR"] == "/c/triton"  # pinned as the parent sees it
    assert SECRET not in env.values() and "HF_HOME" not in env
    assert child_env(SandboxOptions(env=["HF_HOME"]), base)["HF_HOME"] == "/hf"
    assert "OPENAI_API_KEY" in child_env(SandboxOptions(enabled=False), base)  # the opt-out passes everything


def test_sandbox_a_profiling_run_writes_its_profiles_and_checks_as_usual(tmp_path):
    """KERNEL_LSP_PROFILE=DIR (docs/performance.md): a long-lived worker, confined, may write its job profiles there.
    Before, the confined worker could not create DIR and the check itself failed (KL900 PermissionError)."""
    from tests.conftest import CORPUS, run_cli
    folder = tmp_path / "profiles"
    proc = run_cli("check", str(CORPUS / "ok_add_fp32.py"), "--no-cache", "--format", "json", "--device", "cpu",
                   "--runner", f"{sys.executable} -m kernel_lsp.cli worker", env={"KERNEL_LSP_PROFILE": str(folder)})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert [p.suffix for p in folder.iterdir()] == [".prof"]
