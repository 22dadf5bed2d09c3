"""The language server's settings as the editor changes them, over stdio with a bare client."""

from __future__ import annotations

import shutil

from tests.conftest import CORPUS
from tests.lsp.rawclient import RawClient


def _kl303(client: RawClient, uri: str, command: str) -> dict:
    """The publish for `uri` whose KL303 says that `command` could not be started."""
    return client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
                       and any(d["code"] == "KL303" and command in d["message"] for d in m["params"]["diagnostics"]),
                       timeout=120)


def test_settings_a_changed_runner_list_reaches_new_workers(tmp_path):
    """Changing `runners` in the editor builds a new executor: the next check goes to the new command. The server
    once kept its workers until one of a hand-kept list of settings changed, and `runners` (like gpus, sandbox,
    retries and the LLM key's name) was not on it, so the old workers went on serving."""
    (tmp_path / "pyproject.toml").write_text('[tool.kernel-lsp]\nrunners = ["/nonexistent/first-runner"]\n')
    case = shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "add.py")
    client = RawClient(tmp_path)
    try:
        client.initialize(tmp_path)
        uri = client.open(case)
        _kl303(client, uri, "first-runner")
        client.notify("workspace/didChangeConfiguration",
                      {"settings": {"kernelLsp": {"runners": ["/nonexistent/second-runner"]}}})
        _kl303(client, uri, "second-runner")
    finally:
        client.proc.kill()
        client.proc.wait()
