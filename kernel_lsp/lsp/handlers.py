"""The LSP method handlers of `kernel-lsp serve`, one function per method; `register(server)` puts them on a server
(main.py's `create_server` does, for each server it makes: no server exists at import time).

Handlers only parse requests, update the scheduler and render. A handler that fails is isolated by `_guard`:
the failure is logged with its traceback, shown to the user once, and a request gets an InternalError response
(never a silent null), so one broken feature never takes the server down. Session state and the scheduler's
hooks live in server.py; what hover and code actions show, in features.py.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
import time
from typing import Any, Callable

from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError

from ..config import mask_secrets
from .convert import path_of
from .features import VERIFY_NOW, code_actions, code_lenses, hover_markdown, kernel_at, proposal_actions
from .proposals import PROPOSE
from .server import SECTION, KernelLanguageServer, log

# The dispatch table: (LSP method, its registration options, handler), and (command, handler). The decorators below
# fill it as the module loads; `register` hands it to a server.
FEATURES: list[tuple[str, Any, Callable]] = []
COMMANDS: list[tuple[str, Callable]] = []


def feature(method: str, options: Any = None) -> Callable[[Callable], Callable]:
    def add(fn: Callable) -> Callable:
        FEATURES.append((method, options, fn))
        return fn
    return add


def command(name: str) -> Callable[[Callable], Callable]:
    def add(fn: Callable) -> Callable:
        COMMANDS.append((name, fn))
        return fn
    return add


def register(server: KernelLanguageServer) -> KernelLanguageServer:
    """Every handler of this module on `server`; returns it."""
    for method, options, fn in FEATURES:
        server.feature(method, options)(fn)
    for name, fn in COMMANDS:
        server.command(name)(fn)
    return server


def _guard(fn):
    """Run a handler; a failure is logged, shown to the user, and answered as InternalError."""

    @functools.wraps(fn)
    async def wrapper(ls, params):
        try:
            result = fn(ls, params)
            if asyncio.iscoroutine(result):
                result = await result
            return result
        except Exception as e:
            log.exception("%s failed", fn.__name__)
            what = mask_secrets(f"{type(e).__name__}: {e}")[:300]
            ls.window_show_message(types.ShowMessageParams(
                types.MessageType.Error, f"kernel-lsp: {fn.__name__} failed ({what}); the output log has details"))
            raise JsonRpcInternalError(f"kernel-lsp: {fn.__name__} failed: {what}") from e
    return wrapper


@feature(types.INITIALIZE)
@_guard
def initialize(ls: KernelLanguageServer, params: types.InitializeParams):
    root = params.root_uri or (params.workspace_folders[0].uri if params.workspace_folders else None)
    ls.root = path_of(root) if root else None
    if isinstance(params.initialization_options, dict):
        options = params.initialization_options
        # An editor in a restricted (untrusted) workspace says so: then nothing of the workspace is run.
        ls.set_trusted(options.get("trusted", True) is not False)
        ls.client_overrides = {k: v for k, v in options.get(SECTION, options).items() if k != "trusted"}
    if params.process_id:
        watch_parent(ls, params.process_id)


@feature(types.INITIALIZED)
@_guard
async def initialized(ls: KernelLanguageServer, params):
    try:
        await ls.fetch_client_settings()
        ls.load_settings()
        if ls.trusted:
            ls.scheduler.warm_up()
        ls.watch_files()
    finally:
        ls.ready = True
        deferred, ls.deferred = ls.deferred, {}
        for uri, (save, immediate) in deferred.items():
            if uri in ls.workspace.text_documents:  # still open
                ls.schedule(uri, save=save, immediate=immediate)


@feature(types.TEXT_DOCUMENT_DID_OPEN)
@_guard
def did_open(ls: KernelLanguageServer, params: types.DidOpenTextDocumentParams):
    ls.schedule(params.text_document.uri, save=True, immediate=True)


@feature(types.TEXT_DOCUMENT_DID_CHANGE)
@_guard
def did_change(ls: KernelLanguageServer, params: types.DidChangeTextDocumentParams):
    uri = params.text_document.uri
    saved = ls.saved_ahead.get(uri)
    caught_up = saved is not None and ls.workspace.get_text_document(uri).source == saved
    if caught_up:
        del ls.saved_ahead[uri]
    ls.schedule(uri, save=caught_up, immediate=caught_up)


@feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=True))
@_guard
def did_save(ls: KernelLanguageServer, params: types.DidSaveTextDocumentParams):
    uri = params.text_document.uri
    saved = params.text
    if saved is None:
        try:
            saved = path_of(uri).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            saved = None
    if saved is not None and saved != ls.workspace.get_text_document(uri).source:
        ls.saved_ahead[uri] = saved  # the matching didChange is still on its way
        return
    ls.saved_ahead.pop(uri, None)
    ls.schedule(uri, save=True, immediate=True)


@feature(types.TEXT_DOCUMENT_DID_CLOSE)
@_guard
def did_close(ls: KernelLanguageServer, params: types.DidCloseTextDocumentParams):
    uri = params.text_document.uri
    ls.saved_ahead.pop(uri, None)
    if uri in ls.scheduler.docs:
        ls.scheduler.close(uri)
    else:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@feature(types.TEXT_DOCUMENT_HOVER)
@_guard
def hover(ls: KernelLanguageServer, params: types.HoverParams):
    doc = ls.scheduler.docs.get(params.text_document.uri)
    if doc is None:
        return None
    kernel = kernel_at(doc, params.position.line, params.position.character)
    if kernel is None:
        return None
    chart = ls.charts.get(doc.uri)
    return types.Hover(contents=types.MarkupContent(types.MarkupKind.Markdown, hover_markdown(doc, kernel, chart)))


@feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
@_guard
def code_lens(ls: KernelLanguageServer, params: types.CodeLensParams):
    doc = ls.scheduler.docs.get(params.text_document.uri)
    return code_lenses(doc) if doc is not None else []


@feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
    code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.RefactorRewrite,
                       types.CodeActionKind.Source]))
@_guard
def code_action(ls: KernelLanguageServer, params: types.CodeActionParams):
    doc = ls.scheduler.docs.get(params.text_document.uri)
    if doc is None:
        return None
    llm, timed = bool(ls.settings.llm.endpoint), ls.settings.timing_unavailable() is None
    return proposal_actions(doc, params, llm, timed) + code_actions(doc, params)


@command(PROPOSE)
def propose_command(ls: KernelLanguageServer, uri: str, version: int | None, mode: str, kernel: str | None = None):
    """Start a fix, optimize or tune request; it runs in the background with its own progress (proposals.py)."""
    if mode not in ("fix", "optimize", "tune"):
        raise ValueError(f"unknown mode {mode!r}")
    if ls.refuse_untrusted(mode):
        return None
    task = asyncio.get_running_loop().create_task(ls.proposals.request(uri, version, mode, kernel))
    task.add_done_callback(lambda t: t.cancelled() or t.exception() is None or
                           log.error("%s request failed: %r", mode, t.exception()))
    return None


@command(VERIFY_NOW)
def verify_now(ls: KernelLanguageServer, uri: str):
    """Verify a document now, even if its result is cached (the editor's "Verify again now")."""
    try:
        doc = ls.scheduler.docs.get(uri)
        if doc is not None and ls.refuse_untrusted("verify"):
            return None
        if doc is not None:
            ls.scheduler.update(uri, doc.path, doc.version, doc.text, verify=True, immediate=True, refresh=True)
    except Exception:
        log.exception("verifyNow failed")
    return None


@feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
@_guard
async def did_change_configuration(ls: KernelLanguageServer, params: types.DidChangeConfigurationParams):
    if isinstance(params.settings, dict) and isinstance(params.settings.get(SECTION), dict):
        ls.client_overrides = dict(params.settings[SECTION])
    else:
        await ls.fetch_client_settings()
    ls.load_settings()
    for uri in list(ls.scheduler.docs):
        ls.schedule(uri, save=True, immediate=True)


@feature(types.SHUTDOWN)
@_guard
def shutdown(ls: KernelLanguageServer, params):
    ls.stop_everything()


def watch_parent(ls: KernelLanguageServer, pid: int) -> None:
    """pygls 2 has no parent-process watcher: poll the client's pid and exit with it, killing the workers."""
    def poll():
        while True:
            time.sleep(1.0)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                ls.stop_everything()
                os._exit(0)
            except PermissionError:
                pass

    threading.Thread(target=poll, name="kernel-lsp-parent-watch", daemon=True).start()
