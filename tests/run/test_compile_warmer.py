"""The compile warmer's lock (run/compile_warmer.py): held exactly as long as the warmer process lives, waited
for by the measure stage (compiled.wait_for_lock), released however the process ends. Run on a CPU: the warmer's
torch.compile itself needs a GPU and is exercised by tests/test_gpu_measure.py."""

from __future__ import annotations

import os
import time
from pathlib import Path

from kernel_lsp.checker.measure.compiled import wait_for_lock
from kernel_lsp.jobs import CheckJob, LinkSpec
from kernel_lsp.model import Span
from kernel_lsp.run import compile_warmer

REFERENCE = '''
import time, torch
time.sleep({sleep})
class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2
def get_inputs():
    return [torch.randn(8)]
def get_init_inputs():
    return []
'''


def job_for(tmp_path: Path, sleep: float) -> CheckJob:
    ref = tmp_path / "ref.py"
    ref.write_text(REFERENCE.format(sleep=sleep))
    impl = tmp_path / "impl.py"
    impl.write_text("import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n")
    return CheckJob(str(impl), LinkSpec("kernelbench", str(ref), inputs_path=str(ref)), [], Span(0))


def test_compile_warmer_holds_its_lock_while_it_runs_and_frees_it_when_stopped(tmp_path):
    job = job_for(tmp_path, sleep=60)  # the reference takes a minute to import: the warmer is busy
    warmer = compile_warmer.start(job, dict(os.environ))
    assert warmer is not None
    try:
        assert job.measure.warm_lock == warmer.lock_path and Path(warmer.lock_path).exists()
        said: list[str] = []
        waited = wait_for_lock(job.measure.warm_lock, 1.0,
                               lambda: said.append("waiting") or (lambda: said.append("ended")))
        assert 0.9 <= waited < 5, waited  # held: the wait ran to its limit
        assert said == ["waiting", "ended"]  # said once, and that it ended (jobs.Sink.wait)
        assert warmer.proc.poll() is None
    finally:
        warmer.stop()
    assert warmer.proc.poll() is not None
    assert not Path(warmer.lock_path).exists()
    assert wait_for_lock(warmer.lock_path, 5.0) == 0.0  # no lock file: nothing to wait for


