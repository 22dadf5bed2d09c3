"""An LLM endpoint that cannot be used says why, at once, and one that never answers is not silence (issue 43 item
10): `kernel-lsp optimize --mode fix` against sockets on loopback that this test opens, through the real `openai`
client. A refused connection and an unresolvable host read "Connection error." after the file's whole check."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from pathlib import Path

from tests.conftest import run_cli, write
from tests.propose.test_llm_actions import BROKEN


def _workspace(tmp_path: Path, endpoint: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(f'[tool.kernel-lsp]\ntimeout = 120\n\n[tool.kernel-lsp.llm]\n'
                                             f'endpoint = "{endpoint}"\nmodel = "m"\ncandidates = 1\nrounds = 1\n')
    return write(tmp_path / "scale.py", BROKEN)


def _fix(path: Path):
    return run_cli("optimize", str(path), "--mode", "fix", "--format", "json", cwd=path.parent, timeout=300)


def test_llm_errors_a_refused_connection_is_said_before_the_file_is_checked(tmp_path):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: every connection is refused
        port = closed.getsockname()[1]
        proc = _fix(_workspace(tmp_path, f"http://127.0.0.1:{port}/v1"))
    assert proc.returncode == 1, proc.stderr[-2000:]
    summary = json.loads(proc.stdout)["summary"]
    assert f"connection refused at 127.0.0.1:{port}: nothing listens there" in summary, summary
    assert "checking the current file" not in proc.stderr  # said before minutes of checking, not after


def test_llm_errors_an_unresolvable_host_is_said_before_the_file_is_checked(tmp_path):
    proc = _fix(_workspace(tmp_path, "http://gpu-box.invalid:8000/v1"))  # .invalid never resolves (RFC 6761)
    assert proc.returncode == 1, proc.stderr[-2000:]
    summary = json.loads(proc.stdout)["summary"]
    assert "its host 'gpu-box.invalid' cannot be resolved" in summary, summary
    assert "checking the current file" not in proc.stderr


def test_llm_errors_a_connection_refused_mid_request_names_the_cause_not_connection_error(tmp_path):
    """The endpoint answers the preflight's connection, then goes away: the client's own error is unwrapped."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def once() -> None:
        conn, _ = listener.accept()  # the preflight's connection; then nothing listens any more
        conn.close()
        listener.close()
    threading.Thread(target=once, daemon=True).start()
    proc = _fix(_workspace(tmp_path, f"http://127.0.0.1:{port}/v1"))
    assert proc.returncode == 1, proc.stderr[-2000:]
    summary = json.loads(proc.stdout)["summary"]
    assert f"failed: connection refused at 127.0.0.1:{port}" in summary and "Connection error." not in summary, summary


def test_llm_errors_an_endpoint_that_never_answers_shows_progress_while_waited_for(tmp_path):
    """A server that accepts connections and never replies: `optimize` said nothing for over 200 s."""
    with socket.create_server(("127.0.0.1", 0)) as silent:  # the kernel completes handshakes; nobody answers
        path = _workspace(tmp_path, f"http://127.0.0.1:{silent.getsockname()[1]}/v1")
        proc = subprocess.Popen([sys.executable, "-m", "kernel_lsp.cli", "optimize", str(path), "--mode", "fix"],
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines: list[str] = []
        seen = threading.Event()

        def read() -> None:  # stderr's lines as they come; the test waits on the event, never on a read
            for line in proc.stderr:
                lines.append(line)
                if "no reply yet" in line:
                    seen.set()
        threading.Thread(target=read, daemon=True).start()
        try:
            assert seen.wait(120), "".join(lines)
            waiting = [ln for ln in lines if "no reply yet" in ln]
            assert waiting[0].startswith("kernel-lsp: round 1: asking m at http://127.0.0.1:") and \
                "no reply yet after 5 s" in waiting[0] and "llm.max-seconds" in waiting[0], waiting[0]
        finally:
            proc.kill()
            proc.wait()
