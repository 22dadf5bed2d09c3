"""`kernel-lsp serve`: a pygls server over stdio that keeps every open Triton file's diagnostics current.

Handlers only parse requests, update the scheduler and render; the engine runs in worker processes. Every
handler's errors are caught and logged, so one broken feature never takes the server down. torch and triton
are never imported here.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..codes import severity_of
from ..config import ConfigError, Settings, apply_overrides, find_pyproject, load_pyproject
from ..model import Finding, Span
from ..scheduler import Document, Hooks, Run, Scheduler
from .convert import lsp_diagnostic, path_of, uri_of
from .features import VERIFY_NOW, code_actions, hover_markdown, kernel_at

log = logging.getLogger("kernel_lsp.server")
STATUS = "kernelLsp/status"
SECTION = "kernelLsp"


class KernelLanguageServer(LanguageServer):
    def __init__(self):
        super().__init__("kernel-lsp", __version__)
        self.settings = Settings()
        self.client_overrides: dict[str, Any] = {}
        self.root: Path | None = None
        self.pyproject: Path | None = None
        self.scheduler = Scheduler(Hooks(self.publish, self.run_started, self.run_finished, self.run_stage),
                                   self.settings, None)
        self.progress_tokens: dict[str, Document] = {}
        self.observer = None
        # A save whose text the server has not seen yet (a client that sends didSave before its debounced
        # didChange, like Neovim 0.7): verification waits until the document catches up with it.
        self.saved_ahead: dict[str, str] = {}
        # Until `initialized` has loaded the settings, checks wait here (uri -> save, immediate): a document
        # opened first must not be checked (and cached) with the defaults.
        self.ready = False
        self.deferred: dict[str, tuple[bool, bool]] = {}

    # Configuration ---------------------------------------------------------------------------------------
    def load_settings(self) -> None:
        """pyproject.toml, then the client's settings; a broken pyproject is a diagnostic on it, not a crash."""
        problems: list[Finding] = []
        settings, root = Settings(), self.root
        self.pyproject = find_pyproject(self.root) if self.root else None
        try:
            settings, _ = load_pyproject(self.pyproject)
        except ConfigError as e:
            problems.append(Finding(str(e.path or self.pyproject), Span(e.line), severity_of("KL006"), "KL006",
                                    f"{e}; using the defaults", source="kernel-lsp.config"))
        try:
            settings = apply_overrides(settings, self.client_overrides)
        except (ConfigError, TypeError) as e:
            self.window_show_message(types.ShowMessageParams(types.MessageType.Error,
                                                             f"kernel-lsp settings: {e}; using the defaults"))
        self.settings = settings
        self.scheduler.configure(settings, root)
        if self.pyproject is not None:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=uri_of(self.pyproject), diagnostics=[lsp_diagnostic(f) for f in problems]))

    async def fetch_client_settings(self) -> None:
        try:
            result = await asyncio.wait_for(self.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])), 5)
            if result and isinstance(result[0], dict):
                self.client_overrides = {k: v for k, v in result[0].items() if v is not None}
        except Exception as e:  # a client without workspace/configuration: defaults and pyproject only
            log.info("workspace/configuration unavailable: %s", e)

    # Scheduler hooks -------------------------------------------------------------------------------------
    def publish(self, doc: Document) -> None:
        findings = [f for fs in doc.findings.values() for f in fs]
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=doc.uri, version=doc.version, diagnostics=[lsp_diagnostic(f) for f in findings]))

    async def run_started(self, doc: Document, run: Run) -> str | None:
        stage = "verifying" if run.verify else "compiling"
        kernels = len(doc.report.kernels) if doc.report is not None else None  # as of the last check
        self.protocol.notify(STATUS, {"state": stage, "uri": doc.uri, "version": doc.version, "kernels": kernels})
        token = f"kernel-lsp/{doc.path.name}/{run.generation}/{time.monotonic_ns()}"
        try:
            await asyncio.wait_for(self.work_done_progress.create_async(token), 2)
        except Exception:
            return None
        self.progress_tokens[token] = doc
        self.work_done_progress.begin(token, types.WorkDoneProgressBegin(
            title=f"kernel-lsp: {stage} {doc.path.name}", cancellable=True,
            message="discover, link, compile" + (", verify" if run.verify else "")))
        # pygls handles window/workDoneProgress/cancel itself by cancelling the token's future: follow it.
        future = self.work_done_progress.tokens.get(token)
        if future is not None:
            future.add_done_callback(lambda f: f.cancelled() and self.cancel_run(doc, run))
        return token

    def cancel_run(self, doc: Document, run: Run) -> None:
        """The client cancelled this run's progress: kill it (a later run of the document is left alone)."""
        if doc.running is run:
            self.scheduler.cancel(doc)

    def run_stage(self, doc: Document, run: Run, token: Any, event: dict) -> None:
        message = event.get("stage", "") + (f": {event['detail']}" if event.get("detail") else "")
        if token and token in self.progress_tokens:
            self.work_done_progress.report(token, types.WorkDoneProgressReport(message=message[:200]))
        self.protocol.notify(STATUS, {"state": event.get("stage"), "uri": doc.uri, "version": doc.version,
                                      "detail": event.get("detail", "")})

    def run_finished(self, doc: Document, run: Run, token: Any, report) -> None:
        if token:
            self.progress_tokens.pop(token, None)
            self.work_done_progress.tokens.pop(token, None)
            message = "cancelled" if report is None else f"{len(report.findings)} finding(s)"
            self.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
        summary = None
        if report is not None:
            counts = {}
            for f in report.findings:
                counts[f.severity.label] = counts.get(f.severity.label, 0) + 1
            summary = {"kernels": len(report.kernels), "findings": counts, "cached": report.cached}
        self.protocol.notify(STATUS, {"state": "idle", "uri": doc.uri, "version": doc.version,
                                      "cancelled": report is None, "verified": run.verify, "last": summary})

    # Document events -------------------------------------------------------------------------------------
    def schedule(self, uri: str, *, save: bool, immediate: bool = False) -> None:
        if not uri.endswith(".py"):
            return
        if not self.ready:
            was_save, was_immediate = self.deferred.get(uri, (False, False))
            self.deferred[uri] = (save or was_save, immediate or was_immediate)
            return
        document = self.workspace.get_text_document(uri)
        text = document.source
        path = path_of(uri)
        if "triton" not in text and uri not in self.scheduler.docs:
            return  # not a Triton file (a file with a syntax error that mentions triton is still checked)
        trigger = self.settings.verify
        verify = trigger == "change" or (trigger == "save" and save)
        self.scheduler.update(uri, path, document.version, text, verify=verify, immediate=immediate)

    def watch_files(self) -> None:
        if self.root is None:
            return
        try:
            from watchdog.events import FileSystemEventHandler
            from watchdog.observers import Observer
        except ImportError:
            return
        loop = asyncio.get_running_loop()
        server = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event):
                # Only changes: watchdog also reports opens and closes, and reading pyproject.toml would then
                # trigger its own reload forever.
                if event.event_type not in ("modified", "created", "moved", "deleted"):
                    return
                if event.is_directory or not str(event.src_path).endswith((".py", "pyproject.toml")):
                    return
                if ".kernel_lsp_cache" in str(event.src_path):
                    return
                loop.call_soon_threadsafe(server.on_disk_change, Path(str(event.src_path)))

        self.observer = Observer()
        self.observer.schedule(Handler(), str(self.root), recursive=True)
        self.observer.daemon = True
        self.observer.start()

    def on_disk_change(self, path: Path) -> None:
        """A dependency changed on disk: the reference, an imported module, or pyproject.toml."""
        if path.name == "pyproject.toml":
            self.load_settings()
            for uri in list(self.scheduler.docs):
                self.schedule(uri, save=True)
            return
        resolved = str(path.resolve())
        for uri, doc in list(self.scheduler.docs.items()):
            if doc.path == path:
                continue  # the document itself: its editor events drive it
            known = doc.report is not None and resolved in doc.report.dependencies
            # A file the text names may be a reference or module that did not exist at the last check.
            if known or path.stem in doc.text:
                self.schedule(uri, save=True)

    def stop_everything(self) -> None:
        self.scheduler.shutdown()
        if self.observer is not None:
            self.observer.stop()


