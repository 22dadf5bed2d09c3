"""The language server with the measure stage's settings: a runner that cannot start is one clear diagnostic and
the server lives on; the server offers code lenses (none without a measurement)."""

from __future__ import annotations

import shutil

from tests.conftest import CORPUS
from tests.lsp.rawclient import RawClient


def test_runner_that_cannot_start_is_a_diagnostic_and_the_server_lives_on(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.kernel-lsp]\nrunner = "/nonexistent/kernel-lsp-worker"\n')
    case = shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "add.py")
    client = RawClient(tmp_path)
    try:
        rid = client.request("initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {
            "workspace": {"configuration": True, "codeLens": {"refreshSupport": True}}}})
        caps = client.response(rid, timeout=30)["result"]["capabilities"]
        assert "codeLensProvider" in caps
        client.notify("initialized", {})
        uri = client.open(case)
        diag = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                           and m["params"]["uri"] == uri and any(d["code"] == "KL303" for d in m["params"]["diagnostics"]),
                           timeout=120)
        (kl303,) = [d for d in diag["params"]["diagnostics"] if d["code"] == "KL303"]
        assert "could not be started" in kl303["message"]
        # The server still answers: a hover, and code lenses (none: nothing was measured).
        rid = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 11, "character": 5}})
        assert "result" in client.response(rid, timeout=30)
        rid = client.request("textDocument/codeLens", {"textDocument": {"uri": uri}})
        assert client.response(rid, timeout=30)["result"] == []
    finally:
        client.proc.kill()
        client.proc.wait()


def test_device_cuda_without_a_gpu_is_one_message_and_a_clear_diagnostic(tmp_path):
    import os
    if os.path.exists("/dev/nvidiactl"):
        return  # a GPU machine: the setting is fine there
    (tmp_path / "pyproject.toml").write_text('[tool.kernel-lsp]\ndevice = "cuda"\n')
    case = shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "add.py")
    client = RawClient(tmp_path)
    try:
        client.initialize(tmp_path)
        message = client.wait(lambda m: m.get("method") == "window/showMessage"
                              and "no CUDA GPU" in m["params"]["message"], timeout=60)
        assert message["params"]["type"] == 1  # error
        uri = client.open(case)
        diag = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
                           and m["params"]["diagnostics"], timeout=120)
        (d,) = diag["params"]["diagnostics"]
        assert d["code"] == "KL303" and "torch sees no CUDA GPU" in d["message"], d
    finally:
        client.proc.kill()
        client.proc.wait()
