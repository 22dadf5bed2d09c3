"""The Executor interface, and this machine's executors.

    outcome = executor.run(job, files, timeout, on_event, cancel)

runs one `CheckJob` somewhere and returns how it ended (a `WorkerOutcome`: its events, and what the process did).
`capacity` says how many jobs it runs at once (a caller schedules that many files in parallel), `ships_files`
whether the job's files must travel with it (no shared file system), `local()` where work that needs no GPU runs
on this machine (the proposers compile candidates there), and `close()` ends every process it started.

Implementations here:
- `LocalExecutor`: a child process per job on this machine, forked from the warm zygote where kernels run under
  the CPU interpreter, else started fresh;
- `WorkerPoolExecutor`: long-lived workers (serve.py), one job per worker at a time: one per local GPU, or one per
  `runner` command (a worker on another machine, reached through any command that speaks its stdio);
- `HostExecutor`: this machine's pair of the two, routing each job to the GPU workers unless it asks for the CPU.
`RayExecutor` (ray_executor.py) implements the same interface on a Ray cluster. Front ends get theirs from
executor.py's `executor_for`, never from here.
"""

from __future__ import annotations


import logging
import os
import threading
from typing import Callable

from ..jobs import CheckJob, FindingEvent, Preview, SandboxOptions, Stage, Stat
from . import compile_warmer
from .client import run_in_child
from .outcome import WorkerOutcome
from .persistent import PersistentWorker, local_command, sandbox_args, visible_gpus
from ..player.isolate import without_secrets
from .pool import WarmPool
from .sandbox import child_env

log = logging.getLogger(__name__)

OnEvent = Callable[[Stage | Preview], None]


class Executor:
    """Runs check jobs. Subclasses implement `run`; the rest has sensible defaults."""

    capacity: int = 1
    ships_files: bool = False
    # Why this executor can run no job at all any more (a Ray cluster whose head was lost), else None. Once set, every
    # job ends at once with it as its `start_failed` (KL303), and a caller need not wait on jobs still running.
    lost: str | None = None

    def run(self, job: CheckJob, files: dict[str, str] | None = None, timeout: float = 60.0,
            on_event: OnEvent | None = None, cancel: threading.Event | None = None) -> WorkerOutcome:
        raise NotImplementedError

    def local(self) -> "Executor":
        """Where work that needs no GPU (compiling for a target) runs on this machine."""
        return self

    def warm_up(self) -> None:
        """Start workers now, so the first job does not wait for imports (and a CUDA context)."""

    def close(self) -> None:
        """End every process this executor started; running jobs end with them."""

    def describe(self) -> str:
        return type(self).__name__

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LocalExecutor(Executor):
    """A child process per job on this machine: forked from the warm zygote (torch and triton already imported)
    where the job runs under the CPU interpreter, else a fresh `python -m kernel_lsp.run.child`."""

    def __init__(self, capacity: int = 2, device: str = "auto", warm: bool = True,
                 sandbox: SandboxOptions | None = None):
        self.capacity = max(1, capacity)
        self.device = device
        self.sandbox = sandbox or SandboxOptions()
        self.pool = WarmPool(child_env(self.sandbox)) if warm else None
        # At most `capacity` checks at once, whoever calls: several threads sharing one executor (a reward function
        # called from a thread pool) would otherwise run as many children as they have threads, and on a small
        # machine the checks' own timeouts then count the contention against the checked code.
        self._slots = threading.BoundedSemaphore(self.capacity)

    def run(self, job, files=None, timeout=60.0, on_event=None, cancel=None) -> WorkerOutcome:
        cancel = cancel or threading.Event()
        while not self._slots.acquire(timeout=0.1):
            if cancel.is_set():
                return WorkerOutcome(cancelled=True)
        try:
            # The job's timeout starts here, once it holds a slot: waiting in the queue is not the checked code's.
            return run_in_child(job, timeout, cancel, None, on_event, self.pool)
        finally:
            self._slots.release()

    def warm_up(self) -> None:
        if self.pool is not None:
            self.pool.start(self.device)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()

    def describe(self) -> str:
        return f"local ({self.capacity} at a time)"


