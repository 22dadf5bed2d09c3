"""The fix action in the language server, over raw JSON-RPC against a scripted LLM: the verified edit is offered
for the document version it was computed from (with a confirmation annotation where the client supports it, or
after asking), refused when the document changed meanwhile, and cancelling the request kills its workers."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.conftest import write
from tests.lsp.rawclient import RawClient, descendants, kernel_lsp_processes, wait_gone
from tests.propose.fake_llm import FakeLLM
from tests.propose.test_llm_actions import BROKEN, FIXED_KERNEL

HANGING = "```python\n" + BROKEN.replace("* factor, mask=mask)", "* 2.0, mask=mask)").replace(
    "def scale(x):\n", "def scale(x):\n    while True:\n        pass\n") + "```"


def start(tmp_path: Path, fake: FakeLLM, annotations: bool, text: str | None = None) -> tuple[RawClient, str]:
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.kernel-lsp]\ntimeout = 120\n\n[tool.kernel-lsp.llm]\nendpoint = "{fake.url}"\nmodel = "scripted"\n'
        'candidates = 1\nrounds = 1\n')
    path = write(tmp_path / "scale.py", BROKEN)
    if text is not None:
        path.write_bytes(text.encode())
    client = RawClient(tmp_path)
    edit_caps = {"documentChanges": True}
    if annotations:
        edit_caps["changeAnnotationSupport"] = {"groupsOnLabel": True}
    rid = client.request("initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {
        "window": {"workDoneProgress": True, "showDocument": {"support": True}},
        "workspace": {"configuration": True, "workspaceEdit": edit_caps, "applyEdit": True}}})
    client.response(rid, timeout=30)
    client.notify("initialized", {})
    uri = client.open(path, text)
    return client, uri


def fix_action(client: RawClient, uri: str) -> dict:
    diag = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
                       and any(d["code"] == "KL100" for d in m["params"]["diagnostics"]), timeout=120)
    kl100 = next(d for d in diag["params"]["diagnostics"] if d["code"] == "KL100")
    rid = client.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": kl100["range"],
                                                      "context": {"diagnostics": [kl100]}})
    actions = client.response(rid)["result"]
    action = next(a for a in actions if a["title"].startswith("Fix with LLM"))
    assert action["kind"] == "quickfix" and "disabled" not in action
    return action


def execute(client: RawClient, action: dict) -> None:
    cmd = action["command"]
    rid = client.request("workspace/executeCommand", {"command": cmd["command"], "arguments": cmd["arguments"]})
    client.response(rid, timeout=30)  # returns at once: the work goes on in the background


def reply(client: RawClient, request: dict, result) -> None:
    client.send_raw(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode())


def stop(client: RawClient) -> None:
    client.proc.stdin.close()
    client.proc.wait(timeout=30)


def test_fix_is_offered_as_an_annotated_edit_for_the_requested_version(tmp_path):
    with FakeLLM([FIXED_KERNEL]) as fake:
        client, uri = start(tmp_path, fake, annotations=True)
        try:
            execute(client, fix_action(client, uri))
            apply = client.wait(lambda m: m.get("method") == "workspace/applyEdit", timeout=180)
            edit = apply["params"]["edit"]
            (change,) = edit["documentChanges"]
            assert change["textDocument"] == {"uri": uri, "version": 1}
            (text_edit,) = change["edits"]
            assert "* 2.0, mask=mask)" in text_edit["newText"] and text_edit["annotationId"] == "kernel-lsp.verified"
            annotation = edit["changeAnnotations"]["kernel-lsp.verified"]
            assert annotation["needsConfirmation"] and "fixes KL100" in annotation["description"]
            assert "input variants pass" in annotation["description"]
            reply(client, apply, {"applied": True})
            end = client.wait(lambda m: m.get("method") == "$/progress" and m["params"]["value"].get("kind") == "end"
                              and "propose" in m["params"]["token"], timeout=30)
            assert "fixes KL100" in end["params"]["value"]["message"]
        finally:
            stop(client)


def test_fix_asks_first_without_annotations_and_is_refused_after_an_edit(tmp_path):
    with FakeLLM([FIXED_KERNEL], delay=1.0) as fake:
        client, uri = start(tmp_path, fake, annotations=False)
        try:
            execute(client, fix_action(client, uri))
            ask = client.wait(lambda m: m.get("method") == "window/showMessageRequest", timeout=180)
            assert "verified fix for scale.py" in ask["params"]["message"]
            assert [a["title"] for a in ask["params"]["actions"]] == ["Apply", "Show diff", "Discard"]
            # The user typed while deciding: the edit was computed for version 1 and must not land on version 2.
            client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                     "contentChanges": [{"text": BROKEN.lstrip() + "\n# edited\n"}]})
            time.sleep(0.3)
            start_index = len(client.messages)
            reply(client, ask, {"title": "Apply"})
            refused = client.wait(lambda m: m.get("method") == "window/showMessage"
                                  and "changed since" in m["params"]["message"], timeout=30, start=start_index)
            assert "not applied" in refused["params"]["message"]
            assert not any(m.get("method") == "workspace/applyEdit" for m in client.messages)
        finally:
            stop(client)


def test_fix_show_diff_opens_the_evidence_then_applies_plain_edits(tmp_path):
    with FakeLLM([FIXED_KERNEL]) as fake:
        client, uri = start(tmp_path, fake, annotations=False)
        try:
            execute(client, fix_action(client, uri))
            ask = client.wait(lambda m: m.get("method") == "window/showMessageRequest", timeout=180)
            reply(client, ask, {"title": "Show diff"})
            show = client.wait(lambda m: m.get("method") == "window/showDocument", timeout=30)
            diff = Path(show["params"]["uri"].removeprefix("file://")).read_text()
            assert "+    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)" in diff
            assert "candidates (1):" in diff
            reply(client, show, {"success": True})
            again = client.wait(lambda m: m.get("method") == "window/showMessageRequest"
                                and m["id"] != ask["id"], timeout=30)
            reply(client, again, {"title": "Apply"})
            apply = client.wait(lambda m: m.get("method") == "workspace/applyEdit", timeout=30)
            (change,) = apply["params"]["edit"]["documentChanges"]
            assert change["textDocument"]["version"] == 1 and "annotationId" not in change["edits"][0]
            reply(client, apply, {"applied": True})
        finally:
            stop(client)


def test_cancelling_a_fix_mid_round_kills_its_workers(tmp_path):
    with FakeLLM([HANGING]) as fake:
        client, uri = start(tmp_path, fake, annotations=True)
        try:
            execute(client, fix_action(client, uri))
            begin = client.wait(lambda m: m.get("method") == "$/progress" and "propose" in m["params"]["token"]
                                and m["params"]["value"].get("kind") == "begin", timeout=30)
            token = begin["params"]["token"]
            client.wait(lambda m: m.get("method") == "$/progress" and m["params"]["token"] == token
                        and "verifying 1 candidate" in m["params"]["value"].get("message", ""), timeout=120)
            deadline = time.monotonic() + 30
            jobs: set[int] = set()
            while not jobs and time.monotonic() < deadline:  # the hanging candidate's worker
                mine = descendants(client.proc.pid)  # this server's: other checks may run on the machine
                jobs = {p for p, kind in kernel_lsp_processes().items() if kind == "job" and p in mine}
                time.sleep(0.1)
            assert jobs, "the candidate's worker never started"
            client.notify("window/workDoneProgress/cancel", {"token": token})
            end = client.wait(lambda m: m.get("method") == "$/progress" and m["params"]["token"] == token
                              and m["params"]["value"].get("kind") == "end", timeout=30)
            assert end["params"]["value"]["message"] == "cancelled"
            assert wait_gone(jobs, timeout=10), "the cancelled candidate's worker is still alive"
            assert client.proc.poll() is None
        finally:
            stop(client)


def test_fix_of_a_crlf_document_is_offered_with_crlf_line_endings(tmp_path):
    crlf = BROKEN.lstrip("\n").replace("\n", "\r\n")
    with FakeLLM([FIXED_KERNEL]) as fake:
        client, uri = start(tmp_path, fake, annotations=True, text=crlf)
        try:
            execute(client, fix_action(client, uri))
            apply = client.wait(lambda m: m.get("method") == "workspace/applyEdit", timeout=180)
            (change,) = apply["params"]["edit"]["documentChanges"]
            assert change["textDocument"]["version"] == 1
            lines = crlf.splitlines(keepends=True)
            for e in sorted(change["edits"], key=lambda e: e["range"]["start"]["line"], reverse=True):
                first, last = e["range"]["start"], e["range"]["end"]
                assert first["character"] == last["character"] == 0
                assert e["newText"].count("\n") == e["newText"].count("\r\n")
                lines[first["line"]: last["line"]] = e["newText"].splitlines(keepends=True)
            assert "".join(lines) == crlf.replace("* factor, mask=mask)", "* 2.0, mask=mask)")
            reply(client, apply, {"applied": True})
        finally:
            stop(client)
