"""torch.compile of the reference, compiled once per reference content in this worker and kept with the seconds its
first call took, and the wait for a compile warmer (run/compile_warmer.py) that fills Inductor's caches for that
reference meanwhile. GPU only: the measure stage (stage.py) calls it.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ...jobs import CheckJob

WARM_WAIT_S = 60.0  # the longest the stage waits for a compile warmer before compiling beside it
_COMPILED: dict[str, tuple[Any, float]] = {}  # reference content -> (torch.compile'd reference, first call seconds)
MARKS = "kernel-lsp-compiled"  # in Inductor's cache folder: a file per reference this torch has compiled there


# What torch.compile imports on its first use (Dynamo's Inductor backend, which pulls in Inductor's lowering, its
# Triton code generation and the FX passes): 1.7 s in a fresh process on an H200.
COMPILER_MODULES = ("torch._inductor.compile_fx", "torch._inductor.codegen.triton",
                    "torch._inductor.runtime.triton_heuristics")
_ahead: threading.Thread | None = None


def import_compiler_ahead() -> None:
    """Start importing torch.compile's compiler (COMPILER_MODULES) in a background thread of this process, once, so
    that a fresh worker's first measure stage finds it imported: the load, the verification and the evidence runs
    before that stage mostly wait on their player. Nothing is compiled or run here; an import that fails is left to
    the measure stage's own compile, which says why."""
    global _ahead
    if _ahead is not None or all(name in sys.modules for name in COMPILER_MODULES):
        return
    # Dynamo first, here: a worker has it from its start (loader.warm_meta_device), and the thread's imports must not
    # race this thread's for it (a half-loaded torch._dynamo fails every later torch.compile).
    import torch._dynamo  # noqa: F401

    def run() -> None:
        for name in COMPILER_MODULES:
            try:
                importlib.import_module(name)
            except Exception:
                return
    _ahead = threading.Thread(target=run, name="kernel-lsp-compiler-imports", daemon=True)
    _ahead.start()


def compiler_imported() -> None:
    """Wait for import_compiler_ahead's imports to end (at once when none were started): nothing of kernel-lsp's
    own runs beside a timing."""
    while _ahead is not None and _ahead.is_alive():
        _ahead.join(0.05)  # in steps: a cancel (KeyboardInterrupt in this thread) is not held up by a whole join


def _reference_key(job: CheckJob, knobs: dict) -> str:
    h = hashlib.sha256()
    link = job.link
    pinned = {p: t for p, t in ((link.inputs_path, link.inputs_text), (link.reference, link.reference_text)) if t}
    for path in dict.fromkeys([link.reference, link.inputs_path]):
        try:
            h.update(pinned[path].encode() if path in pinned else Path(path).read_bytes())
        except OSError:
            h.update(path.encode())
    h.update(repr((sorted(knobs.items()), job.seed, job.link.reference_name)).encode())
    return h.hexdigest()


def compiled_key(job: CheckJob) -> str:
    """What this worker keeps a compiled reference under (_COMPILED): the reference's files (_reference_key), the
    editor's unsaved text where the reference is the implementation's file, and the files of every module of the
    user's this process has imported (the reference's helpers, which a long-lived worker imports afresh per job:
    run/job_imports.py). A helper edited between two checks compiles the reference again; the one compiled with the
    helper as it was would be timed instead."""
    from ..problem.user_modules import user_module_files
    h = hashlib.sha256(_reference_key(job, {}).encode())
    sides = {os.path.realpath(p) for p in (job.link.reference, job.link.inputs_path) if p}
    if job.source_override is not None and os.path.realpath(job.path) in sides:  # as the loader compares them
        h.update(b"\0editor\0" + job.source_override.encode("utf-8", "surrogatepass"))
    for path in user_module_files():
        try:
            h.update(b"\0" + path.encode() + b"\0" + Path(path).read_bytes())
        except OSError:
            h.update(b"\0" + path.encode())
    return h.hexdigest()


def compiled_mark(job: CheckJob, inductor_dir: str) -> Path:
    """The file that says torch.compile of this job's reference (its content, as `_reference_key` reads it) has
    succeeded with this torch and Triton and `inductor_dir` as Inductor's cache folder: a worker writes it after its
    own compile (which left Inductor's caches warm for the reference), and the parent starts no compile warmer while
    it is there (run/compile_warmer.py `needed`). It lives in Inductor's folder, so a cleared cache takes it along.
    Inductor keys its caches on more (the GPU's model, its settings): a mark that outlives them costs a cold check
    the warmer's overlap, never a wrong result."""
    return _mark(_reference_key(job, {}), inductor_dir)


def _mark(key: str, inductor_dir: str) -> Path:
    """compiled_mark's file for a reference key (`_reference_key`)."""
    from importlib import metadata
    versions = []
    for package in ("torch", "triton"):
        try:
            versions.append(metadata.version(package))
        except metadata.PackageNotFoundError:
            versions.append("absent")
    return Path(inductor_dir) / MARKS / hashlib.sha256("\0".join([key, *versions]).encode()).hexdigest()[:40]


def compiled_reference(ref, key: str, example: list, clock, warm_lock: str | None = None, on_wait=None,
                       marks_in: str | None = None, kept_as: str | None = None) -> tuple[Any, float, bool]:
    """(torch.compile of the reference, seconds its first call took, whether it came from this worker's cache).
    With `warm_lock`, a compile warmer (run/compile_warmer.py) is filling Inductor's caches for this reference:
    wait for it to end first (`on_wait()` once if the warmer is still running, and what it returned, when callable,
    once it has ended: jobs.Sink.wait). With `marks_in` (Inductor's cache folder), the reference's mark
    (compiled_mark, for `key`) is written there once the compile has run. `kept_as` (compiled_key; `key` when
    None): what this worker keeps the compiled reference under."""
    import torch
    kept_as = kept_as or key
    if kept_as in _COMPILED:
        compiled, seconds = _COMPILED[kept_as]
        return compiled, seconds, True
    wait_for_lock(warm_lock, WARM_WAIT_S, on_wait)
    compiled = torch.compile(ref)
    clock.sync()
    t0 = time.perf_counter()
    compiled(*example)
    clock.sync()
    seconds = time.perf_counter() - t0
    _COMPILED[kept_as] = (compiled, seconds)
    if marks_in:
        try:
            mark = _mark(key, marks_in)
            mark.parent.mkdir(parents=True, exist_ok=True)
            mark.touch()
        except OSError:
            pass  # a read-only cache: the next cold check starts a warmer, as without the mark
    return compiled, seconds, False


def wait_for_lock(lock_path: str | None, timeout: float, on_wait=None) -> float:
    """Block until the compile warmer holding `lock_path` has ended, at most `timeout` seconds; the seconds waited.
    Returns at once when there is no warmer or its lock file cannot be opened (a worker on another machine).
    `on_wait` as gpu_lease.flock_waiting takes it: called only if the warmer still holds the lock."""
    if not lock_path:
        return 0.0
    import fcntl

    from .gpu_lease import flock_waiting
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except OSError:
        return 0.0
    start_at = time.monotonic()
    try:
        if flock_waiting(fd, fcntl.LOCK_SH, start_at + timeout, on_wait):
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    return time.monotonic() - start_at
