"""Check one file, parent side: read, discover, link, consult the cache, run the worker, collect findings.

This module sits above both the engine (whose parent-side stages it calls, and whose worker-side stages the
child runs) and the worker (whose Executor runs the job). Imports neither torch nor triton; user code runs only in
a worker. It is the one entry point the CLI, the language server, the proposers and the batch API share
(`check_file`), so they always agree.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .cache import Cache, cache_key
from .codes import severity_of
from .config import Settings
from .source.deps import dependencies
from .source.discover import discover_source
from .source.link import Link, LinkResult, ignored_codes, link_file, parse_pragmas
from .source.lint import lint_report
from .jobs import CheckJob, Device, FindingEvent, KernelEvent, KernelRef, MeasureOptions, Preview, Stage, Stat
from .model import FileReport, Finding, KernelFacts, KernelInfo, Span, split_lines
from .run.executor import Executor, LocalExecutor
from .run.sandbox import options_from, redact, secret_values
from .run.outcome import WorkerOutcome, how_it_ended


@dataclass
class CheckRequest:
    path: Path
    settings: Settings
    root: Path | None = None
    cli_reference: Path | None = None
    source: str | None = None  # unsaved editor text; read from disk when None
    cache: Cache | None = None
    on_event: Callable[[Stage | Preview], None] | None = None  # progress from the worker
    cancel: threading.Event | None = None  # set it (from any thread) to stop the check and kill its worker
    executor: Executor | None = None  # where the job runs (run/executor.py); a fresh process when None
    refresh: bool = False  # run the worker even on a cache hit ("Verify again now"), then store the result
    quick: bool = False  # discovery and linking only (the language server's at-once stage): no cache, no worker
    measure_against: str | None = None  # another version of the file, raced against this one (the proposers)
    # A link fixed beforehand, used instead of linking the source: the proposers pin the link of the user's file for
    # every candidate, with the texts of its reference files as they were then (path -> text, run instead of the
    # files on disk; propose/contract.py).
    link: Link | None = None
    pinned: dict[str, str] | None = None
    timeout_source: str = "`timeout` in [tool.kernel-lsp]"  # how the user set it, for the timeout's message
    # Honour `# kernel-lsp: ignore[...]` in the text. The batch API turns it off: the texts it checks are
    # candidates (a model's output), which must not silence the findings they are judged by.
    apply_ignores: bool = True


def decode_source(data: bytes) -> str:
    """Source bytes as Python reads them: UTF-8, or the encoding a PEP 263 `coding:` comment declares.
    Raises UnicodeDecodeError (or SyntaxError for an unknown declared encoding)."""
    import io
    import tokenize
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as e:
        if "encoding declaration" not in str(e):
            raise
        encoding = "utf-8"  # no declaration and not UTF-8: decoding says where it breaks
    text = data.decode(encoding)
    return text[1:] if text.startswith("\ufeff") else text


def read_source(path: Path) -> tuple[str | None, Finding | None]:
    try:
        data = path.read_bytes()
    except OSError as e:
        why = e.strerror
        if path.is_symlink() and not path.exists():
            why = f"it is a symbolic link to {os.readlink(path)}, which does not exist"
        return None, Finding(str(path), Span(0), severity_of("KL001"), "KL001", f"cannot read file: {why}")
    try:
        return decode_source(data), None
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n")
        return None, Finding(str(path), Span(line), severity_of("KL001"), "KL001",
                             f"file is not valid {e.encoding} (byte {e.start}): Python source is UTF-8 unless a "
                             "`# -*- coding: ... -*-` line on line 1 or 2 declares another encoding")
    except SyntaxError as e:  # an unknown encoding in the coding comment
        return None, Finding(str(path), Span(max((e.lineno or 1) - 1, 0)), severity_of("KL001"), "KL001",
                             f"cannot read the file: {e.msg}")


def _syntax_finding(path: Path, err: SyntaxError) -> Finding:
    line = max((err.lineno or 1) - 1, 0)
    col = max((err.offset or 1) - 1, 0)
    return Finding(str(path), Span(line, col, line, col + 1), severity_of("KL001"), "KL001",
                   f"syntax error: {err.msg}", source="kernel-lsp.discover")


def kernel_refs(kernels: list[KernelInfo]) -> list[KernelRef]:
    """Discovery facts the worker needs to place findings (it never re-parses the file)."""
    return [KernelRef(k.name, k.qualname, k.def_span.line, k.def_span.col, k.name_span, k.end_line, k.is_helper,
                      [s.span for s in k.launches]) for k in kernels]


def check_file(req: CheckRequest) -> FileReport:
    """One file end to end, with what its text alone tells besides (a malformed pragma, a PyTorch fallback:
    source/lint.py), for every front end alike."""
    report, source = _check_file(req)
    return lint_report(report, source, req.cli_reference, req.root, req.settings.references, req.apply_ignores)


def _check_file(req: CheckRequest) -> tuple[FileReport, str | None]:
    path = req.path
    report = FileReport(str(path))
    source = req.source
    if source is None:
        source, problem = read_source(path)
        if problem:
            report.findings.append(problem)
            return report, None
    found = discover_source(source, str(path))
    if found.syntax_error is not None:
        report.findings.append(_syntax_finding(path, found.syntax_error))
        return report, source
    if not found.kernels:
        return report, source
    report.kernels = {k.name: KernelFacts(def_line=k.def_span.line, qualname=k.qualname, helper=k.is_helper or None)
                      for k in found.kernels}
    linked = LinkResult(req.link) if req.link is not None else link_file(
        path, source, cli_reference=req.cli_reference, root=req.root, mapping=req.settings.references)
    report.findings.extend(linked.findings)
    if linked.link is None or req.quick:
        return _finish(report, source, req.apply_ignores), source

    link_spec = linked.link.to_spec()
    if req.pinned:
        link_spec.reference_text = req.pinned.get(link_spec.reference)
        link_spec.inputs_text = req.pinned.get(link_spec.inputs_path)
    extra = [linked.link.reference] + ([linked.link.inputs_path] if linked.link.inputs_path else [])
    report.dependencies = [str(p) for p in dependencies(source, path, req.root, extra)]
    key = cache_key(source, link_spec.to_dict(), req.settings.fingerprint(), report.dependencies)
    if req.cache is not None and not req.refresh and req.measure_against is None:
        hit = req.cache.get(key)
        if hit is not None:
            hit.path = str(path)
            for f in hit.findings:
                f.path = str(path)
            hit.stats = {"cache_hits": 1}
            hit.dependencies = report.dependencies
            return hit, source

    job = CheckJob(path=str(path), link=link_spec, kernels=kernel_refs(found.kernels), anchor=linked.link.anchor,
                   targets=list(req.settings.targets), seed=req.settings.seed, verify=req.settings.verification,
                   device=req.settings.device, measure=measure_options(req.settings, source),
                   sandbox=options_from(req.settings.sandbox))
    job.rerun.enabled = req.settings.isolated_rerun
    job.measure.against = req.measure_against
    outcome = _run_worker(req, job, source, report.dependencies)
    report.stats = {"workers": 1, "warm_workers": int(outcome.warm), "compiles": 0, "launches": 0,
                    "seconds": round(outcome.seconds, 3)}
    if outcome.worker:
        report.stats["worker"] = outcome.worker
    _absorb(report, outcome, linked.link.anchor, req.timeout_source, verify=job.verify)
    _finish(report, source, req.apply_ignores)
    if req.cache is not None and outcome.completed and not outcome.cancelled and req.measure_against is None:
        req.cache.put(key, report)
    return report, source


def measure_options(settings: Settings, source: str) -> MeasureOptions:
    """The measure stage's options: the `measure` settings, with `flops=` / `bytes=` from the file's pragmas."""
    m = settings.measure
    declared = {k: v for _, kv in parse_pragmas(source) for k, v in kv.items() if k in ("flops", "bytes")}
    return MeasureOptions(enabled=m.mode != "off", cache=m.cache, compile=m.compile,
                          compile_severity=m.compile_severity, budget_s=float(m.seconds),
                          precision=float(m.precision), time=m.time,
                          flops=declared.get("flops", None if m.flops is None else str(m.flops)),
                          bytes=declared.get("bytes", None if m.bytes is None else str(m.bytes)))


def shipped_files(source: str, job: CheckJob, dependencies: list[str]) -> dict[str, str]:
    """The texts a worker on another machine needs: the kernel file (as the editor holds it), the reference, the
    input factory (their pinned texts, when the link pins them), and every workspace module they import. No shared
    file system is assumed."""
    files = {job.path: source}
    for p, text in ((job.link.reference, job.link.reference_text), (job.link.inputs_path, job.link.inputs_text)):
        if p and text is not None:
            files.setdefault(p, text)
    for p in [job.link.reference, job.link.inputs_path, *dependencies]:
        if p and p not in files:
            try:
                files[p] = Path(p).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue  # the worker reports what it then cannot import
    return files


def _run_worker(req: CheckRequest, job: CheckJob, source: str, dependencies: list[str]) -> WorkerOutcome:
    if req.source is not None:
        # The editor's unsaved text is what the user sees: the worker must run exactly that.
        job.source_override = source
    executor = req.executor or LocalExecutor(1, warm=False)
    files = shipped_files(source, job, dependencies) if executor.ships_files else None
    return executor.run(job, files, req.settings.timeout, _live_events(req, job, source),
                        req.cancel or threading.Event())


def _live_events(req: CheckRequest, job: CheckJob, source: str) -> Callable[[Stage | Preview], None] | None:
    """The front end's callback, given live findings as the final report will show them: on this path, on the
    line's text, and not at all where an ignore pragma suppresses them."""
    if req.on_event is None:
        return None
    ignores = ignored_codes(source) if req.apply_ignores else {}

    def forward(event: Stage | Preview) -> None:
        if isinstance(event, Preview):
            f = event.finding
            f.path = job.path
            _redact(f, secret_values())
            _widen([f], source)
            if f.code in ignores.get(f.span.line, set()):
                return
        req.on_event(event)
    return forward


