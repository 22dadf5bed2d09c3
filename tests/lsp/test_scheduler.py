"""The scheduler in-process, with a fake check function: generations, the at-once stage, cancellation and stale
results, without a server, a worker or Triton (as jedi-language-server tests its debounce)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from kernel_lsp.check import CheckRequest
from kernel_lsp.config import Settings
from kernel_lsp.lsp.scheduler import Hooks, Scheduler
from kernel_lsp.model import FileReport, Finding, Severity, Span

URI, PATH = "file:///w/k.py", Path("/w/k.py")


def finding(code: str, source: str, line: int = 0) -> Finding:
    return Finding(str(PATH), Span(line), Severity.ERROR, code, code, source)


class FakeCheck:
    """Stands in for check.check_file: the report names the text it checked; a full run can be held."""

    def __init__(self):
        self.requests: list[CheckRequest] = []
        self.hold: dict[str, threading.Event] = {}  # text -> released when set
        self.quick_findings: list[Finding] = []

    def __call__(self, req: CheckRequest) -> FileReport:
        self.requests.append(req)
        if req.quick:
            return FileReport(str(req.path), list(self.quick_findings))
        gate = self.hold.get(req.source)
        if gate is not None:  # held until released, or until the run is cancelled (its worker killed)
            deadline = time.monotonic() + 10
            while not gate.is_set() and not req.cancel.is_set() and time.monotonic() < deadline:
                gate.wait(0.01)
        codes = req.source.split()
        return FileReport(str(req.path), [finding(c, s) for c, s in (x.split("@") for x in codes)])


class Recorder:
    def __init__(self):
        self.published: list[tuple[int | None, list[str]]] = []
        self.finished: list[tuple[int, bool]] = []

    def hooks(self) -> Hooks:
        async def started(doc, run):
            return f"token-{run.generation}"
        return Hooks(publish=lambda doc: self.published.append(
                         (doc.version, sorted(f.code for fs in doc.findings.values() for f in fs))),
                     started=started,
                     finished=lambda doc, run, token, report: self.finished.append((run.generation, report is not None)),
                     stage=lambda doc, run, token, event: None)


async def settle(scheduler: Scheduler, seconds: float = 0.3) -> None:
    await asyncio.sleep(seconds)


def make(fake: FakeCheck, rec: Recorder) -> Scheduler:
    return Scheduler(rec.hooks(), Settings(), Path("/w"), fake)


async def test_scheduler_publishes_the_full_check_with_its_version():
    fake, rec = FakeCheck(), Recorder()
    s = make(fake, rec)
    s.update(URI, PATH, 1, "KL200@kernel-lsp.verify", verify=True, immediate=True)
    await settle(s)
    assert rec.published[-1] == (1, ["KL200"]) and rec.finished == [(1, True)]
    s.shutdown()


async def test_scheduler_drops_the_result_of_an_older_generation():
    fake, rec = FakeCheck(), Recorder()
    s = make(fake, rec)
    fake.hold["KL200@kernel-lsp.verify"] = threading.Event()
    s.update(URI, PATH, 1, "KL200@kernel-lsp.verify", verify=True, immediate=True)
    await asyncio.sleep(0.1)  # the first run is now blocked inside the check
    s.update(URI, PATH, 2, "KL201@kernel-lsp.verify", verify=True, immediate=True)
    await settle(s)
    assert all(codes != ["KL200"] for _, codes in rec.published), rec.published  # never shown
    assert rec.published[-1] == (2, ["KL201"])
    first = next(r for r in fake.requests if r.source == "KL200@kernel-lsp.verify" and not r.quick)
    assert first.cancel.is_set()  # the old run's worker was told to stop
    assert rec.finished == [(1, False), (2, True)]  # the old run still ended its progress
    s.shutdown()


async def test_scheduler_publishes_discovery_at_once_while_the_check_runs():
    fake, rec = FakeCheck(), Recorder()
    s = make(fake, rec)
    fake.quick_findings = [finding("KL001", "kernel-lsp.discover", 3)]
    gate = fake.hold["KL200@kernel-lsp.verify"] = threading.Event()
    s.update(URI, PATH, 1, "KL200@kernel-lsp.verify", verify=True, immediate=True)
    await asyncio.sleep(0.2)
    assert rec.published == [(1, ["KL001"])]  # before the held full check finished
    gate.set()
    await settle(s)
    s.shutdown()


async def test_scheduler_withdraws_verification_findings_on_edit():
    fake, rec = FakeCheck(), Recorder()
    s = make(fake, rec)
    s.update(URI, PATH, 1, "KL200@kernel-lsp.verify", verify=True, immediate=True)
    await settle(s)
    gate = fake.hold["KL100@kernel-lsp.compile"] = threading.Event()
    s.update(URI, PATH, 2, "KL100@kernel-lsp.compile", verify=False, immediate=True)
    await asyncio.sleep(0.1)
    assert rec.published[-1] == (2, [])  # KL200 described the old text: withdrawn at once
    gate.set()
    await settle(s)
    assert rec.published[-1] == (2, ["KL100"])
    s.shutdown()


async def test_scheduler_keeps_load_findings_through_the_quick_pass():
    """KL005 from the worker (source kernel-lsp.load) is not the quick pass's to withdraw: an edit that triggers
    discovery and linking alone must leave it shown until the next full check replaces it."""
    fake, rec = FakeCheck(), Recorder()
    s = make(fake, rec)
    s.update(URI, PATH, 1, "KL005@kernel-lsp.load", verify=True, immediate=True)
    await settle(s)
    assert rec.published[-1] == (1, ["KL005"])
    fake.quick_findings = [finding("KL004", "kernel-lsp.link")]
    gate = fake.hold["KL005@kernel-lsp.load KL100@kernel-lsp.compile"] = threading.Event()
    s.update(URI, PATH, 2, "KL005@kernel-lsp.load KL100@kernel-lsp.compile", verify=False, immediate=True)
    await asyncio.sleep(0.2)
    assert rec.published[-1] == (2, ["KL004", "KL005"])
    gate.set()
    await settle(s)
    s.shutdown()


async def test_scheduler_close_publishes_an_empty_list():
    fake, rec = FakeCheck(), Recorder()
    s = make(fake, rec)
    s.update(URI, PATH, 1, "KL200@kernel-lsp.verify", verify=True, immediate=True)
    await settle(s)
    s.close(URI)
    assert rec.published[-1] == (1, []) and URI not in s.docs
    s.shutdown()
