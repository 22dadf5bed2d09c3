"""The batch API, for reward pipelines and evaluation harnesses: check many kernels, get a typed result each.

    from kernel_lsp.api import Item, evaluate

    for result in evaluate([Item(model_output, reference=problem_source), ...]):
        print(result.index, result.verdict, result.correct, result.speedup)

Results stream in the order checks finish, each carrying its item's index; `evaluate_async` is the same as an
async generator. Every item is checked exactly as `kernel-lsp check` checks a file (check.check_file, through the
executor the settings ask for: local processes, GPUs, a runner or Ray), so the player process, the verifier, the
evidence runs and the measure stage all apply. Items are written to a private temporary workspace, never the caller's
folder, and removed afterwards; nothing is cached, but identical items of one call (same text, link, name and
options) are checked once.

Invariants a reward pipeline rests on:
- Every item ends in exactly one Result; nothing an item holds (a bad name, text that is not text, bad options) and
  no fault of a check raises out of `evaluate`: it becomes that item's "error" result, and the others go on.
- The caller's reference wins: with `reference` or `reference_path`, link pragmas in the item's text are ignored
  (KL008), and `# kernel-lsp: ignore[...]` pragmas never apply to items (a candidate must not silence its findings).
- At most the executor's `capacity` checks run for one call, and a call whose results are no longer read (the
  generator closed, garbage-collected, or just left unread) starts no more of them.

A verdict is one of:
- "verified": no error or warning, and every kernel was verified against the reference;
- "failed": an error or warning about the implementation (a wrong result, a crash, its own timeout, a cheat);
- "unverified": nothing wrong was found, but not every kernel was verified (no Triton kernel at all, no reference,
  code that insists on CUDA on a CPU machine);
- "error": the item could not be judged, and `error` says whose fault that is, never the implementation's:
  "caller" (the item itself: not text, a bad name or option, a missing reference_path), "reference" (the
  caller's reference lacks Model, get_inputs or get_init_inputs, or fails by itself, KL003), "infrastructure"
  (no worker, KL303; an executor that raised; a timeout before the checked code started, waiting for a worker or
  a GPU; a fault of kernel-lsp, KL900).
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import shutil
import tempfile
import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Iterable, Iterator

from .check import CheckRequest, check_file
from .codes import severity_of
from .config import ConfigError, Settings, apply_overrides
from .model import FileReport, Finding, Severity, Span, Speedup
from .run.executor import Executor, executor_for
from .verdict import CHEAT_CODES, NOT_COMPILED, error_of, file_verdict, waiting

# Options an item may not set: they decide the executor, which the whole batch shares.
SHARED_OPTIONS = {"device", "runner", "workers", "executor", "ray_address", "ray-address", "cache_dir", "cache-dir"}


@dataclass
class Item:
    """One kernel to check. `implementation` is the kernel file's text; its reference is `reference` (a PyTorch
    reference module's text, KernelBench style: Model, get_inputs, get_init_inputs), or a file at
    `reference_path`, or none (the implementation links itself: a `# kernel-lsp:` pragma or Model in the same
    file). `name` is the file name findings are reported on (a `.py` name). `options` are settings for this item
    alone ({"timeout": 120, "targets": ["sm_80"]})."""

    implementation: str
    reference: str | None = None
    reference_path: str | None = None
    name: str = "kernel.py"
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class Result:
    index: int  # the item's position in the input
    verdict: str  # "verified", "failed", "unverified" or "error"
    findings: list[Finding]  # paths are the item's `name` (or "reference.py")
    speedups: list[Speedup]  # against "eager" and "torch.compile", each with its 95% interval (low, high); GPU only
    seconds: float
    stats: dict[str, Any] = field(default_factory=dict)
    report: FileReport | None = None  # everything the check learned (kernels, compile facts, variants)
    # Plain fields for a reward function, all derived from the above:
    error: str | None = None  # with verdict "error": "caller", "reference" or "infrastructure"; else None
    compiled: bool = False  # every kernel the implementation launched compiled for every target
    correct: bool = False  # verdict == "verified"
    cheat_detected: bool = False  # a finding that the implementation games the check (CHEAT_CODES)
    timed_out: bool = False  # the checked code ran past the item's timeout (KL301; not a wait for a worker)
    speedup: float | None = None  # against PyTorch eager, measured on a GPU only; None when not measured
    speedup_low: float | None = None  # its 95% interval
    speedup_high: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "verdict": self.verdict, "error": self.error, "compiled": self.compiled,
                "correct": self.correct, "cheat_detected": self.cheat_detected, "timed_out": self.timed_out,
                "speedup": self.speedup, "speedup_low": self.speedup_low, "speedup_high": self.speedup_high,
                "findings": [f.to_dict() for f in self.findings], "speedups": [s.to_dict() for s in self.speedups],
                "seconds": self.seconds, "stats": self.stats}


def evaluate(items: Iterable[Item], *, executor: Executor | None = None, settings: Settings | None = None,
             measure: bool = True) -> Iterator[Result]:
    """Check every item; yield each Result as its check finishes. `executor` defaults to `executor_for(settings)`
    (then closed at the end); `settings` to the defaults; `measure=False` turns off timing on a GPU. Items are
    read as checks start, `capacity` of them ahead of what was yielded; stopping the iteration early (or dropping
    the generator) cancels the checks still running."""
    batch = _Batch(items, executor, settings, measure)
    try:
        while True:
            yield from batch.drain()
            if not batch.running:
                return
            done, _ = wait(list(batch.running), return_when=FIRST_COMPLETED)
            for future in done:
                yield from batch.finish(future)
    finally:
        batch.close()


async def evaluate_async(items: Iterable[Item], *, executor: Executor | None = None, settings: Settings | None = None,
                         measure: bool = True) -> AsyncIterator[Result]:
    """`evaluate` as an async generator, for pipelines that run on an event loop: checks run on threads (each
    waiting on its worker process), never blocking the loop. `aclose()`, or cancelling the task that iterates,
    cancels the checks still running."""
    batch = _Batch(items, executor, settings, measure)
    waiting: dict[Future, asyncio.Future] = {}
    try:
        while True:
            for result in batch.drain():
                yield result
            if not batch.running:
                return
            for future in batch.running:
                if future not in waiting:
                    waiting[future] = asyncio.wrap_future(future)
            await asyncio.wait(list(waiting.values()), return_when=asyncio.FIRST_COMPLETED)
            for future in [f for f in batch.running if f.done()]:
                waiting.pop(future, None)
                for result in batch.finish(future):
                    yield result
    finally:
        batch.cancel.set()
        # Closing waits for the running checks to end (their workers are being killed): off the event loop.
        await asyncio.shield(asyncio.to_thread(batch.close))


class _Batch:
    """One call's scheduling, shared by `evaluate` and `evaluate_async`: which items run, which wait for an
    identical item's result, which are answered without a worker. Used from one thread at a time (the
    generator's); the checks themselves run on the pool's threads."""

    def __init__(self, items: Iterable[Item], executor: Executor | None, settings: Settings | None, measure: bool):
        settings = settings or Settings()
        if not measure:
            settings = apply_overrides(settings, {"measure": {"mode": "off"}})
        self.settings = settings
        self.own = executor is None
        self.executor = executor or executor_for(settings)
        self.capacity = max(1, self.executor.capacity)
        self.cancel = threading.Event()
        self.pool = ThreadPoolExecutor(max_workers=self.capacity, thread_name_prefix="kernel-lsp-evaluate")
        self.items = enumerate(items)
        self.exhausted = False
        self.ready: deque[Result] = deque()  # results to hand out without waiting
        self.running: dict[Future, tuple[int, Item, str | None]] = {}  # a check -> its index, item and dedup key
        self.copies: dict[str, list[int]] = {}  # an identical item's key -> the indices waiting for its result
        self.finished: dict[str, Result] = {}  # results of this call by key, for identical items that come later

    def drain(self) -> Iterator[Result]:
        """The results ready now, one at a time, the running checks topped up before each: items are read only as
        results are taken."""
        while True:
            self.top_up()
            if not self.ready:
                return
            yield self.ready.popleft()

    def top_up(self) -> None:
        """Read items until `capacity` checks run, or one item has a result at once (a caller's mistake, a copy of
        an item already checked): reading no further than that keeps an unread call from starting checks."""
        while not self.exhausted and len(self.running) < self.capacity and not self.ready:
            try:
                index, item = next(self.items)
            except StopIteration:
                self.exhausted = True
                return
            problem = _item_problem(item)
            if problem is not None:
                self.ready.append(_error_result(index, _safe_name(item), problem, "caller"))
                continue
            key = _key(item)
            if key in self.finished:
                self.ready.append(_copy(self.finished[key], index))
            elif key in self.copies:
                self.copies[key].append(index)
            else:
                if key is not None:
                    self.copies[key] = []
                future = self.pool.submit(_evaluate_one, index, item, self.settings, self.executor, self.cancel)
                self.running[future] = (index, item, key)

    def finish(self, future: Future) -> list[Result]:
        """The result of a check that ended, and one for each identical item that waited for it."""
        index, item, key = self.running.pop(future)
        try:
            result = future.result()
        except Exception as e:  # _evaluate_one catches everything; this is only a last guard
            result = _error_result(index, _safe_name(item), f"{type(e).__name__}: {e}", "infrastructure", "KL900")
        out = [result]
        if key is not None:
            self.finished[key] = result
            out += [_copy(result, i) for i in self.copies.pop(key, [])]
        return out

    def close(self) -> None:
        self.cancel.set()
        self.pool.shutdown(wait=True, cancel_futures=True)
        if self.own:
            self.executor.close()


def _item_problem(item: Any) -> str | None:
    """What makes an item uncheckable as given (the caller's mistake, not the implementation's), or None."""
    if not isinstance(item, Item):
        return f"an item must be a kernel_lsp.api.Item, got {type(item).__name__}"
    for what, value in (("implementation", item.implementation), ("reference", item.reference)):
        if value is None and what == "reference":
            continue
        if not isinstance(value, str):
            hint = " (decode it first)" if isinstance(value, (bytes, bytearray)) else ""
            return f"{what} must be a str, got {type(value).__name__}{hint}"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            return f"{what} is not valid text: {e.reason} at character {e.start} ({value[e.start]!r})"
    if not isinstance(item.name, str):
        return f"name must be a str, got {type(item.name).__name__}"
    base = os.path.basename(item.name)
    if not base.endswith(".py") or base == ".py" or "\x00" in base or base != base.strip():
        return f"name {item.name!r}: a Python file name is needed (such as kernel.py)"
    if item.reference_path is not None:
        if item.reference is not None:
            return "give the reference as text (reference) or as a file (reference_path), not both"
        if not isinstance(item.reference_path, (str, os.PathLike)):
            return f"reference_path must be a path, got {type(item.reference_path).__name__}"
        if not Path(item.reference_path).is_file():
            return f"reference_path {os.fspath(item.reference_path)!r} is not a file"
    if not isinstance(item.options, dict):
        return f"options must be a dict, got {type(item.options).__name__}"
    shared = SHARED_OPTIONS & set(item.options)
    if shared:
        return f"options: {sorted(shared)[0]}: set it for the whole batch (evaluate's settings), not per item"
    return None


def _key(item: Item) -> str | None:
    """Identical items (text, link, name, options) share one check; None for options that cannot be compared."""
    try:
        options = json.dumps(item.options, sort_keys=True)
    except (TypeError, ValueError):
        return None
    ref_path = str(Path(item.reference_path).resolve()) if item.reference_path is not None else None
    return json.dumps([item.implementation, item.reference, ref_path, item.name, options])


def _copy(result: Result, index: int) -> Result:
    out = copy.deepcopy(result)
    out.index = index
    out.stats = {**out.stats, "duplicate_of": result.index}
    return out


def _evaluate_one(index: int, item: Item, settings: Settings, executor: Executor,
                  cancel: threading.Event) -> Result:
    """One item's check. Never raises: a fault of the check or of the executor is this item's "error" result."""
    start = time.monotonic()
    if cancel.is_set():
        return _error_result(index, item.name, "the batch was stopped before this item was checked",
                             "infrastructure", "KL303", {"cancelled": True})
    try:
        item_settings = apply_overrides(settings, item.options)
    except ConfigError as e:
        return _error_result(index, item.name, f"options: {e}", "caller")
    workspace = tempfile.mkdtemp(prefix="kernel-lsp-evaluate-")
    try:
        path, reference = _write_workspace(Path(workspace), item)
        report = check_file(CheckRequest(path, item_settings, Path(workspace), reference, executor=executor,
                                         cancel=cancel, timeout_source="the item's `timeout` option",
                                         apply_ignores=False))
    except Exception as e:
        # Not the implementation's doing: its code runs only in a worker, whose faults are findings. This is the
        # executor (a lost cluster, a closed executor) or kernel-lsp itself.
        return _error_result(index, item.name, f"the check could not be run: {type(e).__name__}: {e}",
                             "infrastructure", "KL900", {"seconds": round(time.monotonic() - start, 3)})
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    _relative(report, workspace)
    return _result(index, report, round(time.monotonic() - start, 3))


def _write_workspace(workspace: Path, item: Item) -> tuple[Path, Path | None]:
    name = os.path.basename(item.name)
    path = workspace / name
    path.write_text(item.implementation, encoding="utf-8")
    if item.reference is not None:
        reference = workspace / ("reference.py" if name != "reference.py" else "reference_.py")
        reference.write_text(item.reference, encoding="utf-8")
        return path, reference
    return path, Path(item.reference_path).resolve() if item.reference_path is not None else None


def _result(index: int, report: FileReport, seconds: float) -> Result:
    verdict = verdict_of(report)
    codes = {f.code for f in report.findings if f.severity <= Severity.WARNING}
    kernels = [k for k in report.kernels.values() if not k.helper]
    compiles = [c for k in kernels for c in k.compile]
    eager = next((s for s in _speedups(report) if s.against == "eager"), None)
    return Result(index, verdict, report.findings, _speedups(report), seconds, dict(report.stats), report,
                  error=error_of(report) if verdict == "error" else None,
                  compiled=bool(compiles) and all(c.ok for c in compiles) and not codes & NOT_COMPILED,
                  correct=verdict == "verified", cheat_detected=bool(codes & CHEAT_CODES),
                  timed_out=any(f.code == "KL301" and not waiting(f) for f in report.findings),
                  speedup=eager.ratio if eager else None, speedup_low=eager.low if eager else None,
                  speedup_high=eager.high if eager else None)


verdict_of = file_verdict  # the file's verdict (verdict.py), under the batch API's own name


def _speedups(report: FileReport) -> list[Speedup]:
    measured = next((k.measurement for k in report.kernels.values() if k.measurement is not None), None)
    return list(measured.speedups) if measured is not None else []


def _relative(report: FileReport, workspace: str) -> None:
    """Paths in the report as the item names them, not in the temporary workspace."""
    prefix = os.path.realpath(workspace) + os.sep
    for f in report.findings:
        f.path = f.path.replace(prefix, "").replace(workspace + os.sep, "")
        f.message = f.message.replace(prefix, "").replace(workspace + os.sep, "")
    report.path = report.path.replace(prefix, "").replace(workspace + os.sep, "")
    report.dependencies = [d.replace(prefix, "") for d in report.dependencies]


def _safe_name(item: Any) -> str:
    name = getattr(item, "name", None)
    return name if isinstance(name, str) else "kernel.py"


def _error_result(index: int, name: str, message: str, kind: str, code: str = "KL006",
                  stats: dict[str, Any] | None = None) -> Result:
    """An item's "error" result without a report: the caller's mistake (KL006) or the infrastructure's."""
    finding = Finding(name, Span(0), severity_of(code), code, message, source="kernel-lsp.api")
    return Result(index, "error", [finding], [], 0.0, dict(stats or {}), error=kind)
