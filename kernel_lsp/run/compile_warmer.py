"""The compile warmer: a process that runs torch.compile on a file's reference while its GPU worker is still
starting, so that the measure stage's own torch.compile finds Inductor's on-disk caches warm (the FX graph,
AOT-autograd and Triton caches) and loads what it would otherwise build.

When: the parent (check.py) starts one for a job whose long-lived GPU worker is not ready yet (a cold `kernel-lsp
check FILE --device cuda`, the first check after the language server starts), with measurement and its
torch.compile baseline on, unless a worker has compiled the same reference with this torch and Triton before and
Inductor's caches are warm for it (`needed`). A warm worker keeps its compiled references in memory
(measure/compiled.py) and needs none.

The lock: the parent creates a lock file beside the GPU leases (a folder the players never see: run/players.py),
takes an exclusive flock on it, passes that descriptor to this process's reaper and closes its own copy, so the lock
is held exactly as long as the warmer and what it started live. The measure stage (MeasureOptions.warm_lock) takes
the lock before its torch.compile: it waits for the warm-up to end, never compiles beside it, and times nothing while
it runs.

Autotuning results are not kept here (Inductor's autotune_local_cache is off in this process, a setting that is not
part of the FX graph cache key and is written into the generated code): where Inductor benchmarks several configs
of a kernel, the worker benchmarks them again on a quiet GPU, so the baseline it times is the one its own compile
would have picked. The reference is user code: it runs here as in a worker, in a subprocess of its own session that
dies with the parent and is killed with its group when the job ends.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import subprocess
import sys
import tempfile
import traceback

from ..jobs import CheckJob
from ..trusted import cache_folders, default_locks_folder
from . import reaper
from .child import PARENT_ENV, die_with_parent
from .sandbox import child_env, enter
from .protocol import WarmRequest, decode, encode

log = logging.getLogger(__name__)


class CompileWarmer:
    """The parent's handle on one warmer process."""

    def __init__(self, proc: subprocess.Popen, lock_path: str):
        self.proc, self.lock_path = proc, lock_path

    def stop(self) -> None:
        """Kill the process and anything it started (Inductor's compile workers outlive its exit), and remove the
        lock file."""
        reaper.stop(self.proc, grace=5.0)
        with contextlib.suppress(OSError):
            os.unlink(self.lock_path)


def needed(job: CheckJob, env: dict[str, str]) -> bool:
    """Whether a warmer would fill caches for this job's reference: not where a worker's own compile of it, with
    this torch and Triton and this Inductor cache folder, has left its mark there (compiled.compiled_mark). The
    warmer would then only load what the worker loads again, beside the verification, on the same host (a cold
    check on an H200 took about a second longer with it). A mark that cannot be read: needed, as without marks."""
    from ..checker.measure.compiled import compiled_mark
    try:
        return not compiled_mark(job, cache_folders(env)["TORCHINDUCTOR_CACHE_DIR"]).is_file()
    except Exception:  # an unreadable cache folder, say: a warmer, as without the mark
        return True


def start(job: CheckJob, env: dict[str, str]) -> CompileWarmer | None:
    """Start a warmer for the job's reference and point job.measure.warm_lock at its lock; None if it cannot
    start (the measure stage then compiles on its own, as without one)."""
    try:
        # Beside the GPU leases, which the players' server hides from every player (run/players.py): a player that
        # could open this file could take its lock after the warmer and keep the measure stage waiting.
        folder = default_locks_folder(env)
        os.makedirs(folder, exist_ok=True)
        fd, path = tempfile.mkstemp(prefix="compile-", suffix=".lock", dir=folder)
    except OSError as e:
        log.info("compile warmer not started: %s", e)
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        env = {**child_env(job.sandbox, env), PARENT_ENV: str(os.getpid())}
        env.pop("TRITON_INTERPRET", None)
        # The reaper holds the lock's descriptor: the lock lasts until the warmer and all it started are gone.
        proc = subprocess.Popen(reaper.command([sys.executable, "-m", "kernel_lsp.run.compile_warmer", str(fd)]),
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=env, pass_fds=(fd,), start_new_session=True)
    except OSError as e:
        log.info("compile warmer not started: %s", e)
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        return None
    os.close(fd)  # the child's copy holds the lock now
    try:
        assert proc.stdin is not None
        proc.stdin.write(encode(WarmRequest(job)).encode())
        proc.stdin.close()
    except OSError:
        pass  # it died at once: its lock is gone with it, and the worker compiles on its own
    job.measure.warm_lock = path
    return CompileWarmer(proc, path)


def warm(job: CheckJob) -> None:
    """Compile and run the job's reference once under torch.compile, as the measure stage will."""
    import warnings
    warnings.filterwarnings("ignore")
    import torch
    import torch._inductor.config as inductor_config
    inductor_config.autotune_local_cache = False
    from ..checker.problem.loader import load_problem
    from ..checker.measure.stage import INPUT_SEED
    from ..checker.verify.plan.variants import clone_inputs
    problem = load_problem(job.link, job.path, job.seed, job.source_override, "cuda")
    ref, _ = problem.callables()
    inputs = clone_inputs(problem.make_inputs(INPUT_SEED))  # the measure stage's inputs: the same cache keys
    torch.set_grad_enabled(False)
    torch.compile(ref)(*inputs)
    torch.cuda.synchronize()


def main(argv: list[str]) -> int:
    parent = os.environ.get(PARENT_ENV)
    die_with_parent(int(parent) if parent and parent.isdigit() else None)
    code = 0
    try:
        request = decode(sys.stdin.read())
        assert isinstance(request, WarmRequest)
        import torch
        if torch.cuda.is_available():  # without a GPU the compile fails later, with the reference imported
            torch.cuda.init()  # the CUDA driver opens what it needs before the sandbox's rules close it
        enter(request.job.sandbox, tempfile.mkdtemp(prefix="kernel-lsp-warmer-"))  # the reference is user code
        warm(request.job)
    except BaseException:  # the worker's own compile reports what failed (KL407): nothing to say here
        traceback.print_exc()
        code = 1
    sys.stderr.flush()
    # Skip interpreter shutdown: Inductor's compile pool takes seconds to wind down, and the lock would wait for it.
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
