"""The language server over stdio, driven by a real LSP client (pytest-lsp)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.conftest import CORPUS, FIXTURES
from tests.lsp.rawclient import descendants, kernel_lsp_processes

WORKSPACE = Path(os.environ.get("KERNEL_LSP_TEST_WS", "/tmp/kernel-lsp-lsp-tests"))


def _workspace() -> Path:
    if WORKSPACE.exists():
        shutil.rmtree(WORKSPACE)
    WORKSPACE.mkdir(parents=True)
    (WORKSPACE / "pyproject.toml").write_text('[tool.kernel-lsp]\ntargets = ["sm_90"]\ntimeout = 30\n')
    for name in ("bug_grid_too_small.py", "ok_add_fp32.py"):
        shutil.copy(CORPUS / name, WORKSPACE / name)
    shutil.copy(FIXTURES / "faults" / "hang.py", WORKSPACE / "hang.py")
    shutil.copy(FIXTURES / "faults" / "segfault.py", WORKSPACE / "segfault.py")
    return WORKSPACE


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "kernel_lsp.cli", "serve"]))
async def client(lsp_client: LanguageClient):
    root = _workspace()
    caps = types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=True),
                                    workspace=types.WorkspaceClientCapabilities(configuration=True))
    _record_publishes(lsp_client)
    await lsp_client.initialize_session(types.InitializeParams(capabilities=caps, root_uri=root.as_uri(),
                                                               process_id=os.getpid()))
    yield
    await lsp_client.shutdown_session()


def _open(client: LanguageClient, name: str, text: str | None = None, version: int = 1) -> str:
    path = WORKSPACE / name
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
        uri=uri, language_id="python", version=version, text=path.read_text() if text is None else text)))
    return uri


def _record_publishes(client: LanguageClient) -> None:
    """Keep every publishDiagnostics the server sends, in order. pytest-lsp's wait_for_notification resolves only
    the next one: one that arrives before the next wait (two in one read, or while the test handles the last) is
    lost, and a test waiting for it then times out (a CI run under load lost a pyproject's KL006 so). Recorded
    through the client protocol's notification handler (pygls 2.1's `_handle_notification(method, params)`, a
    private hook: pytest-lsp 1.0 wraps the same one)."""
    client.published, client.published_seen, client.published_event = [], {}, asyncio.Event()
    handle = client.protocol._handle_notification

    def record(method_name, params):
        if method_name == types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS:
            client.published.append(params)
            client.published_event.set()
        return handle(method_name, params)
    client.protocol._handle_notification = record


async def _diagnostics(client: LanguageClient, uri: str, until, timeout: float = 90.0):
    """The first publish for `uri`, after the one the last call for `uri` returned, that satisfies `until(params)`;
    its params. Every publish counts, however close together they came."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        client.published_event.clear()
        for i in range(client.published_seen.get(uri, 0), len(client.published)):
            params = client.published[i]
            if params.uri == uri:
                client.published_seen[uri] = i + 1
                if until(params):
                    return params
        remaining = deadline - asyncio.get_running_loop().time()
        seen = [[str(d.code) for d in p.diagnostics] for p in client.published if p.uri == uri]
        assert remaining > 0, f"no matching diagnostics for {uri}; its publishes' codes: {seen}"
        try:
            await asyncio.wait_for(client.published_event.wait(), remaining)
        except asyncio.TimeoutError:
            pass


def _codes(params) -> set[str]:
    return {str(d.code) for d in params.diagnostics}


async def test_server_publishes_versioned_diagnostics_with_progress(client: LanguageClient):
    uri = _open(client, "bug_grid_too_small.py")
    params = await _diagnostics(client, uri, lambda p: "KL203" in _codes(p))
    assert params.version == 1
    d = next(d for d in params.diagnostics if d.code == "KL203")
    assert d.range.start.line == 15 and d.source == "kernel-lsp.verify"  # the tl.store line, 0-based
    assert d.severity == types.DiagnosticSeverity.Error
    for _ in range(50):
        reports = [r for token, rs in client.progress_reports.items() for r in rs if "bug_grid" in str(token)]
        kinds = [type(r).__name__ for r in reports]
        if "WorkDoneProgressEnd" in kinds:
            break
        await asyncio.sleep(0.1)
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
    stages = [r.message for r in reports if type(r).__name__ == "WorkDoneProgressReport"]
    assert any(m.startswith("compile") for m in stages) and any(m.startswith("verify: variant seed-1") for m in stages)