server = KernelLanguageServer()


def _guard(fn):
    """Run a handler; log its failure instead of letting it reach the client or kill the server."""
    import functools

    @functools.wraps(fn)
    async def wrapper(ls, params):
        try:
            result = fn(ls, params)
            if asyncio.iscoroutine(result):
                result = await result
            return result
        except Exception:
            log.exception("%s failed", fn.__name__)
            return None
    return wrapper


@server.feature(types.INITIALIZE)
@_guard
def initialize(ls: KernelLanguageServer, params: types.InitializeParams):
    root = params.root_uri or (params.workspace_folders[0].uri if params.workspace_folders else None)
    ls.root = path_of(root) if root else None
    if isinstance(params.initialization_options, dict):
        ls.client_overrides = dict(params.initialization_options.get(SECTION, params.initialization_options))
    if params.process_id:
        watch_parent(ls, params.process_id)


@server.feature(types.INITIALIZED)
@_guard
async def initialized(ls: KernelLanguageServer, params):
    try:
        await ls.fetch_client_settings()
        ls.load_settings()
        ls.scheduler.warm_up()
        ls.watch_files()
    finally:
        ls.ready = True
        deferred, ls.deferred = ls.deferred, {}
        for uri, (save, immediate) in deferred.items():
            if uri in ls.workspace.text_documents:  # still open
                ls.schedule(uri, save=save, immediate=immediate)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
