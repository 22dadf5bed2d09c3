"""The server's life and death with a rude client, over raw pipes: no orphaned workers, ever; bad bytes and
out-of-order saves handled. Process census: tests/lsp/rawclient.py."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import CORPUS, FIXTURES
from tests.lsp.rawclient import RawClient, descendants, kernel_lsp_processes, wait_gone


@pytest.fixture
def workspace(tmp_path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[tool.kernel-lsp]\ntargets = ["sm_90"]\ntimeout = 120\n')
    shutil.copy(FIXTURES / "faults" / "hang.py", tmp_path / "hang.py")
    shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "ok.py")
    return tmp_path


def _alive(pids: set[int]) -> set[int]:
    return set(pids) & set(kernel_lsp_processes())


WARM_AND_COLD = pytest.mark.parametrize("warm", ["1", "0"], ids=["warm-workers", "cold-workers"])


def _busy_server(workspace: Path, process_id: int | None = None, warm: str = "1") -> tuple[RawClient, set[int]]:
    """A server checking hang.py: returns it and its worker processes (the zygote and the hung job)."""
    client = RawClient(workspace, env={"KERNEL_LSP_WARM": warm})
    client.initialize(workspace, process_id)
    client.open(workspace / "hang.py")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        census = kernel_lsp_processes()
        mine = descendants(client.proc.pid) & set(census)
        if "job" in {census[p] for p in mine}:
            return client, mine
        time.sleep(0.1)
    raise AssertionError("the hanging file's worker never started")


@WARM_AND_COLD
def test_client_vanishing_mid_request_stops_server_and_workers(workspace, warm):
    client, workers = _busy_server(workspace, warm=warm)
    client.request("textDocument/hover", {"textDocument": {"uri": (workspace / "hang.py").as_uri()},
                                          "position": {"line": 9, "character": 5}})
    client.proc.stdin.close()  # the client is gone: stdin EOF, mid-request
    assert client.proc.wait(timeout=20) is not None
    assert wait_gone(workers), f"orphaned workers: {_alive(workers)}"


def test_client_process_death_is_noticed(workspace):
    editor = subprocess.Popen(["sleep", "600"])  # stands in for the editor whose pid initialize names
    client, workers = _busy_server(workspace, process_id=editor.pid)
    editor.kill()
    editor.wait()
    assert client.proc.wait(timeout=20) == 0  # the parent watch noticed, though stdin is still open
    assert wait_gone(workers), f"orphaned workers: {_alive(workers)}"


@WARM_AND_COLD
def test_server_killed_outright_leaves_no_orphans(workspace, warm):
    client, workers = _busy_server(workspace, warm=warm)
    client.proc.send_signal(signal.SIGKILL)  # no shutdown, no finally: the zygote sees EOF, its jobs PDEATHSIG
    client.proc.wait()
    assert wait_gone(workers), f"orphaned workers: {_alive(workers)}"


def test_shutdown_and_exit_stop_the_workers(workspace):
    client, workers = _busy_server(workspace)
    rid = client.request("shutdown", None)
    client.response(rid, timeout=20)
    client.notify("exit", None)
    assert client.proc.wait(timeout=20) is not None
    assert wait_gone(workers), f"orphaned workers: {_alive(workers)}"


def test_bytes_that_are_not_utf8_do_not_kill_the_server(workspace):
    client = RawClient(workspace)
    client.initialize(workspace)
    bad_uri = (workspace / "bad.py").as_uri()
    # Raw invalid UTF-8 inside the JSON body, then a lone surrogate escape in a document's text.
    client.send_raw(b'{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": "'
                    + bad_uri.encode() + b'", "languageId": "python", "version": 1, "text": "import triton\\n\xff\xfe\\n"}}}')
    client.open(workspace / "surrogate.py", text="import triton\nx = '\udcff'\n")
    (workspace / "latin1.py").write_bytes(b"import triton\n# caf\xe9\n")
    client.open(workspace / "latin1.py", text="import triton\n# cafe\n")
    client.notify("textDocument/didSave", {"textDocument": {"uri": (workspace / "latin1.py").as_uri()}})
    ok_uri = client.open(workspace / "ok.py")
    published = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                            and m["params"]["uri"] == ok_uri, timeout=120)
    assert published["params"]["diagnostics"] == []
    rid = client.request("textDocument/hover", {"textDocument": {"uri": ok_uri}, "position": {"line": 0, "character": 0}})
    assert "error" not in client.response(rid)
    assert client.proc.poll() is None
    client.proc.stdin.close()
    client.proc.wait(timeout=20)


def test_save_that_arrives_before_its_change_is_verified_once_the_change_lands(workspace):
    client = RawClient(workspace)
    client.initialize(workspace)
    path = workspace / "ok.py"
    uri = client.open(path, version=1)
    client.wait(lambda m: m.get("method") == "kernelLsp/status" and m["params"].get("state") == "idle"
                and m["params"].get("version") == 1, timeout=120)
    edited = path.read_text() + "\n# edited\n"
    path.write_text(edited)
    client.notify("textDocument/didSave", {"textDocument": {"uri": uri}, "text": edited})  # before its change
    time.sleep(1.0)
    assert not [m for m in client.messages if m.get("method") == "kernelLsp/status"
                and m["params"].get("version") == 1 and m["params"].get("state") == "verifying"][1:], \
        "verified the old text for a save of the new one"
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": edited}]})
    done = client.wait(lambda m: m.get("method") == "kernelLsp/status" and m["params"].get("state") == "idle"
                       and m["params"].get("version") == 2, timeout=120)
    assert done["params"]["verified"] and not done["params"]["cancelled"]
    # The verification's verdict is a status of its own, before the evidence runs that follow it.
    states = [m["params"] for m in client.messages if m.get("method") == "kernelLsp/status"
              and m["params"].get("version") == 2]
    order = [p["state"] for p in states]
    assert "verdict" in order and order.index("verdict") < order.index("evidence") < order.index("idle"), order
    assert states[order.index("verdict")]["detail"] == "no variant found a wrong result; the evidence runs follow"
    client.proc.stdin.close()
    client.proc.wait(timeout=20)


def test_document_opened_before_initialized_is_checked_with_the_workspace_settings(workspace):
    (workspace / "pyproject.toml").write_text('[tool.kernel-lsp]\ntargets = ["sm_90"]\nverify = "off"\n')
    client = RawClient(workspace)
    rid = client.request("initialize", {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {
        "workspace": {"configuration": True}}})
    client.response(rid, timeout=30)
    uri = client.open(workspace / "ok.py")  # before `initialized`: settings are not loaded yet
    time.sleep(0.5)
    client.notify("initialized", {})
    done = client.wait(lambda m: m.get("method") == "kernelLsp/status" and m["params"].get("state") == "idle"
                       and m["params"].get("uri") == uri, timeout=120)
    assert done["params"]["verified"] is False  # verify = "off" from pyproject.toml, not the default "save"
    started = [m["params"]["state"] for m in client.messages if m.get("method") == "kernelLsp/status"
               and m["params"].get("state") in ("compiling", "verifying")]
    assert started == ["compiling"]
    client.proc.stdin.close()
    client.proc.wait(timeout=20)


def test_a_dependency_changed_on_disk_rechecks_the_open_document(workspace):
    """impl.py -> pkg/ops.py -> pkg/sizing.py; editing sizing.py (never named in impl.py) re-verifies impl.py."""
    pkg = workspace / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "ops.py").write_text("from .sizing import BLOCK\n")
    (pkg / "sizing.py").write_text("BLOCK = 256\n")
    src = (CORPUS / "ok_add_fp32.py").read_text()
    src = src.replace("import triton.language as tl\n", "import triton.language as tl\nfrom pkg import ops\n")
    src = src.replace("_add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)",
                      "_add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=ops.BLOCK)")
    impl = workspace / "impl.py"
    impl.write_text(src)
    client = RawClient(workspace)
    client.initialize(workspace)
    uri = client.open(impl)

    def idle(m):
        return m.get("method") == "kernelLsp/status" and m["params"].get("state") == "idle" \
            and m["params"].get("uri") == uri and not m["params"].get("cancelled")

    first = client.wait(idle, timeout=120)
    assert first["params"]["last"]["findings"] == {}  # 4 programs of 256 cover 1000 elements: clean
    seen = len(client.messages)
    (pkg / "sizing.py").write_text("BLOCK = 128\n")  # 4 programs of 128 now: half of the output unwritten
    again = client.wait(idle, timeout=120, start=seen)
    assert again["params"]["verified"] and again["params"]["last"]["findings"].get("error", 0) >= 1
    client.proc.stdin.close()
    client.proc.wait(timeout=20)


def test_verify_again_now_reruns_even_when_the_result_is_cached(workspace):
    client = RawClient(workspace)
    client.initialize(workspace)
    uri = client.open(workspace / "ok.py")

    def idle(m):
        return m.get("method") == "kernelLsp/status" and m["params"].get("state") == "idle" \
            and m["params"].get("uri") == uri and not m["params"].get("cancelled")

    client.wait(idle, timeout=120)
    seen = len(client.messages)
    rid = client.request("workspace/executeCommand", {"command": "kernel-lsp.verifyNow", "arguments": [uri]})
    client.response(rid)
    again = client.wait(idle, timeout=120, start=seen)
    assert again["params"]["verified"] and again["params"]["last"]["cached"] is False  # really ran again
    client.proc.stdin.close()
    client.proc.wait(timeout=20)


def test_cancelling_the_progress_kills_the_run(workspace):
    client, workers = _busy_server(workspace)
    uri = (workspace / "hang.py").as_uri()
    begin = client.wait(lambda m: m.get("method") == "$/progress" and m["params"]["value"].get("kind") == "begin")
    assert begin["params"]["value"]["cancellable"]
    client.notify("window/workDoneProgress/cancel", {"token": begin["params"]["token"]})
    end = client.wait(lambda m: m.get("method") == "$/progress" and m["params"]["token"] == begin["params"]["token"]
                      and m["params"]["value"].get("kind") == "end", timeout=20)
    assert end["params"]["value"]["message"] == "cancelled"
    jobs = {p for p in workers if kernel_lsp_processes().get(p) == "job"}
    assert wait_gone(jobs), "the cancelled run's worker is still alive"
    idle = client.wait(lambda m: m.get("method") == "kernelLsp/status" and m["params"].get("uri") == uri
                       and m["params"].get("state") == "idle")
    assert idle["params"]["cancelled"]
    assert client.proc.poll() is None  # and the server goes on
    client.proc.stdin.close()
    client.proc.wait(timeout=20)


def test_syntax_errors_show_at_once_while_the_check_threads_are_busy(workspace):
    (workspace / "pyproject.toml").write_text('[tool.kernel-lsp]\ntargets = ["sm_90"]\nworkers = 1\ntimeout = 120\n')
    client, _ = _busy_server(workspace)  # hang.py holds the only check thread for up to 120 s
    ok = client.open(workspace / "ok.py")
    broken = (workspace / "ok.py").read_text().replace("def add(x, y):", "def add(x, y:")
    start = time.monotonic()
    client.notify("textDocument/didChange", {"textDocument": {"uri": ok, "version": 2},
                                             "contentChanges": [{"text": broken}]})
    got = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == ok
                      and any(d.get("code") == "KL001" for d in m["params"]["diagnostics"]), timeout=30)
    assert time.monotonic() - start < 10, "the syntax error waited for a check thread"
    assert got["params"]["version"] == 2
    client.proc.stdin.close()
    client.proc.wait(timeout=20)