def _def_position(name: str, kernel: str) -> types.Position:
    lines = (WORKSPACE / name).read_text().splitlines()
    line = next(i for i, ln in enumerate(lines) if ln.startswith(f"def {kernel}("))
    return types.Position(line, 6)


async def _hover_text(client: LanguageClient, uri: str, pos: types.Position, until, tries: int = 200) -> str:
    text = ""
    for _ in range(tries):
        hover = await client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri), pos))
        text = hover.contents.value if hover else ""
        if until(text):
            break
        await asyncio.sleep(0.3)
    return text


async def test_server_hover_shows_resources_and_variants(client: LanguageClient):
    uri = _open(client, "ok_add_fp32.py")
    text = await _hover_text(client, uri, _def_position("ok_add_fp32.py", "_add_kernel"), lambda t: "seed-1" in t)
    assert "_add_kernel" in text and "| sm_90 |" in text and "seed-1" in text and "registers" in text


async def test_server_edit_during_verification_drops_stale_results(client: LanguageClient):
    uri = _open(client, "bug_grid_too_small.py")
    fixed = (WORKSPACE / "bug_grid_too_small.py").read_text().replace("(x.numel() // 128,)", "(triton.cdiv(x.numel(), 128),)")
    await asyncio.sleep(1.0)  # the first verification is running now
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(version=2, uri=uri), [types.TextDocumentContentChangeWholeDocument(fixed)]))
    client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri), fixed))
    params = await _diagnostics(client, uri, lambda p: p.version == 2 and not _codes(p) & {"KL203"} and
                                not any(d.source == "kernel-lsp.verify" for d in p.diagnostics), timeout=120)
    assert params.version == 2
    # Nothing computed for version 1 may arrive after version 2's results.
    await asyncio.sleep(3)
    assert "KL203" not in {str(d.code) for d in client.diagnostics[uri]}
    # Every progress begun has ended, the cancelled run's too: no spinner left spinning in the editor.
    assert client.progress_reports, "no progress was reported"
    for token, reports in client.progress_reports.items():
        assert isinstance(reports[-1], types.WorkDoneProgressEnd), (token, reports[-1])


def _worker_pids() -> set[int]:
    """Jobs (cold or forked) below this test process: other processes' checks may run beside ours."""
    mine = descendants(os.getpid())
    return {pid for pid, kind in kernel_lsp_processes().items() if kind == "job" and pid in mine}


async def test_server_cancellation_kills_the_worker(client: LanguageClient):
    before = _worker_pids()
    uri = _open(client, "hang.py")
    for _ in range(100):
        await asyncio.sleep(0.1)
        if _worker_pids() - before:
            break
    running = _worker_pids() - before
    assert running, "the hanging file's worker never started"
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
    for _ in range(50):
        await asyncio.sleep(0.1)
        if not (_worker_pids() & running):
            break
    assert not (_worker_pids() & running)
    assert list(client.diagnostics.get(uri, [])) == []  # a closed document gets an empty list


async def test_server_survives_bad_input(client: LanguageClient):
    bad = {
        "syntax.py": "import triton\n@triton.jit\ndef k(:\n",
        "empty.py": "",
        "huge.py": "import triton\n" + ("x = 1\n" * 500_000),  # 3 MB: the parse alone takes seconds
    }
    for name, text in bad.items():
        (WORKSPACE / name).write_text(text)
        _open(client, name)
    seg = _open(client, "segfault.py")
    # The huge file is parsed first, and CI runs this beside other tests: a generous wait (it failed at 90 s there).
    params = await _diagnostics(client, seg, lambda p: "KL300" in _codes(p), timeout=300)
    assert "SIGSEGV" in params.diagnostics[0].message
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier((WORKSPACE / "never-opened.py").as_uri()), types.Position(0, 0)))
    assert hover is None
    syntax_uri = (WORKSPACE / "syntax.py").as_uri()
    assert "KL001" in {str(d.code) for d in client.diagnostics.get(syntax_uri, [])}
    # Still answering: a good file checks clean.
    ok = _open(client, "ok_add_fp32.py")
    await _diagnostics(client, ok, lambda p: True, timeout=300)


