"""`kernel-lsp serve`: a pygls server over stdio that keeps every open Triton file's diagnostics current.

This module holds the session: settings, the scheduler and its hooks (publish, progress, status), document
scheduling, file watching. The LSP method handlers are in handlers.py; main.py builds a server with them
(`create_server`) and runs it. The engine runs in worker processes;
torch and triton are never imported here.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..check import CheckRequest, check_file
from ..codes import severity_of
from ..config import ConfigError, Settings, apply_overrides, find_pyproject, load_pyproject
from ..device import gpu_present
from ..jobs import Stage
from ..model import FileReport, Finding, Span
from ..run.executor import executor_for
from ..source.lint import may_link
from .convert import lsp_diagnostic, lsp_diagnostics, path_of, uri_of
from .scheduler import Document, Hooks, Run, Scheduler

log = logging.getLogger("kernel_lsp.server")
STATUS = "kernelLsp/status"
SECTION = "kernelLsp"


def check_and_lint(req: CheckRequest) -> FileReport:
    """check_file (which adds what the text alone tells: a malformed pragma, a PyTorch fallback)."""
    return check_file(req)


class KernelLanguageServer(LanguageServer):
    def __init__(self):
        super().__init__("kernel-lsp", __version__)
        self.settings = Settings()
        self.client_overrides: dict[str, Any] = {}
        self.root: Path | None = None
        self.pyproject: Path | None = None
        self.scheduler = Scheduler(Hooks(self.publish, self.run_started, self.run_finished, self.run_stage),
                                   self.settings, None, check_and_lint, executor_for)
        self.observer = None
        # A save whose text the server has not seen yet (a client that sends didSave before its debounced
        # didChange, like Neovim 0.7): verification waits until the document catches up with it.
        self.saved_ahead: dict[str, str] = {}
        # Until `initialized` has loaded the settings, checks wait here (uri -> save, immediate): a document
        # opened first must not be checked (and cached) with the defaults.
        self.ready = False
        self.deferred: dict[str, tuple[bool, bool]] = {}
        self.charts: dict[str, Path] = {}  # uri -> roofline chart of its current measurement (hover links it)
        self.trusted = True  # False in an editor's restricted mode: discovery and linking only, nothing run
        from .proposals import Proposals
        self.proposals = Proposals(self)  # fix, optimize and tune requests in flight

    def report_server_error(self, error: Exception, source) -> None:
        """Handler failures were already logged and shown by handlers._guard; other faults (a message that does
        not parse, say) get pygls's default message."""
        from pygls.exceptions import FeatureNotificationError, FeatureRequestError
        if source in (FeatureRequestError, FeatureNotificationError):
            return
        super().report_server_error(error, source)

    def set_trusted(self, trusted: bool) -> None:
        self.trusted = trusted
        self.scheduler.restricted = not trusted

    def refuse_untrusted(self, what: str) -> bool:
        """In restricted mode, say once per request that nothing is run, and refuse it."""
        if self.trusted:
            return False
        self.window_show_message(types.ShowMessageParams(
            types.MessageType.Info, f"kernel-lsp: this workspace is not trusted, so it is only parsed: trust it to "
            f"{what} (kernel-lsp runs the linked code, as pytest does)"))
        return True

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
        if settings.device == "cuda" and not settings.runner and not gpu_present():
            self.window_show_message(types.ShowMessageParams(
                types.MessageType.Error, "kernel-lsp: device is cuda, but this machine has no CUDA GPU: set device to "
                "auto or cpu, or a runner that reaches a GPU; each file shows KL303 until then"))
        self.scheduler.timeout_source = ("the kernelLsp.timeout setting" if "timeout" in self.client_overrides
                                         else "`timeout` in [tool.kernel-lsp]")
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
            uri=doc.uri, version=doc.version, diagnostics=lsp_diagnostics(findings)))

    async def run_started(self, doc: Document, run: Run) -> str | None:
        stage = "verifying" if run.verify else "compiling"
        kernels = len(doc.report.kernels) if doc.report is not None else None  # as of the last check
        self.protocol.notify(STATUS, {"state": stage, "uri": doc.uri, "version": doc.version, "kernels": kernels})
        token = f"kernel-lsp/{doc.path.name}/{run.generation}/{time.monotonic_ns()}"
        try:
            await asyncio.wait_for(self.work_done_progress.create_async(token), 2)
        except Exception:
            return None
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

    def run_stage(self, doc: Document, run: Run, token: Any, event: Stage) -> None:
        message = event.stage + (f": {event.detail}" if event.detail else "")
        if token and token in self.work_done_progress.tokens:
            self.work_done_progress.report(token, types.WorkDoneProgressReport(message=message[:200]))
        self.protocol.notify(STATUS, {"state": event.stage, "uri": doc.uri, "version": doc.version,
                                      "detail": event.detail})

    def run_finished(self, doc: Document, run: Run, token: Any, report) -> None:
        if token:
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
        if report is not None:
            self.measurement_landed(doc, report)

    def measurement_landed(self, doc: Document, report) -> None:
        """A new report: ask the editor to re-read code lenses (the summary on launch lines), and draw the chart."""
        measured = any(k.measurement for k in report.kernels.values())
        if measured or doc.uri in self.charts:
            self.charts.pop(doc.uri, None)
            caps = self.client_capabilities.workspace
            if caps and caps.code_lens and caps.code_lens.refresh_support:
                self.workspace_code_lens_refresh(None)
        if measured:
            asyncio.get_running_loop().run_in_executor(None, self.draw_chart, doc, report, doc.generation)

    def draw_chart(self, doc: Document, report, generation: int) -> None:
        from ..render.report import ReportError, chart_name, measurement_of, roofline_chart
        directory = self.settings.cache_path(self.root)
        m = measurement_of(report)
        if directory is None or m is None:
            return
        try:
            png = roofline_chart(m, doc.path.name, directory / "charts" / chart_name(str(doc.path)))
        except (ReportError, OSError) as e:
            log.info("no roofline chart for %s: %s", doc.path.name, e)
            return
        if generation == doc.generation:
            self.charts[doc.uri] = png

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
        if "triton" not in text and not may_link(text) and uri not in self.scheduler.docs:
            # Not a Triton file (a file with a syntax error that mentions triton is still checked), nor one that links
            # a reference (a PyTorch fallback is reported as the CLI reports it).
            return
        trigger = self.settings.verify
        verify = trigger == "change" or (trigger == "save" and save)
        self.scheduler.update(uri, path, document.version, text, verify=verify, immediate=immediate)
        if not self.trusted:
            self.protocol.notify(STATUS, {"state": "restricted", "uri": uri, "version": document.version})

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
        self.proposals.shutdown()
        self.scheduler.shutdown()
        if self.observer is not None:
            self.observer.stop()