class WorkerPoolExecutor(Executor):
    """Long-lived workers, one job per worker at a time (so one timing job per GPU). A worker that faults is
    replaced by the next job that needs it (persistent.py)."""

    def __init__(self, workers: list[PersistentWorker], ships_files: bool = False, warmer: bool = False):
        self.workers = workers
        self.capacity = len(workers)
        self.ships_files = ships_files
        self.warmer = warmer  # start a compile warmer beside a worker that is not running yet (local GPUs)
        self._free = threading.Condition()

    @classmethod
    def local_gpus(cls, device: str = "auto", gpus: list[str] | None = None,
                   sandbox: SandboxOptions | None = None, per_gpu: int = 1) -> "WorkerPoolExecutor":
        """`per_gpu` workers per GPU (each sees only its own, as CUDA_VISIBLE_DEVICES says); files go to whichever
        is free. Workers of one GPU verify at once and time one at a time, none verifying meanwhile (the GPU's
        lease, checker/measure/gpu_lease.py). `gpus`: indices among those this process may use (default: all)."""
        gpus = gpus or visible_gpus() or ["0"]
        sandbox = sandbox or SandboxOptions()
        return cls([PersistentWorker(local_command(device, sandbox),
                                     env=child_env(sandbox, {**os.environ, "CUDA_VISIBLE_DEVICES": g}),
                                     name=f"gpu-{g}") for _ in range(max(1, per_gpu)) for g in gpus], warmer=True)

    @classmethod
    def runners(cls, commands: list[list[str]], device: str = "auto", sandbox: SandboxOptions | None = None,
                secrets: tuple[str, ...] = ()) -> "WorkerPoolExecutor":
        """Workers behind runner commands. The command itself (ssh, say) keeps the user's environment but no
        variable named like a secret, nor those in `secrets` (the LLM key's): a worker on this machine would
        otherwise hold them in its /proc/PID/environ."""
        suffix = (["--device", device] if device != "auto" else []) + sandbox_args(sandbox)
        env = without_secrets(dict(os.environ), secrets)
        return cls([PersistentWorker(c + suffix, env=env, name=f"runner-{i}") for i, c in enumerate(commands)],
                   ships_files=True)

    def acquire(self, cancel: threading.Event | None = None) -> PersistentWorker | None:
        """An idle worker (waiting for one), or None when cancelled while waiting."""
        with self._free:
            while True:
                for w in self.workers:
                    if w.lock.acquire(blocking=False):
                        return w
                if cancel is not None and cancel.is_set():
                    return None
                self._free.wait(0.2)

    def release(self, worker: PersistentWorker) -> None:
        with self._free:
            worker.lock.release()
            self._free.notify_all()

    def run(self, job, files=None, timeout=60.0, on_event=None, cancel=None) -> WorkerOutcome:
        cancel = cancel or threading.Event()
        worker = self.acquire(cancel)
        if worker is None:
            return WorkerOutcome(cancelled=True)
        warmer = None
        try:
            warmer = self._compile_warmer(job, worker)
            outcome = worker.run(job, files, timeout, on_event, cancel)
        finally:
            if warmer is not None:
                warmer.stop()
            self.release(worker)
        if outcome.out_of_memory() and len(self._same_gpu(worker)) > 1 and not cancel.is_set():
            return self._alone(worker, job, files, timeout, on_event, cancel, outcome)
        return outcome

    def _same_gpu(self, worker: PersistentWorker) -> list[PersistentWorker]:
        """The workers that share `worker`'s GPU (gpu-workers > 1), itself included."""
        return [w for w in self.workers if w.name == worker.name]

    def _alone(self, worker: PersistentWorker, job, files, timeout, on_event, cancel,
               outcome: WorkerOutcome) -> WorkerOutcome:
        """A job that ran out of memory (`outcome`) while other workers could be checking on its GPU, run once more
        with every worker of that GPU held (taken in list order, as every such retry takes them: no two wait on each
        other), so that a KL302 is the file's own; the queue stage it reports says what ran out the first time. Its
        outcome says `retried`."""
        held: list[PersistentWorker] = []
        try:
            for w in self._same_gpu(worker):
                while not w.lock.acquire(timeout=0.2):
                    if cancel.is_set():
                        return WorkerOutcome(cancelled=True)
                held.append(w)
            if on_event is not None:
                first = next((e.finding.message for e in outcome.events
                              if isinstance(e, FindingEvent) and e.finding.code == "KL302"), "")
                on_event(Stage("queue", "out of memory beside other checks on this GPU: checking it again alone"
                               + (f" ({first[:300]})" if first else "")))
            outcome = worker.run(job, files, timeout, on_event, cancel)
            outcome.add_stat(Stat("retried", 1))
            return outcome
        finally:
            for w in held:
                self.release(w)

    def _compile_warmer(self, job: CheckJob, worker: PersistentWorker) -> compile_warmer.CompileWarmer | None:
        """Start a compile warmer (compile_warmer.py) when the job will time torch.compile on a local GPU worker that
        is not running yet: the warmer's imports and compile overlap the worker's start and the verification.
        KERNEL_LSP_COMPILE_WARMER=0 turns it off."""
        if (not self.warmer or not job.measure.enabled or not job.measure.compile or job.measure.against is not None
                or os.environ.get("KERNEL_LSP_COMPILE_WARMER", "1") == "0"):
            return None
        if worker.alive() and worker.state in ("ready", "busy"):
            return None  # a running worker keeps its compiled references, or its disk caches are warm already
        env = dict(os.environ)
        if not compile_warmer.needed(job, env):
            return None  # compiled here before: Inductor's caches hold it
        return compile_warmer.start(job, env)

    def warm_up(self) -> None:
        def start(w: PersistentWorker) -> None:
            if w.lock.acquire(blocking=False):
                try:
                    w.start()
                finally:
                    self.release(w)
        for w in self.workers:
            threading.Thread(target=start, args=(w,), name=f"{w.name}-warm-up", daemon=True).start()

    def close(self) -> None:
        for w in self.workers:
            w.close()

    def describe(self) -> str:
        return ", ".join(w.name for w in self.workers)


class HostExecutor(Executor):
    """This machine's executor: jobs go to the long-lived (GPU or runner) workers when there are any, else to local
    children; a job that asks for the CPU (`device = cpu`, as the proposers' compile-only checks do) runs locally
    when the workers are this machine's GPUs."""

    def __init__(self, cpu: LocalExecutor, workers: WorkerPoolExecutor | None = None):
        self.cpu, self.workers = cpu, workers
        primary = workers or cpu
        self.capacity, self.ships_files = primary.capacity, primary.ships_files

    def _for(self, job: CheckJob) -> Executor:
        if self.workers is None or (job.device == "cpu" and not self.workers.ships_files):
            return self.cpu
        return self.workers

    def run(self, job, files=None, timeout=60.0, on_event=None, cancel=None) -> WorkerOutcome:
        return self._for(job).run(job, files, timeout, on_event, cancel)

    def local(self) -> Executor:
        return self.cpu

    def warm_up(self) -> None:
        (self.workers or self.cpu).warm_up()

    def close(self) -> None:
        if self.workers is not None:
            self.workers.close()
        self.cpu.close()

    def describe(self) -> str:
        return self.workers.describe() if self.workers is not None else self.cpu.describe()
