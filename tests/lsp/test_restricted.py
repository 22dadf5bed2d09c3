"""An untrusted workspace (the editor's Restricted Mode): the server only parses. A syntax error still shows; the
linked code is never imported or run (a kernel file whose import would leave a marker leaves none)."""

from __future__ import annotations

import time

from tests.lsp.rawclient import RawClient, descendants, kernel_lsp_processes

MARKED = '''# kernel-lsp: entry=run reference=ref inputs=make_inputs
import pathlib
import torch
import triton
import triton.language as tl

pathlib.Path(__file__).with_name("imported.txt").write_text("this file was imported")


@triton.jit
def _k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def run(x):
    _k[(1,)](x, x.numel(), BLOCK=64)
    return x


def ref(x):
    return x


def make_inputs():
    return [torch.randn(8)]
'''


def test_restricted_workspace_is_parsed_and_never_run(tmp_path):
    (tmp_path / "k.py").write_text(MARKED)
    (tmp_path / "broken.py").write_text("import triton\ndef f(:\n")
    client = RawClient(tmp_path)
    try:
        rid = client.request("initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {},
                                            "initializationOptions": {"kernelLsp": {}, "trusted": False}})
        client.response(rid, timeout=30)
        client.notify("initialized", {})
        broken = client.open(tmp_path / "broken.py")
        diag = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                           and m["params"]["uri"] == broken and m["params"]["diagnostics"], timeout=30)
        assert diag["params"]["diagnostics"][0]["code"] == "KL001"  # parsing still works
        uri = client.open(tmp_path / "k.py")
        client.wait(lambda m: m.get("method") == "kernelLsp/status" and m["params"].get("state") == "restricted"
                    and m["params"]["uri"] == uri, timeout=30)
        rid = client.request("workspace/executeCommand", {"command": "kernel-lsp.verifyNow", "arguments": [uri]})
        client.response(rid, timeout=30)
        client.wait(lambda m: m.get("method") == "window/showMessage" and "not trusted" in m["params"]["message"],
                    timeout=30)
        time.sleep(5)
        assert not (tmp_path / "imported.txt").exists()  # nothing of the workspace ran
        mine = descendants(client.proc.pid)  # this server's processes: other checks may run on the machine
        assert not any(kind == "job" for pid, kind in kernel_lsp_processes().items() if pid in mine)
        rid = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 10, "character": 5}})
        assert "Restricted Mode" in client.response(rid)["result"]["contents"]["value"]
    finally:
        client.proc.kill()
        client.proc.wait()
