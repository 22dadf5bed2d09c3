"""The isolated re-run's processes (checker/verify/evidence/isolated.py says what it proves): after a job passes the verifier, prepare
in a checker process, run the implementation in the neutral harness, judge in another checker process, and add the
judge's findings to the job's outcome.

`Rerun` owns the harness's fork server for one device: a process started as `python run.py` from a private
temporary folder holding copies of harness.py (as run.py) and isolate.py, with the sandbox's environment less
every KERNEL_LSP_ variable. It imports torch and triton once; each re-run is a fork that confines itself. The
checker steps run as ordinary jobs of the given executor (kinds rerun-prepare and rerun-judge, on the CPU).
"""

from __future__ import annotations

import atexit
import copy
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from ..codes import severity_of
from ..jobs import CheckJob, Device, FindingEvent, KernelEvent, RerunOptions, Stat
from ..model import Finding, Severity
from .child import kill_group
from .outcome import WorkerOutcome
from .pool import WarmPool
from .protocol import PROTOCOL
from .sandbox import cache_folders, child_env

log = logging.getLogger(__name__)
SOURCE = "kernel-lsp.rerun"


class Rerun:
    def __init__(self, device: str, sandbox, base_env: dict[str, str] | None = None):
        self.device = device
        self.sandbox = sandbox
        self.dir = tempfile.mkdtemp()
        player = Path(__file__).resolve().parent.parent / "player"
        shutil.copy(player / "harness.py", os.path.join(self.dir, "run.py"))
        shutil.copy(player / "isolate.py", os.path.join(self.dir, "isolate.py"))
        shutil.copy(player / "interpreter.py", os.path.join(self.dir, "compat.py"))
        shutil.copy(player / "interpreter_gaps.py", os.path.join(self.dir, "gaps.py"))
        env = child_env(sandbox, base_env, own=False)
        env["HARNESS_PROTOCOL"] = str(PROTOCOL)
        env["HARNESS_DROP"] = ",".join(_traces())
        if device == "cpu":
            env["TRITON_INTERPRET"] = "1"
        else:
            env.pop("TRITON_INTERPRET", None)
            env["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"  # torch.cuda.is_available() without opening CUDA pre-fork
        self.env = {k: v for k, v in env.items() if not k.startswith("HARNESS_")}
        self.pool = WarmPool(env, [sys.executable, os.path.join(self.dir, "run.py")], cwd=self.dir, any_device=True)

    def warm_up(self) -> None:
        self.pool.start(self.device)

    def close(self) -> None:
        self.pool.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def apply(self, job: CheckJob, outcome: WorkerOutcome, checker, timeout: float,
              cancel: threading.Event) -> None:
        """Re-run a job that passed, in place: its outcome gains the judge's findings (and loses its timings when
        the re-run finds the implementation wrong: performance is never shown for an unverified kernel)."""
        if not should_rerun(job, outcome):
            return
        start = time.monotonic()
        events = self._run(job, outcome, checker, timeout, cancel)
        outcome.events[-1:-1] = events  # before Done
        outcome.events.insert(-1, Stat("rerun_seconds", round(time.monotonic() - start, 3)))
        if any(isinstance(e, FindingEvent) and e.finding.severity <= Severity.WARNING for e in events):
            _strip_timings(outcome)

    def _run(self, job: CheckJob, outcome: WorkerOutcome, checker, timeout: float, cancel: threading.Event) -> list:
        folder = tempfile.mkdtemp()  # a neutral name: the harness works in it
        try:
            for sub in ("in", "out"):
                os.makedirs(os.path.join(folder, sub))
            options = RerunOptions(True, folder, self.device, sorted(set(cache_folders(self.env).values())))
            # Where the verifier said the interpreter cannot compute a kernel faithfully, neither can the harness.
            # The TF32 advice (KL210 too) says nothing of the kind: an implementation could provoke it at will.
            options.values = not any(isinstance(e, FindingEvent) and e.finding.code == "KL210"
                                     and e.finding.data.get("values_judged") is False for e in outcome.events)
            options.sizes = _verifier_sizes(outcome)
            prepare = _step(job, "rerun-prepare", options, writable=[os.path.join(folder, "in")])
            prepared = checker.run(prepare, None, timeout, None, cancel)
            said = [e for e in prepared.events if isinstance(e, FindingEvent) and e.finding.code == "KL222"]
            if said:
                return said
            problem = _failure(prepared)
            if problem is not None:
                return [] if cancel.is_set() else [_info(job, f"the isolated re-run could not be prepared: {problem}")]
            options.harness_note, options.harness_started = self._harness(folder, timeout, cancel)
            if cancel.is_set():
                return []
            judged = checker.run(_step(job, "rerun-judge", options), None, timeout, None, cancel)
            problem = _failure(judged, findings_are_results=True)
            if problem is not None:
                return [] if cancel.is_set() else [_info(job, f"the isolated re-run could not be judged: {problem}")]
            return [e for e in judged.events if isinstance(e, FindingEvent)
                    or (isinstance(e, Stat) and e.name.startswith("rerun"))]
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _harness(self, folder: str, timeout: float, cancel: threading.Event) -> tuple[str, bool]:
        """Run the harness on the prepared folder: ('' when it ended normally, else how it ended; whether it
        started)."""
        out = os.path.join(folder, "out")
        child = self.pool.spawn(os.path.join(folder, "in", "spec.json"), os.path.join(out, "result.pt"),
                                os.path.join(out, "stderr"), self.env, self.device, out)
        if child is None:
            return "the harness could not be started", False
        deadline = time.monotonic() + timeout
        code = None
        while code is None and time.monotonic() < deadline and not cancel.is_set():
            try:
                code = child.wait(timeout=0.1)
            except subprocess.TimeoutExpired:
                continue
        if code is None:
            kill_group(child.pid)
            return ("it was stopped" if cancel.is_set() else f"it ran past {timeout:.0f} s"), not cancel.is_set()
        if code != 0:
            tail = _tail(os.path.join(out, "stderr"))
            return f"its process exited with status {code}" + (f": {tail}" if tail else ""), True
        return "", True


def _traces() -> list[str]:
    """Hashes (harness._forget) of what an interpreter's start-up loads for kernel-lsp itself: the import finder of
    an editable install, and the folder a source checkout is imported from."""
    import hashlib
    names = [n for n in sys.modules if "kernel_lsp" in n and not n.startswith("kernel_lsp")]
    root = str(Path(__file__).resolve().parents[2])
    if "site-packages" not in root and "dist-packages" not in root:
        names += [p for p in sys.path if p and os.path.realpath(p) == root]
    return sorted({hashlib.sha256(n.encode()).hexdigest()[:16] for n in names})


_RERUNS: dict[tuple, Rerun] = {}
_RERUNS_LOCK = threading.Lock()


def rerun_for(device: str, sandbox, gpu: str | None = None) -> Rerun:
    """The harness's fork server for this device (and GPU), shared by every executor of this process and closed
    when it exits (its fork server also ends when this process does: EOF on its stdin)."""
    key = (device, gpu, repr(sandbox.to_dict()))
    with _RERUNS_LOCK:
        if key not in _RERUNS:
            base = dict(os.environ)
            if gpu is not None:
                base["CUDA_VISIBLE_DEVICES"] = gpu
            if not _RERUNS:
                atexit.register(close_all)
            _RERUNS[key] = Rerun(device, sandbox, base)
        return _RERUNS[key]


def close_all() -> None:
    with _RERUNS_LOCK:
        reruns = list(_RERUNS.values())
        _RERUNS.clear()
    for r in reruns:
        r.close()


def should_rerun(job: CheckJob, outcome: WorkerOutcome) -> bool:
    """A complete check that passed the verifier: no error, and no warning but the measure stage's. Any other
    warning fails the file already (`check` exits 1 on it; the fix gate refuses it), and one such as KL210 says the
    verifier could not run the kernel, so neither could the harness. A performance warning (KL400, slower than
    eager) is one the implementation can provoke at will, and a cheat that scans memory on every call is slow: on
    an H200, pygpubench_gc_nan's KL400 kept the re-run from finding its KL220."""
    if job.kind != "check" or not job.verify or not job.rerun.enabled or job.measure.against is not None:
        return False
    if not outcome.completed or outcome.cancelled or outcome.timed_out:
        return False
    findings = [e.finding for e in outcome.events if isinstance(e, FindingEvent)]
    return not any(f.severity <= Severity.ERROR or (f.severity <= Severity.WARNING and not f.code.startswith("KL4"))
                   for f in findings)


def _verifier_sizes(outcome: WorkerOutcome) -> dict[str, int]:
    """The size knobs the verifier's CPU runs used (it shrank them until a run cost about a second of the
    interpreter): the harness's inputs are no larger, so its calls cost what the verifier's did."""
    sizes: dict[str, int] = {}
    for e in outcome.events:
        v = e.facts.verification if isinstance(e, KernelEvent) and e.facts is not None else None
        for k, n in (v.cpu_sizes.items() if v is not None and v.device == "cpu-interpreter" else ()):
            sizes[k] = min(n, sizes.get(k, n))
    return sizes


def ran_on(outcome: WorkerOutcome) -> str | None:
    return next((e.device for e in outcome.events if isinstance(e, Device)), None)


def _step(job: CheckJob, kind: str, options: RerunOptions, writable: list[str] | None = None) -> CheckJob:
    step = copy.deepcopy(job)
    step.kind, step.rerun, step.device = kind, copy.deepcopy(options), "cpu"
    step.measure.enabled = False
    step.sandbox.writable = list(step.sandbox.writable) + list(writable or [])
    return step


def _failure(outcome: WorkerOutcome, findings_are_results: bool = False) -> str | None:
    """Why a checker step failed, or None. The judge's findings are its results: only its own faults count."""
    if outcome.cancelled:
        return "cancelled"
    errors = [e.finding for e in outcome.events if isinstance(e, FindingEvent) and e.finding.severity <= Severity.ERROR
              and (not findings_are_results or e.finding.code.startswith(("KL3", "KL9")))]
    if errors:
        return errors[0].message.splitlines()[0][:300]
    if not outcome.completed:
        if outcome.timed_out:
            return "it ran past the timeout"
        if outcome.start_failed:
            return outcome.start_failed
        tail = outcome.stderr_tail.strip().splitlines()
        return f"its process ended with status {outcome.returncode}" + (f": {tail[-1][:200]}" if tail else "")
    return None


def _info(job: CheckJob, message: str) -> FindingEvent:
    return FindingEvent(Finding(job.path, job.anchor, severity_of("KL222"), "KL222", message, SOURCE))


def _strip_timings(outcome: WorkerOutcome) -> None:
    """Drop the measure stage's results from a job whose implementation the re-run found wrong."""
    kept = []
    for e in outcome.events:
        if isinstance(e, FindingEvent) and e.finding.code.startswith("KL4"):
            continue
        if isinstance(e, KernelEvent) and e.facts.measurement is not None:
            e.facts.measurement = None
            e.facts.performance_note = "not measured: the isolated re-run found the implementation wrong"
        kept.append(e)
    outcome.events[:] = kept


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as f:
            lines = [ln for ln in f.read()[-4000:].decode("utf-8", "replace").splitlines() if ln.strip()]
        return lines[-1][:200] if lines else ""
    except OSError:
        return ""