def _redact(finding: Finding, secrets: list[str]) -> None:
    """Checked code can put anything in what it raises or prints (a key it read, say): no secret of this process
    reaches a report, an editor or a prompt."""
    if secrets:
        finding.message = redact(finding.message, secrets)
        finding.data = redact(finding.data, secrets)


def _absorb(report: FileReport, outcome: WorkerOutcome, anchor: Span, timeout_source: str = "",
            verify: bool = False) -> None:
    secrets = secret_values()
    for e in outcome.events:
        if isinstance(e, FindingEvent):
            e.finding.path = report.path
            _redact(e.finding, secrets)
            report.findings.append(e.finding)
        elif isinstance(e, KernelEvent):
            report.kernels.setdefault(e.name, KernelFacts()).merge(e.facts)
        elif isinstance(e, Stat):
            report.stats[e.name] = report.stats.get(e.name, 0) + e.value
        elif isinstance(e, Device):
            report.stats["device"] = e.device
    timeline = [[e.at, e.stage, e.detail] for e in outcome.events if isinstance(e, Stage) and e.at is not None]
    if timeline:
        report.stats["timeline"] = timeline  # where the worker's time went (`check --timings`)
    if outcome.start_seconds is not None:
        report.stats["worker_start_s"] = outcome.start_seconds
        if outcome.startup:
            report.stats["worker_startup"] = outcome.startup
    report.findings += how_it_ended(outcome, report, anchor, timeout_source, verify)


def _widen(findings: list[Finding], source: str) -> None:
    """Findings placed on a whole line (column 0, width 1) cover the line's text, for a visible squiggle."""
    lines = split_lines(source)
    for f in findings:
        s = f.span
        if s.col == 0 and (s.end_col in (None, 1)) and (s.end_line in (None, s.line)) and 0 <= s.line < len(lines):
            text = lines[s.line]
            indent = len(text) - len(text.lstrip())
            if text.strip():
                f.span = Span(s.line, indent, s.line, len(text.rstrip()))


def _finish(report: FileReport, source: str, apply_ignores: bool = True) -> FileReport:
    _widen(report.findings, source)
    ignores = ignored_codes(source) if apply_ignores else {}
    if ignores:
        report.findings = [f for f in report.findings if f.code not in ignores.get(f.span.line, set())]
    report.findings.sort(key=Finding.sort_key)
    return report
