"""Per-document scheduling of engine runs, after rust-analyzer's flycheck and clangd.

Each document has a generation. A new version bumps it, cancels the pending debounce and kills the worker of
the running check; a result computed for an older generation is dropped, never published. Compile runs wait
for an adaptive debounce (50 to 500 ms, tracking the last run's time, like clangd); verification runs on save
(or change, per `verify`). Runs execute `check_file` in a thread pool: the work itself is in a worker process,
the thread only waits for it, so the event loop never blocks.

The scheduler is given the function that checks a file and a factory of executors (the server passes
`check.check_file` and `executor_for`); it makes the executor from the settings, and a new one whenever the part
of them that builds it changes (`Settings.executor_settings()`: all that `executor_for` reads). Tests drive it
in-process with fakes.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Awaitable, Callable

from ..cache import Cache
from ..check import CheckRequest
from ..config import ExecutorSettings, Settings, apply_overrides
from ..jobs import Preview, Stage
from ..model import FileReport, Finding
from ..run.executor import Executor

log = logging.getLogger(__name__)

MIN_DEBOUNCE, MAX_DEBOUNCE = 0.05, 0.5
VERIFY_SOURCE = "kernel-lsp.verify"
MEASURE_SOURCE = "kernel-lsp.measure"
RUN_SOURCES = (VERIFY_SOURCE, MEASURE_SOURCE)  # what describes a run of the text: withdrawn when the text changes
QUICK_SOURCES = ("kernel-lsp.discover", "kernel-lsp.link")  # what the at-once stage finds


@dataclass
class Run:
    generation: int
    verify: bool
    cancel: threading.Event = field(default_factory=threading.Event)
    request: CheckRequest | None = None

    def kill(self) -> None:
        self.cancel.set()  # the request's cancel: its executor kills the worker within a poll


@dataclass
class Document:
    uri: str
    path: Path
    version: int | None = None
    text: str = ""
    generation: int = 0
    pending: asyncio.Task | None = None
    running: Run | None = None
    findings: dict[str, list[Finding]] = field(default_factory=dict)  # by stage source
    report: FileReport | None = None
    last_seconds: float = 0.2
    published: int = -1  # the generation whose full check was last published
    restricted: bool = False  # checked in an untrusted workspace: parsed only

    def current_report(self) -> FileReport | None:
        """The last report, only while it describes the text as it is now (numbers are never shown stale)."""
        return self.report if self.published == self.generation else None


@dataclass
class Hooks:
    """What the scheduler needs from the front end; all called on the event loop."""

    publish: Callable[[Document], None]
    started: Callable[[Document, Run], Awaitable[object]]
    finished: Callable[[Document, Run, object, FileReport | None], None]
    stage: Callable[[Document, Run, object, Stage], None]


CheckFn = Callable[[CheckRequest], FileReport]
ExecutorFor = Callable[[Settings], Executor]


class Scheduler:
    def __init__(self, hooks: Hooks, settings: Settings, root: Path | None, check: CheckFn,
                 executor_for: ExecutorFor | None = None):
        self.hooks = hooks
        self.check = check
        self.executor_for = executor_for  # None: checks get no executor (a fresh process each; tests' fakes)
        self.timeout_source = "`timeout` in [tool.kernel-lsp]"  # named in the timeout's message (the server sets it)
        self.restricted = False  # an untrusted workspace: discovery and linking only, no worker ever
        self.executor: Executor | None = None
        self.built_from: ExecutorSettings | None = None  # the settings the executor was built from
        self.docs: dict[str, Document] = {}
        self.workers = 0
        self.threads: ThreadPoolExecutor | None = None  # one thread per check at once; each waits on its worker
        # Discovery and linking run at once on every version, on their own thread, so a syntax error or a
        # broken link shows while the check threads are busy verifying other files.
        self.quick_threads = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kernel-lsp-quick")
        self.configure(settings, root)

    def warm_up(self) -> None:
        """Start the workers now, so the first check does not pay for importing torch and triton."""
        if self.executor is not None:
            self.executor.warm_up()

    def configure(self, settings: Settings, root: Path | None) -> None:
        self.settings, self.root = settings, root
        self.cache = Cache(settings.cache_path(root))
        wanted = settings.executor_settings()
        if self.executor_for is not None and wanted != self.built_from:
            old, self.executor = self.executor, self.executor_for(settings)
            self.built_from = wanted
            if old is not None:
                for doc in self.docs.values():  # cancelled, not failed: the caller checks every document again
                    if doc.running is not None:
                        doc.running.kill()
                old.close()
        workers = self.executor.capacity if self.executor is not None else settings.workers
        if workers != self.workers:  # checks at once: running ones finish on the old threads
            old_threads, self.workers = self.threads, workers
            self.threads = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kernel-lsp-check")
            if old_threads is not None:
                old_threads.shutdown(wait=False)

    def document(self, uri: str, path: Path) -> Document:
        doc = self.docs.get(uri)
        if doc is None:
            doc = self.docs[uri] = Document(uri, path)
        return doc

    def update(self, uri: str, path: Path, version: int | None, text: str, *, verify: bool, immediate: bool = False,
               refresh: bool = False) -> Document:
        """A new version of a document: cancel what runs for the old one and schedule a check of this one."""
        doc = self.document(uri, path)
        self.cancel(doc)
        doc.version, doc.text, doc.restricted = version, text, self.restricted
        withdrawn = [doc.findings.pop(src) for src in RUN_SOURCES if src in doc.findings]
        if any(withdrawn):
            self.hooks.publish(doc)  # verification and timing results were for the old text: never shown as current
        delay = 0.0 if immediate else min(MAX_DEBOUNCE, max(MIN_DEBOUNCE, doc.last_seconds / 4))
        gen = doc.generation
        loop = asyncio.get_running_loop()
        loop.create_task(self._quick(doc, gen))
        if not self.restricted:
            doc.pending = loop.create_task(self._run(doc, gen, verify, delay, refresh))
        return doc

    async def _quick(self, doc: Document, gen: int) -> None:
        """Discovery and linking of this version, published at once (no debounce, no worker)."""
        request = CheckRequest(doc.path, self.settings, self.root, source=doc.text, quick=True)
        try:
            report = await asyncio.get_running_loop().run_in_executor(self.quick_threads, self.check, request)
        except Exception:
            log.exception("quick check of %s failed", doc.uri)
            return
        if gen != doc.generation or doc.published == gen:
            return  # a newer version exists, or the full check of this one already published
        fresh = {src: [f for f in report.findings if f.source == src] for src in QUICK_SOURCES}
        if all(fresh[src] == doc.findings.get(src, []) for src in QUICK_SOURCES):
            return
        doc.findings.update(fresh)
        self.hooks.publish(doc)

    def _live(self, doc: Document, run: Run, token: object, event: Stage | Preview) -> None:
        """An event of a running check: progress goes to the front end; a verifier finding is published at once,
        while its run is still the document's current one (the final report replaces it)."""
        if not isinstance(event, Preview):
            self.hooks.stage(doc, run, token, event)
            return
        f = event.finding
        if doc.running is run and run.generation == doc.generation and f.source in RUN_SOURCES:
            doc.findings.setdefault(f.source, []).append(f)
            self.hooks.publish(doc)

    def cancel(self, doc: Document) -> None:
        doc.generation += 1
        if doc.pending is not None and not doc.pending.done():
            doc.pending.cancel()
        if doc.running is not None:
            doc.running.kill()
            doc.running = None

    def close(self, uri: str) -> None:
        doc = self.docs.pop(uri, None)
        if doc is not None:
            self.cancel(doc)
            doc.findings.clear()
            self.hooks.publish(doc)

    def shutdown(self) -> None:
        for doc in list(self.docs.values()):
            self.cancel(doc)
        if self.threads is not None:
            self.threads.shutdown(wait=False, cancel_futures=True)
        self.quick_threads.shutdown(wait=False, cancel_futures=True)
        if self.executor is not None:
            self.executor.close()

    async def _run(self, doc: Document, gen: int, verify: bool, delay: float, refresh: bool = False) -> None:
        try:
            await asyncio.sleep(delay)
        except asyncio.CancelledError:
            return
        if gen != doc.generation:
            return
        run = Run(gen, verify)
        settings = apply_overrides(self.settings, {"verification": verify})
        run.request = CheckRequest(doc.path, settings, self.root, source=doc.text, cache=self.cache,
                                   cancel=run.cancel, executor=self.executor, refresh=refresh,
                                   timeout_source=self.timeout_source)
        doc.running = run
        token = await self.hooks.started(doc, run)
        loop = asyncio.get_running_loop()
        run.request.on_event = lambda event: loop.call_soon_threadsafe(self._live, doc, run, token, event)
        start = time.monotonic()
        report: FileReport | None = None
        try:
            report = await asyncio.get_running_loop().run_in_executor(self.threads, self.check, run.request)
        except asyncio.CancelledError:
            # A newer version took over: kill this run, and still end its progress, or the editor's spinner
            # for it would spin forever.
            run.kill()
            self.hooks.finished(doc, run, token, None)
            raise
        except Exception:  # a fault of the tool: logged, the server lives on
            log.exception("check of %s failed", doc.uri)
        finally:
            if doc.running is run:
                doc.running = None
        current = gen == doc.generation and not run.cancel.is_set()
        if current and report is not None:
            doc.last_seconds = time.monotonic() - start
            doc.report = report
            by_source: dict[str, list[Finding]] = {}
            for f in report.findings:
                by_source.setdefault(f.source, []).append(f)
            keep = {src: doc.findings.get(src, []) for src in RUN_SOURCES} if not verify else {}
            doc.findings = {**keep, **by_source}
            doc.published = gen
            self.hooks.publish(doc)
        self.hooks.finished(doc, run, token, report if current else None)