@_guard
def did_open(ls: KernelLanguageServer, params: types.DidOpenTextDocumentParams):
    ls.schedule(params.text_document.uri, save=True, immediate=True)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
@_guard
def did_change(ls: KernelLanguageServer, params: types.DidChangeTextDocumentParams):
    uri = params.text_document.uri
    saved = ls.saved_ahead.get(uri)
    caught_up = saved is not None and ls.workspace.get_text_document(uri).source == saved
    if caught_up:
        del ls.saved_ahead[uri]
    ls.schedule(uri, save=caught_up, immediate=caught_up)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=True))
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


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
@_guard
def did_close(ls: KernelLanguageServer, params: types.DidCloseTextDocumentParams):
    uri = params.text_document.uri
    ls.saved_ahead.pop(uri, None)
    if uri in ls.scheduler.docs:
        ls.scheduler.close(uri)
    else:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(types.TEXT_DOCUMENT_HOVER)
@_guard
def hover(ls: KernelLanguageServer, params: types.HoverParams):
    doc = ls.scheduler.docs.get(params.text_document.uri)
    if doc is None:
        return None
    kernel = kernel_at(doc, params.position.line, params.position.character)
    if kernel is None:
        return None
    return types.Hover(contents=types.MarkupContent(types.MarkupKind.Markdown, hover_markdown(doc, kernel)))


@server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
    code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.Source]))
@_guard
def code_action(ls: KernelLanguageServer, params: types.CodeActionParams):
    doc = ls.scheduler.docs.get(params.text_document.uri)
    return code_actions(doc, params) if doc is not None else None


@server.command(VERIFY_NOW)
def verify_now(ls: KernelLanguageServer, uri: str):
    """Verify a document now, even if its result is cached (the editor's "Verify again now")."""
    try:
        doc = ls.scheduler.docs.get(uri)
        if doc is not None:
            ls.scheduler.update(uri, doc.path, doc.version, doc.text, verify=True, immediate=True, refresh=True)
    except Exception:
        log.exception("verifyNow failed")
    return None


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
@_guard
async def did_change_configuration(ls: KernelLanguageServer, params: types.DidChangeConfigurationParams):
    if isinstance(params.settings, dict) and isinstance(params.settings.get(SECTION), dict):
        ls.client_overrides = dict(params.settings[SECTION])
    else:
        await ls.fetch_client_settings()
    ls.load_settings()
    for uri in list(ls.scheduler.docs):
        ls.schedule(uri, save=True, immediate=True)


@server.feature(types.SHUTDOWN)
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


def serve() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    # pygls logs every message it sends at INFO: that floods the editor's output channel (and costs time on
    # large diagnostics). KERNEL_LSP_LOG=debug brings it back.
    if os.environ.get("KERNEL_LSP_LOG", "").lower() != "debug":
        logging.getLogger("pygls").setLevel(logging.WARNING)
    try:
        server.start_io()
    finally:
        server.stop_everything()
