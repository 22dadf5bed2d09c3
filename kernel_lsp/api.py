"""The batch API, for reward pipelines and evaluation harnesses: check many kernels, get a typed result each.

    from kernel_lsp.api import Item, evaluate

    for result in evaluate([Item(model_output, reference=problem_source), ...]):
        print(result.index, result.verdict, [s.ratio for s in result.speedups])

Results stream in the order checks finish, each carrying its item's index. Every item is checked exactly as
`kernel-lsp check` checks a file (check.check_file, through the executor the settings ask for: local processes,
GPUs, a runner or Ray), so the sandbox, the verifier, the isolated re-run and the measure stage all apply. Items
are written to a private temporary workspace, never the caller's folder, and removed afterwards; nothing is cached.

A verdict is one of:
- "verified": no error or warning, and every kernel was verified against the reference;
- "failed": an error or warning about the implementation (a wrong result, a crash, a timeout, a cheat);
- "unverified": nothing wrong was found, but not every kernel was verified (no Triton kernel at all, no reference,
  code that insists on CUDA on a CPU machine);
- "error": the item could not be checked: a bad option (KL006), no worker (KL303), a reference that fails by itself
  (KL003), or a fault of kernel-lsp (KL900). A reward pipeline should not read it as the implementation's fault.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from .check import CheckRequest, check_file
from .codes import severity_of
from .config import ConfigError, Settings, apply_overrides
from .model import FileReport, Finding, Severity, Span, Speedup
from .run.executor import Executor, executor_for

# Codes that say the item could not be judged, not that the implementation is wrong: the reference itself fails,
# a bad option, no worker, a fault of kernel-lsp. (A broken link, KL002, is the implementation's: no ModelNew.)
ERROR_CODES = {"KL003", "KL006", "KL303", "KL900"}
# Options an item may not set: they decide the executor, which the whole batch shares.
SHARED_OPTIONS = {"device", "runner", "workers", "executor", "ray_address", "ray-address", "cache_dir", "cache-dir"}


@dataclass
class Item:
    """One kernel to check. `implementation` is the kernel file's text; its reference is `reference` (a PyTorch
    reference module's text, KernelBench style: Model, get_inputs, get_init_inputs), or a file at
    `reference_path`, or none (the implementation links itself: a `# kernel-lsp:` pragma or Model in the same
    file). `options` are settings for this item alone ({"timeout": 120, "targets": ["sm_80"]})."""

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

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "verdict": self.verdict, "findings": [f.to_dict() for f in self.findings],
                "speedups": [s.to_dict() for s in self.speedups], "seconds": self.seconds, "stats": self.stats}


def evaluate(items: Iterable[Item], *, executor: Executor | None = None, settings: Settings | None = None,
             measure: bool = True) -> Iterator[Result]:
    """Check every item; yield each Result as its check finishes. `executor` defaults to `executor_for(settings)`
    (then closed at the end); `settings` to the defaults; `measure=False` turns off timing on a GPU. Stopping the
    iteration early cancels the checks still running."""
    settings = settings or Settings()
    if not measure:
        settings = apply_overrides(settings, {"measure": {"mode": "off"}})
    own = executor is None
    executor = executor or executor_for(settings)
    cancel = threading.Event()
    pool = ThreadPoolExecutor(max_workers=executor.capacity, thread_name_prefix="kernel-lsp-evaluate")
    try:
        pending: set[Future] = {pool.submit(_evaluate_one, i, item, settings, executor, cancel)
                                for i, item in enumerate(items)}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
    finally:
        cancel.set()
        pool.shutdown(wait=True, cancel_futures=True)
        if own:
            executor.close()


def _evaluate_one(index: int, item: Item, settings: Settings, executor: Executor,
                  cancel: threading.Event) -> Result:
    start = time.monotonic()
    if cancel.is_set():
        return Result(index, "error", [], [], 0.0, {"cancelled": True})
    try:
        shared = SHARED_OPTIONS & set(item.options)
        if shared:
            raise ConfigError(f"{sorted(shared)[0]}: set it for the whole batch (evaluate's settings), not per item")
        item_settings = apply_overrides(settings, item.options)
    except ConfigError as e:
        return Result(index, "error", [_error_finding(item.name, f"options: {e}")], [], 0.0)
    workspace = tempfile.mkdtemp(prefix="kernel-lsp-evaluate-")
    try:
        path, reference = _write_workspace(Path(workspace), item)
        report = check_file(CheckRequest(path, item_settings, Path(workspace), reference, executor=executor,
                                         cancel=cancel, timeout_source="the item's `timeout` option"))
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    _relative(report, workspace)
    return Result(index, verdict_of(report), report.findings, _speedups(report),
                  round(time.monotonic() - start, 3), dict(report.stats), report)


def _write_workspace(workspace: Path, item: Item) -> tuple[Path, Path | None]:
    name = os.path.basename(item.name) or "kernel.py"
    path = workspace / name
    path.write_text(item.implementation, encoding="utf-8")
    if item.reference is not None:
        reference = workspace / ("reference.py" if name != "reference.py" else "reference_.py")
        reference.write_text(item.reference, encoding="utf-8")
        return path, reference
    return path, Path(item.reference_path).resolve() if item.reference_path else None


def verdict_of(report: FileReport) -> str:
    """The item's verdict from its report (the module's docstring says what each means)."""
    problems = [f for f in report.findings if f.severity <= Severity.WARNING]
    if any(f.code in ERROR_CODES for f in problems):
        return "error"
    if problems:
        return "failed"
    kernels = [k for k in report.kernels.values() if not k.helper]
    if kernels and all(k.verification is not None for k in kernels):
        return "verified"
    return "unverified"


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


def _error_finding(path: str, message: str) -> Finding:
    return Finding(path, Span(0), severity_of("KL006"), "KL006", message, source="kernel-lsp.api")
