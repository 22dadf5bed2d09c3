"""`kernel-lsp serve` with the Ray executor (`executor = "ray"`), its cluster's head lost mid-check: the server
starts a local cluster of its own (in a Ray temporary folder of the test's, so never one that runs on the machine),
the cluster's GCS server is killed while a file's job runs there, and the server goes on: the running check, a
save after the loss and a file opened after it each get one KL303 naming the lost head, the protocol on stdout stays
clean (Ray's lines go to stderr), and shutdown and exit end the process with 0 within seconds, leaving none of
the processes it started (raylet, Ray workers, kernel-lsp's own) behind."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from tests.conftest import CORPUS
from tests.lsp.rawclient import RawClient
from tests.run.test_ray import OwnCluster, needs_ray

HELD = "def make_inputs():\n    import time\n    time.sleep(3600)\n"  # a job that runs until it is ended


def _text(file) -> str:
    file.seek(0)
    return file.read().decode(errors="replace")


def _kl303(message: dict, uri: str) -> list[dict]:
    if message.get("method") != "textDocument/publishDiagnostics" or message["params"]["uri"] != uri:
        return []
    return [d for d in message["params"]["diagnostics"] if d.get("code") == "KL303"]


@needs_ray
def test_ray_head_lost_mid_check_leaves_the_language_server_answering_and_exiting_promptly(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.kernel-lsp]\nexecutor = "ray"\ntimeout = 600\n')
    text = (CORPUS / "ok_add_fp32.py").read_text()
    held = tmp_path / "held.py"
    held.write_text(text.replace("def make_inputs():\n", HELD))
    other = Path(shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "other.py"))
    cluster = OwnCluster()
    stderr = tempfile.TemporaryFile()
    client = RawClient(tmp_path, env={**cluster.env, **dict.fromkeys(OwnCluster.UNSET)}, stderr=stderr)
    try:
        client.initialize(tmp_path)
        held_uri = client.open(held)
        cluster.wait_for_job(client.proc, lambda: _text(stderr)[-3000:])
        cluster.kill_gcs(client.proc)
        killed = time.monotonic()
        (d,) = _kl303(client.wait(lambda m: _kl303(m, held_uri), timeout=30), held_uri)
        assert "the Ray cluster's head at " in d["message"] and " was lost " in d["message"], d
        lost_s = time.monotonic() - killed
        # After the loss: a save of the held file, and a file opened now, each get their KL303 at once.
        mark = len(client.messages)
        client.notify("textDocument/didSave", {"textDocument": {"uri": held_uri}})
        client.wait(lambda m: _kl303(m, held_uri), timeout=20, start=mark)
        other_uri = client.open(other)
        (d,) = _kl303(client.wait(lambda m: _kl303(m, other_uri), timeout=20), other_uri)
        assert " was lost " in d["message"], d
        cluster.below(client.proc.pid)  # everything the server runs now: none of it may outlive it
        rid = client.request("shutdown", None)
        assert "error" not in client.response(rid, timeout=20)
        client.notify("exit", None)
        asked = time.monotonic()
        code = client.proc.wait(timeout=60)
        exit_s = time.monotonic() - asked
        left = cluster.left()
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()
        cluster.close()
    err = _text(stderr)
    print(f"head (gcs) killed: KL303 {lost_s:.1f} s later; the server exited {exit_s:.1f} s after `exit`")
    assert code == 0, err[-3000:]
    assert exit_s < 10, exit_s
    assert not left, f"still running after the server's exit: {left}"
    assert client.stray == b"", client.stray[:2000]  # Ray's lines went to stderr
    assert "Traceback" not in err, err[-3000:]
