"""The code actions that change a kernel, in the language server: run a proposal, show its evidence, apply it.

A request (`kernel-lsp.propose` with uri, version, mode, kernel) runs the proposer loop (propose/loop.py) on a
thread of its own, so diagnostics of every file go on meanwhile, with `$/progress` naming the stage and the
candidate counts; cancelling the progress kills its workers. A second request for the same document, mode and
kernel joins the first instead of starting another. Only an accepted (verified) proposal is ever offered, and
only for the text it was computed from:
- where the client supports change annotations, `workspace/applyEdit` carries a `TextDocumentEdit` for the
  document version of the request and an annotation that needs confirmation (the editor shows a preview), with
  the evidence as its description;
- elsewhere the user is asked first (Apply / Show diff / Discard); "Show diff" opens the diff and the evidence as
  a document, then asks again.
Either way the edit is refused if the document changed since the request (a client rejects a stale version too).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types

from ..model import Proposal
from ..propose import edits
from ..propose.loop import Cancelled, ProposeRequest, propose

log = logging.getLogger(__name__)

PROPOSE = "kernel-lsp.propose"
TITLES = {"fix": "Fix with LLM (verified before it is applied)",
          "optimize": "Optimize toward roofline (LLM, verified and timed)",
          "tune": "Tune launch parameters (search, verified and timed)"}
ANNOTATION = "kernel-lsp.verified"


@dataclass
class Running:
    key: tuple
    cancel: threading.Event = field(default_factory=threading.Event)
    future: asyncio.Future | None = None


class Proposals:
    """The proposals in flight for one server."""

    def __init__(self, server: Any):
        self.server = server
        self.running: dict[tuple, Running] = {}
        self.executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="kernel-lsp-propose")

    def shutdown(self) -> None:
        for r in self.running.values():
            r.cancel.set()
        self.executor.shutdown(wait=False, cancel_futures=True)

    async def request(self, uri: str, version: int | None, mode: str, kernel: str | None) -> None:
        ls = self.server
        doc = ls.scheduler.docs.get(uri)
        if doc is None:
            ls.window_show_message(types.ShowMessageParams(types.MessageType.Warning,
                                                           "kernel-lsp: open the file before asking for a change"))
            return
        key = (uri, mode, kernel)
        if key in self.running:
            ls.window_show_message(types.ShowMessageParams(
                types.MessageType.Info, f"kernel-lsp: {mode} of {doc.path.name} is already running; joined it"))
            await asyncio.shield(self.running[key].future)
            return
        if mode in ("fix", "optimize") and not ls.settings.llm.endpoint:
            ls.window_show_message(types.ShowMessageParams(
                types.MessageType.Warning, "kernel-lsp: no LLM endpoint is configured; set [tool.kernel-lsp.llm] "
                "endpoint and model, or the kernelLsp.llm settings (docs/code-actions.md)"))
            return
        untimed = ls.settings.timing_unavailable() if mode in ("optimize", "tune") else None
        if untimed:  # never offered there (features.py); a client that sends the command anyway is told why
            ls.window_show_message(types.ShowMessageParams(
                types.MessageType.Warning, f"kernel-lsp: {mode} cannot accept anything here: {untimed}; set a runner "
                "that reaches a GPU (docs/performance-method.md)"))
            return
        running = Running(key)
        self.running[key] = running
        loop = asyncio.get_running_loop()
        running.future = loop.create_future()
        try:
            await self._run(doc, version if version is not None else doc.version, mode, kernel, running)
        finally:
            self.running.pop(key, None)
            if not running.future.done():
                running.future.set_result(None)

    async def _run(self, doc, version, mode: str, kernel: str | None, running: Running) -> None:
        ls = self.server
        text = doc.text
        loop = asyncio.get_running_loop()
        token = f"kernel-lsp/propose/{mode}/{doc.path.name}/{time.monotonic_ns()}"
        progress = False
        try:
            await asyncio.wait_for(ls.work_done_progress.create_async(token), 2)
            ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
                title=f"kernel-lsp: {mode} {doc.path.name}", cancellable=True, message="starting"))
            progress = True
            future = ls.work_done_progress.tokens.get(token)
            if future is not None:
                future.add_done_callback(lambda f: f.cancelled() and running.cancel.set())
        except Exception:
            pass

        def report(message: str) -> None:
            if progress:
                loop.call_soon_threadsafe(lambda: token in ls.work_done_progress.tokens and
                                          ls.work_done_progress.report(token, types.WorkDoneProgressReport(
                                              message=message[:200])))

        req = ProposeRequest(mode, doc.path, text, ls.settings, ls.root, kernel, executor=ls.scheduler.executor,
                             cancel=running.cancel, progress=report)
        proposal: Proposal | None = None
        try:
            proposal = await loop.run_in_executor(self.executor, propose, req)
        except Cancelled:
            pass
        except Exception:
            log.exception("%s of %s failed", mode, doc.path.name)
            ls.window_show_message(types.ShowMessageParams(types.MessageType.Error,
                                                           f"kernel-lsp: {mode} failed; the output log has details"))
        finally:
            if progress:
                ls.work_done_progress.tokens.pop(token, None)
                ls.work_done_progress.end(token, types.WorkDoneProgressEnd(
                    message="cancelled" if proposal is None else proposal.summary[:200]))
        if proposal is None:
            return
        if not proposal.accepted or proposal.new_text is None:
            ls.window_show_message(types.ShowMessageParams(
                types.MessageType.Info, f"kernel-lsp: {mode} of {doc.path.name}: {proposal.summary} "
                f"({len(proposal.candidates)} candidate(s), {proposal.tokens} tokens)"))
            return
        await self.offer(doc, version, text, proposal)

    def _evidence(self, proposal: Proposal) -> str:
        tried = len(proposal.candidates)
        before = f"; before: {proposal.before.summary}" if proposal.before else ""
        after = f"; after: {proposal.after.summary}" if proposal.after else ""
        ok = sum(1 for v in proposal.variants if v.verdict == "ok")
        return (f"{proposal.summary}{before}{after}; {ok} of {len(proposal.variants)} input variants pass; "
                f"{tried} candidate(s) tried, {proposal.tokens} tokens, {proposal.seconds:.0f} s")

    def _diff_document(self, doc, proposal: Proposal) -> Path:
        from ..render.text import render_proposal
        base = self.server.settings.cache_path(self.server.root) or Path("/tmp")
        name = f"{doc.path.stem}-{proposal.mode}-{hashlib.sha256(proposal.diff.encode()).hexdigest()[:8]}.diff"
        path = base / "proposals" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_proposal(proposal), encoding="utf-8")
        return path

    async def offer(self, doc, version, text: str, proposal: Proposal) -> None:
        ls = self.server
        evidence = self._evidence(proposal)
        caps = ls.client_capabilities.workspace
        annotations = bool(caps and caps.workspace_edit and caps.workspace_edit.change_annotation_support)
        if not annotations:
            choice = await ls.window_show_message_request_async(types.ShowMessageRequestParams(
                type=types.MessageType.Info,
                message=f"kernel-lsp: verified {proposal.mode} for {doc.path.name}: {evidence}",
                actions=[types.MessageActionItem(title="Apply"), types.MessageActionItem(title="Show diff"),
                         types.MessageActionItem(title="Discard")]))
            if choice is not None and choice.title == "Show diff":
                await ls.window_show_document_async(types.ShowDocumentParams(
                    uri=self._diff_document(doc, proposal).resolve().as_uri(), take_focus=True))
                choice = await ls.window_show_message_request_async(types.ShowMessageRequestParams(
                    type=types.MessageType.Info, message=f"kernel-lsp: apply the verified {proposal.mode}?",
                    actions=[types.MessageActionItem(title="Apply"), types.MessageActionItem(title="Discard")]))
            if choice is None or choice.title != "Apply":
                return
        await self.apply(doc, version, text, proposal, evidence, annotations)

    async def apply(self, doc, version, text: str, proposal: Proposal, evidence: str, annotated: bool) -> None:
        ls = self.server
        if doc.version != version or doc.text != text:
            ls.window_show_message(types.ShowMessageParams(
                types.MessageType.Warning, f"kernel-lsp: {doc.path.name} changed since the {proposal.mode} was asked "
                "for; the verified edit was computed for the old text and is not applied (ask again)"))
            return
        edits_ = []
        for h in edits.hunks(text, proposal.new_text):
            rng = types.Range(types.Position(h.start, 0), types.Position(h.end, 0))
            if annotated:
                edits_.append(types.AnnotatedTextEdit(annotation_id=ANNOTATION, range=rng, new_text="".join(h.lines)))
            else:
                edits_.append(types.TextEdit(range=rng, new_text="".join(h.lines)))
        change = types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=doc.uri, version=version), edits=edits_)
        workspace_edit = types.WorkspaceEdit(document_changes=[change])
        if annotated:
            workspace_edit.change_annotations = {ANNOTATION: types.ChangeAnnotation(
                label=f"kernel-lsp: verified {proposal.mode}", needs_confirmation=True, description=evidence)}
        result = await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(
            edit=workspace_edit, label=f"kernel-lsp: verified {proposal.mode}"))
        if result is None or not result.applied:
            reason = getattr(result, "failure_reason", None) if result else None
            ls.window_show_message(types.ShowMessageParams(
                types.MessageType.Info, f"kernel-lsp: the {proposal.mode} was not applied"
                + (f" ({reason})" if reason else "")))