async def test_server_code_actions(client: LanguageClient):
    uri = _open(client, "bug_grid_too_small.py")
    params = await _diagnostics(client, uri, lambda p: "KL203" in _codes(p))
    diag = next(d for d in params.diagnostics if d.code == "KL203")
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri), diag.range, types.CodeActionContext([diag])))
    titles = [a.title for a in actions]
    assert "Ignore KL203 on this line" in titles and "Verify again now" in titles
    ignore = next(a for a in actions if a.title.startswith("Ignore"))
    (edit,) = ignore.edit.changes[uri]
    assert edit.new_text == "  # kernel-lsp: ignore[KL203]" and edit.range.start.line == diag.range.start.line


async def test_server_configuration_reload_from_pyproject(client: LanguageClient):
    uri = _open(client, "ok_add_fp32.py")
    await _diagnostics(client, uri, lambda p: True)
    (WORKSPACE / "pyproject.toml").write_text('[tool.kernel-lsp]\ntargets = "sm_80,sm_90"\nverify = "sometimes"\n')
    pyproject_uri = (WORKSPACE / "pyproject.toml").as_uri()
    params = await _diagnostics(client, pyproject_uri, lambda p: "KL006" in _codes(p), timeout=30)
    assert "verify" in params.diagnostics[0].message
    (WORKSPACE / "pyproject.toml").write_text('[tool.kernel-lsp]\ntargets = ["sm_80", "sm_90"]\n')
    await _diagnostics(client, pyproject_uri, lambda p: not p.diagnostics, timeout=30)
    text = await _hover_text(client, uri, _def_position("ok_add_fp32.py", "_add_kernel"), lambda t: "| sm_80 |" in t)
    assert "| sm_80 |" in text


def test_server_publishes_a_verification_finding_as_soon_as_it_is_found(tmp_path):
    """The first failing variant's finding is published while the other variants still run; the final report
    then replaces it with the finding that lists every variant it failed on."""
    import shutil as _shutil
    from tests.lsp.rawclient import RawClient, verification_ended
    case = _shutil.copy(CORPUS / "bug_layernorm_wrong_eps.py", tmp_path / "ln.py")  # fails from seed-1 on
    client = RawClient(tmp_path)
    try:
        client.initialize(tmp_path)
        uri = client.open(case)  # opening verifies

        def verify_diag(m):
            return (m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
                    and any(d["source"] == "kernel-lsp.verify" for d in m["params"]["diagnostics"]))
        first = client.wait(verify_diag, timeout=180)
        done = client.wait(verification_ended(uri), timeout=180)
        last_variant = client.wait(lambda m: m.get("method") == "kernelLsp/status" and m["params"]["uri"] == uri
                                   and "variant strided" in m["params"].get("detail", ""), timeout=5)
        # published live, while later variants still ran; then again with the final report
        assert client.messages.index(first) < client.messages.index(last_variant) < client.messages.index(done)
        final = [m for m in client.messages[: client.messages.index(done)] if verify_diag(m)][-1]
        (live,) = [d for d in first["params"]["diagnostics"] if d["source"] == "kernel-lsp.verify"]
        # one KL200 per line, as the CLI prints one problem: led by the value finding, which starts with seed-1
        (kl200,) = [d for d in final["params"]["diagnostics"] if d["code"] == "KL200" and "seed-1" in d["message"]]
        assert live["code"] == "KL200" and live["range"] == kl200["range"] and final is not first
    finally:
        client.proc.kill()
        client.proc.wait()