def test_compile_warmer_that_fails_frees_its_lock_at_once(tmp_path):
    # On this CPU machine the warmer cannot put the problem on a GPU: it ends with an error, and the wait is short.
    job = job_for(tmp_path, sleep=0)
    warmer = compile_warmer.start(job, {**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert warmer is not None
    try:
        start = time.monotonic()
        waited = wait_for_lock(job.measure.warm_lock, 120.0)
        assert waited < 60 and time.monotonic() - start < 60
        assert warmer.proc.wait(timeout=30) != 0
    finally:
        warmer.stop()


def test_no_lock_means_no_wait(tmp_path):
    said: list[str] = []
    assert wait_for_lock(None, 10.0, lambda: said.append("waiting")) == 0.0
    assert wait_for_lock("/nonexistent/kernel-lsp.lock", 10.0, lambda: said.append("waiting")) == 0.0
    free = tmp_path / "free.lock"  # a warmer that has ended: its lock is free, nothing is said
    free.write_text("")
    assert wait_for_lock(str(free), 10.0, lambda: said.append("waiting")) < 1.0
    assert said == []


def test_a_reference_compiled_here_needs_no_warmer_until_it_or_the_cache_changes(tmp_path, monkeypatch):
    """A worker's own compile marks the reference in Inductor's cache folder (compiled.compiled_mark); the parent
    starts no warmer while the mark is there (compile_warmer.needed): a changed reference, or a cleared cache
    folder, needs one again. The compile itself runs on a GPU (tests/test_gpu_measure.py): here torch.compile is
    the identity, so that what is tested is the marking around it."""
    import shutil

    import torch

    from kernel_lsp.checker.measure import compiled
    job = job_for(tmp_path, sleep=0)
    env = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    assert compile_warmer.needed(job, env)
    monkeypatch.setattr(torch, "compile", lambda f: f)
    monkeypatch.setattr(compiled, "_COMPILED", {})

    class Clock:
        def sync(self) -> None:
            pass

    key = compiled._reference_key(job, {})  # as the measure stage keys it (baselines.py)
    _, _, cached = compiled.compiled_reference(lambda x: x * 2, key, [torch.ones(2)], Clock(),
                                               marks_in=env["TORCHINDUCTOR_CACHE_DIR"])
    assert not cached and compiled.compiled_mark(job, env["TORCHINDUCTOR_CACHE_DIR"]).is_file()
    assert not compile_warmer.needed(job, env)
    assert compile_warmer.needed(job, {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "elsewhere")})
    ref = tmp_path / "ref.py"
    ref.write_text(ref.read_text() + "# another reference\n")
    assert compile_warmer.needed(job, env)
    ref.write_text(REFERENCE.format(sleep=0))
    assert not compile_warmer.needed(job, env)
    shutil.rmtree(tmp_path / "inductor")
    assert compile_warmer.needed(job, env)


def test_the_gpu_pool_starts_a_warmer_only_for_an_unmarked_reference(tmp_path, monkeypatch):
    """The wiring: WorkerPoolExecutor asks `needed` before it starts a warmer for a worker that is not running, and
    a mark it cannot read (a folder it may not list, say) starts one, as without marks, instead of failing the
    check. `compile_warmer.start` is recorded, not run (its process is the other tests')."""
    from kernel_lsp.checker.measure import compiled
    from kernel_lsp.run.local import WorkerPoolExecutor
    from kernel_lsp.run.persistent import PersistentWorker
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    monkeypatch.delenv("KERNEL_LSP_COMPILE_WARMER", raising=False)
    started: list[str] = []
    monkeypatch.setattr(compile_warmer, "start", lambda job, env: started.append(job.path) or "a warmer")
    pool = WorkerPoolExecutor([PersistentWorker(["true"], name="gpu-0")], warmer=True)
    job = job_for(tmp_path, sleep=0)
    job.measure.enabled = True
    assert pool._compile_warmer(job, pool.workers[0]) == "a warmer" and len(started) == 1
    mark = compiled.compiled_mark(job, str(tmp_path / "inductor"))
    mark.parent.mkdir(parents=True)
    mark.touch()
    assert pool._compile_warmer(job, pool.workers[0]) is None and len(started) == 1

    def unreadable(*_):
        raise PermissionError("not allowed")
    monkeypatch.setattr(compiled, "compiled_mark", unreadable)
    assert pool._compile_warmer(job, pool.workers[0]) == "a warmer" and len(started) == 2


def test_compiler_imports_started_ahead_end_before_the_measure_stage_goes_on():
    """compiled.import_compiler_ahead imports torch.compile's compiler in a thread, once; compiler_imported waits
    for it. In a fresh process, where nothing imported Inductor yet."""
    import subprocess
    import sys
    code = (
        "import sys, threading, torch\n"
        "from kernel_lsp.checker.measure import compiled\n"
        "assert 'torch._inductor.compile_fx' not in sys.modules\n"
        "compiled.import_compiler_ahead()\n"
        "first = compiled._ahead\n"
        "assert first is not None and first.name == 'kernel-lsp-compiler-imports'\n"
        "compiled.import_compiler_ahead()\n"
        "assert compiled._ahead is first  # once per process\n"
        "compiled.compiler_imported()\n"
        "assert not first.is_alive()\n"
        "missing = [m for m in compiled.COMPILER_MODULES if m not in sys.modules]\n"
        "assert not missing, missing\n"
        "print('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


def test_a_worker_keeps_a_compiled_reference_per_helper_content_and_editor_text(tmp_path, monkeypatch):
    """A long-lived worker keeps torch.compile of a reference (compiled._COMPILED); a helper the reference imports,
    edited between two checks, or the editor's unsaved text of a reference in the implementation's own file, is
    another reference: the one compiled before would be timed in its place."""
    import importlib
    import sys

    from kernel_lsp.checker.measure import compiled
    import torch
    job = job_for(tmp_path, sleep=0)
    mark_key = compiled._reference_key(job, {})  # the compile warmer's mark: the reference's files only
    (tmp_path / "kl_scale_helper.py").write_text("FACTOR = 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("kl_scale_helper")
    try:
        first = compiled.compiled_key(job)
        assert compiled.compiled_key(job) == first
        (tmp_path / "kl_scale_helper.py").write_text("FACTOR = 3\n")
        assert compiled.compiled_key(job) != first
        assert compiled._reference_key(job, {}) == mark_key
    finally:
        sys.modules.pop("kl_scale_helper", None)
    job.path = job.link.reference
    plain = compiled.compiled_key(job)
    job.source_override = REFERENCE.format(sleep=0) + "# unsaved\n"
    assert compiled.compiled_key(job) != plain
    assert compiled._reference_key(job, {}) == mark_key

    # kept under compiled_key, the mark written under the reference's key (the parent's warmer reads it)
    monkeypatch.setattr(torch, "compile", lambda f: f)
    monkeypatch.setattr(compiled, "_COMPILED", {})

    class Clock:
        def sync(self) -> None:
            pass

    marks = str(tmp_path / "inductor")
    compiled.compiled_reference(lambda x: x * 2, mark_key, [torch.ones(2)], Clock(), marks_in=marks,
                                kept_as=compiled.compiled_key(job))
    assert list(compiled._COMPILED) == [compiled.compiled_key(job)]
    assert compiled._mark(mark_key, marks).is_file()
