"""Ray as an executor (`executor = "ray"`, `kernel-lsp check --executor ray [--ray-address ADDR]`).

Jobs run on a Ray cluster with no shared file system: each carries its files as text, and the Ray side writes them
under a fresh root (serve.place_files), runs the job there through an ordinary executor of that machine, and maps
every path in what comes back to the caller's paths (ray_remote.py is that Ray side). Two ways in:

- CPU verification: one Ray task per job (`num_cpus=1`). The task runs the job through a `LocalExecutor` kept per
  Ray worker process (Ray reuses its workers, so the zygote and the re-run's harness stay warm across jobs);
- GPUs: one actor per GPU (`num_gpus=1`) holding `WorkerPoolExecutor.local_gpus` for the GPU Ray gave it (its
  long-lived workers, `per_gpu` of them as the gpu-workers setting says, compile warmer and isolated re-run, as on a
  local GPU); an actor takes a job per worker at once. A job that asks for the CPU (the proposers' compile-only
  checks) still runs as a task.

Either way the Ray side streams the job's live events (stages, previews) and then its `WorkerOutcome`, as plain data
(protocol.outcome_to_dict); the first item says which kernel-lsp runs there, and one of another protocol is refused.

A job whose Ray worker, actor or node is lost mid-job (WorkerCrashedError, RayActorError, NodeDiedError, a lost
object) is submitted again, at most `retries` times; only the attempt that ends gives a result, so none is lost
or counted twice, and its outcome carries `Stat("retried", k)` (the report's stats say `retried: k`). The checked
code's own faults are not retried: a kernel that crashes its child is KL300 here as on this machine. (Killing an
actor kills its children first, so a job can report its child's death before the actor is gone; the actor is asked
then, and one that answers from another process, or not at all, makes it a loss; see `_actor_lost`.)

A lost head is not retried: nothing runs without it. `HeadWatch` (ray_head.py, beside `connect`, which joins the
cluster) asks the head (its GCS port) for a gRPC handshake every HEAD_PROBE_S seconds; once it has not answered for
HEAD_LOST_S seconds the executor is `lost`: every job still running, waiting or yet to come ends at once with KL303
saying so, without another call into Ray (with the head gone, Ray's calls wait for it). `close()` then leaves Ray
alone too. The process goes on: Ray would end it with status 1 once the head has not answered for
`gcs_rpc_server_reconnect_timeout_s`, a minute by default, but `connect` sets that to a week for a process that joins
Ray through kernel-lsp, so a language server or batch-API process keeps running after its KL303s (a new Ray
executor in it is refused, saying to restart). `close()` kills a local cluster the executor started, and the
process's exit is prompt: ray_head.py's exit handler shuts Ray down without waiting on the lost head (`kernel-lsp
check` leaves with os._exit right after its report instead).

`ray` is imported only here and in ray_head.py (`import_ray`), and only when this executor is made: kernel-lsp
without the `ray` extra works, and asking for it then is a configuration error that says what to install.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time

from .. import __version__
from ..jobs import CheckJob, LIVE, SandboxOptions, Stat
from .local import Executor, LocalExecutor, OnEvent
from .outcome import MAX_WAITED_S, WorkerOutcome
from .protocol import PROTOCOL, decode_event, mismatch, outcome_from_dict
from .ray_head import CONNECT_TIMEOUT, INSTALL, HeadWatch, RayUnavailable, connect, import_ray, kill_own_cluster
from .ray_remote import DeviceWorker, run_task, warm_task, who_runs_here

log = logging.getLogger(__name__)

START_TIMEOUT = 300.0  # seconds for a submitted job to reach a Ray worker (a cold one imports ray, then kernel-lsp)
ACTOR_TIMEOUT = 300.0  # seconds for a (re)started GPU actor to answer
PING_TIMEOUT = 60.0  # seconds for an actor whose job's worker died to answer (it answered a moment before)


def _lost_errors() -> tuple[type, ...]:
    """Ray's words for "the process, actor or node running the job is gone": the job may run again elsewhere."""
    from ray import exceptions as x
    return (x.WorkerCrashedError, x.RayActorError, x.NodeDiedError, x.ObjectLostError, x.LocalRayletDiedError,
            x.OutOfMemoryError)


class RayExecutor(Executor):
    """Jobs on a Ray cluster: CPU jobs as tasks, GPU jobs on one actor per GPU (see the module's docstring).

    `capacity`: the cluster's CPUs (at most `max_jobs`), or its GPUs times `per_gpu` (the jobs each GPU's actor takes
    at once) when jobs go to GPU actors. `actors` and
    `actor_gpus` override how many actors hold long-lived workers and how many GPUs each takes (tests give them
    none, to run the actors' path on a CPU)."""

    ships_files = True

    def __init__(self, address: str | None = None, device: str = "auto", sandbox: SandboxOptions | None = None,
                 retries: int = 2, max_jobs: int | None = None, actors: int | None = None,
                 actor_gpus: float = 1.0, connect_timeout: float = CONNECT_TIMEOUT, per_gpu: int = 1):
        self.owns_session = connect(address, connect_timeout)
        self.ray = import_ray()
        self.address = address or "local"
        self.device = device
        self.sandbox = sandbox or SandboxOptions()
        self.retries = max(0, retries)
        self.head = HeadWatch(self.ray.get_runtime_context().gcs_address)
        self._check_workers()
        resources = self.ray.cluster_resources()
        self.cpus, self.gpus = int(resources.get("CPU", 0)), int(resources.get("GPU", 0))
        if device == "cuda" and not self.gpus and actor_gpus:
            self.close()
            raise RayUnavailable(f"device cuda, but the Ray cluster at {self.address} has no GPU")
        if actors is None:
            actors = self.gpus if device != "cpu" else 0
        self.actor_gpus = actor_gpus
        self._task = self.ray.remote(num_cpus=1, max_retries=0)(run_task).options(num_returns="streaming")
        self.per_gpu = max(1, per_gpu)  # jobs at once per actor: its GPU's long-lived workers (gpu-workers)
        self._actor_class = self.ray.remote(num_cpus=1, num_gpus=actor_gpus, max_restarts=-1, max_task_retries=0,
                                            max_concurrency=self.per_gpu + 3)(DeviceWorker)
        worker_device = "cuda" if device == "cuda" else ("cpu" if not actor_gpus else "auto")
        self._actor_args = (worker_device, self.sandbox.to_dict(), self.per_gpu)
        self.actors = [self._actor_class.remote(*self._actor_args) for _ in range(actors)]
        self._busy: dict[int, int] = {}  # actor index -> its jobs running
        self._free = threading.Condition()
        self._ids = itertools.count(1)
        self._local: LocalExecutor | None = None
        self.capacity = len(self.actors) * self.per_gpu or max(1, min(self.cpus, max_jobs or self.cpus))

    @property
    def lost(self) -> str | None:  # type: ignore[override]
        head = getattr(self, "head", None)
        return head.lost if head is not None else None

    def _lost_outcome(self) -> WorkerOutcome:
        return WorkerOutcome(start_failed=f"{self.lost} before this file's job ended")

    def _check_workers(self) -> None:
        """One small task first: a cluster whose workers cannot import kernel-lsp is one usage error that says
        what to install, not a KL303 per file with the cause cut off."""
        probe = self.ray.remote(num_cpus=0, max_retries=0)(who_runs_here)
        try:
            ref, deadline = probe.remote(), time.monotonic() + START_TIMEOUT
            while not self.ray.wait([ref], timeout=0.2)[0]:
                if self.lost or time.monotonic() > deadline:
                    raise TimeoutError(self.lost or f"no answer within {START_TIMEOUT:.0f} s")
            there = self.ray.get(ref)
        except Exception as e:  # a RayTaskError around the worker's ImportError, or a timeout
            text = str(e)
            self.close()
            if "kernel_lsp" in text and ("No module named" in text or "ModuleNotFoundError" in text):
                raise RayUnavailable(f"the Ray cluster at {self.address} cannot import kernel_lsp on its workers: "
                                     f"install kernel-lsp {__version__} on every node ({INSTALL}, with the same "
                                     "torch and triton)") from None
            raise RayUnavailable(f"the Ray cluster at {self.address} could not run a task: "
                                 f"{_one_line(e)}") from None
        if there.get("protocol") != PROTOCOL:  # as every job's first item is judged (_stream)
            self.close()
            raise RayUnavailable(f"the Ray cluster at {self.address}: "
                                 f"{mismatch(there.get('protocol'), there.get('version', ''))}")

    # Routing ------------------------------------------------------------------------------------------------

    def _on_actor(self, job: CheckJob) -> bool:
        """A job goes to the actors unless it asks for the CPU while they hold GPUs (or there are none)."""
        return bool(self.actors) and (job.device != "cpu" or not self.actor_gpus)

    def run(self, job: CheckJob, files: dict[str, str] | None = None, timeout: float = 60.0,
            on_event: OnEvent | None = None, cancel: threading.Event | None = None) -> WorkerOutcome:
        cancel = cancel or threading.Event()
        lost: list[str] = []
        while True:
            if self.lost:
                return self._lost_outcome()
            if self._on_actor(job):
                outcome, failure = self._on_device(job, files, timeout, on_event, cancel)
            else:
                cpu_job = {**job.to_dict(), "device": "cpu"}  # tasks are the CPU path, whatever the node has
                outcome, failure = self._stream(self._task.remote(cpu_job, files, timeout), None, timeout,
                                                on_event, cancel)
            if failure is None:
                assert outcome is not None
                if lost:
                    outcome.add_stat(Stat("retried", len(lost)))
                    log.warning("%s: retried %d time(s) after %s", job.path, len(lost), "; ".join(lost))
                return outcome
            if self.head.went_with(cancel):
                return self._lost_outcome()
            lost.append(failure)
            if len(lost) > self.retries:
                times = f"{len(lost)} time" + ("s" if len(lost) > 1 else "")
                return WorkerOutcome(start_failed=f"the Ray worker running it was lost {times} "
                                     f"(retries = {self.retries}); the last time: {failure}")

    def _on_device(self, job, files, timeout, on_event, cancel) -> tuple[WorkerOutcome | None, str | None]:
        index = self._acquire(cancel)
        if index is None:
            return (self._lost_outcome() if self.lost else WorkerOutcome(cancelled=True)), None
        try:
            problem = self._await_actor(index)
            if problem is not None:
                return WorkerOutcome(start_failed=problem), None
            actor, job_id = self.actors[index], next(self._ids)
            stream = actor.run.options(num_returns="streaming").remote(job_id, job.to_dict(), files, timeout)
            return self._stream(stream, (actor, job_id), timeout, on_event, cancel)
        finally:
            self._release(index)

    def _acquire(self, cancel: threading.Event) -> int | None:
        with self._free:
            while True:
                for i in sorted(range(len(self.actors)), key=lambda i: self._busy.get(i, 0)):
                    if self._busy.get(i, 0) < self.per_gpu:
                        self._busy[i] = self._busy.get(i, 0) + 1
                        return i
                if cancel.is_set() or self.lost:
                    return None
                self._free.wait(0.2)

    def _release(self, index: int) -> None:
        with self._free:
            self._busy[index] = max(0, self._busy.get(index, 0) - 1)
            self._free.notify_all()

    def _await_actor(self, index: int) -> str | None:
        """Wait until the actor answers: it may be restarting (after a crash, or on another node after its node
        died). One that Ray gave up on is replaced. None when it answers, else why not."""
        x = self.ray.exceptions
        deadline = time.monotonic() + ACTOR_TIMEOUT
        pinged = self.actors[index]
        ref = pinged.ping.remote()
        while True:
            if self.lost:
                return self._lost_outcome().start_failed
            if self.ray.wait([ref], timeout=0.2)[0]:
                try:
                    self.ray.get(ref)
                    return None
                except x.ActorUnavailableError:
                    time.sleep(0.2)
                except x.ActorDiedError:
                    with self._free:  # jobs sharing the actor (per_gpu > 1) replace it once, not each its own
                        if self.actors[index] is pinged:
                            self.actors[index] = self._actor_class.remote(*self._actor_args)
                pinged = self.actors[index]
                ref = pinged.ping.remote()
            if time.monotonic() > deadline:
                return (f"no Ray actor with {self.actor_gpus:g} GPU answered within {ACTOR_TIMEOUT:.0f} s (does the "
                        "cluster still have a free GPU?)")

    # One attempt --------------------------------------------------------------------------------------------

    def _stream(self, stream, actor_job, timeout: float, on_event: OnEvent | None,
                cancel: threading.Event) -> tuple[WorkerOutcome | None, str | None]:
        """Follow one attempt's stream to its outcome. (outcome, None) when it ended, or was cancelled, or can
        never run; (None, why) when its worker was lost and the job may run again."""
        ray, lost = self.ray, _lost_errors()
        submitted = time.monotonic()
        started: float | None = None
        runner: list | None = None  # [host, pid] of the process that runs the job there
        while True:
            if self.lost:  # not cancelled: Ray would wait on the lost head
                return self._lost_outcome(), None
            if cancel.is_set():
                self._cancel(stream, actor_job)
                return WorkerOutcome(cancelled=True), None
            now = time.monotonic()
            if started is None and now - submitted > START_TIMEOUT:
                self._cancel(stream, actor_job, force=True)
                return WorkerOutcome(start_failed=f"no Ray worker took the job within {START_TIMEOUT:.0f} s"), None
            if started is not None and now - started > 5 * timeout + 2 * MAX_WAITED_S + 120:
                # The job's own timeouts (the check's and its re-run's, each leaving out up to MAX_WAITED_S of waits
                # for a GPU or the compile warmer) end it long before this: the Ray side hangs.
                self._cancel(stream, actor_job, force=True)
                return None, f"no answer from its Ray worker {now - started:.0f} s after the job started"
            ready, _ = ray.wait([stream], timeout=0.2)
            if not ready:
                continue
            try:
                item = ray.get(next(stream))
            except StopIteration:
                return None, "its Ray worker ended the job without a result"
            except lost as e:
                return None, _one_line(e)
            except Exception as e:  # the Ray side could not run our code at all (kernel-lsp missing there, say)
                return WorkerOutcome(start_failed=f"the Ray worker could not run the job: {_one_line(e)}"), None
            if "started" in item:
                there = item["started"]
                if there.get("protocol") != PROTOCOL:
                    self._cancel(stream, actor_job)
                    return WorkerOutcome(start_failed=f"a Ray worker was refused: "
                                         f"{mismatch(there.get('protocol'), there.get('version', ''))}"), None
                started, runner = time.monotonic(), [there.get("host"), there.get("pid")]
            elif "event" in item and on_event is not None:
                event = decode_event(item["event"])
                if isinstance(event, LIVE):
                    try:
                        on_event(event)
                    except Exception:
                        pass
            elif "outcome" in item:
                outcome = outcome_from_dict(item["outcome"])
                if actor_job is not None and not outcome.completed and not outcome.cancelled:
                    gone = self._actor_lost(actor_job[0], runner, cancel)
                    if cancel.is_set():
                        return WorkerOutcome(cancelled=True), None
                    if gone is not None:
                        return None, gone
                return outcome, None

    def _actor_lost(self, actor, runner: list | None, cancel: threading.Event) -> str | None:
        """Why the actor that ran a job that did not end (its child died, or never started) is not the one that
        started it, or None when it is. Killing an actor (ray.kill, its node going away) kills its children first,
        and the job's outcome, the child's death, can still leave before the actor itself is gone (it did in CI):
        that is the actor's loss, to retry, not the checked code's crash (KL300). An actor that answers from
        another process (host and pid), or not at all, was lost; the checked code's own crash leaves the same actor
        answering. (The dying process did not answer in any of 25 such races on Ray 2.60: its kill handler holds
        it until it exits.) Waiting stops when the job is cancelled."""
        ref = actor.ping.remote()
        deadline = time.monotonic() + PING_TIMEOUT
        while not cancel.is_set() and not self.lost:
            ready, _ = self.ray.wait([ref], timeout=0.2)
            if ready:
                try:
                    now = self.ray.get(ref)
                except Exception as e:  # RayActorError (unavailable, died) and the other losses, or anything else
                    return f"its Ray actor was lost mid-job: {_one_line(e)}"
                if runner is not None and list(now) != runner:
                    return (f"its Ray actor was restarted mid-job (process {runner[1]} on {runner[0]} started the job, "
                            f"{now[1]} on {now[0]} answers now)")
                return None
            if time.monotonic() > deadline:
                return f"its Ray actor did not answer within {PING_TIMEOUT:.0f} s after its job's worker died"
        return self.lost  # None when cancelled: the caller looks

    def _cancel(self, stream, actor_job, force: bool = False) -> None:
        try:
            if actor_job is not None:
                actor, job_id = actor_job
                actor.cancel.remote(job_id)  # the actor's long-lived worker stays; only the job stops
            else:
                self.ray.cancel(stream, force=force)  # not forced: the task kills its child and keeps its zygote
        except Exception as e:
            log.debug("cancel: %s", e)

    # The rest of the seam -----------------------------------------------------------------------------------

    def local(self) -> Executor:
        if self._local is None:
            self._local = LocalExecutor(1, "cpu", sandbox=self.sandbox)
        return self._local

    def warm_up(self) -> None:
        """Actors start their workers when they are made; CPU workers start their zygotes now, one per CPU."""
        if not self.actors:
            warm = self.ray.remote(num_cpus=1)(warm_task)
            for _ in range(self.capacity):
                warm.remote(self.sandbox.to_dict())

    def close(self) -> None:
        head = getattr(self, "head", None)
        if head is not None:
            head.stop()
        if self.lost:
            # Ray's kill and shutdown wait on the lost head: Ray is left alone (ray_head's exit handler shuts it down
            # without those waits), but a local cluster this executor started is killed now, with all it started.
            if getattr(self, "owns_session", False):
                kill_own_cluster()
            self.actors, self.owns_session = [], False
        for actor in getattr(self, "actors", []):
            try:
                self.ray.kill(actor)
            except Exception:
                pass
        self.actors = []
        local = getattr(self, "_local", None)
        if local is not None:
            local.close()
        if getattr(self, "owns_session", False):
            self.ray.shutdown()
            self.owns_session = False

    def describe(self) -> str:
        where = f"ray at {self.address}"
        if self.actors:
            return f"{where}: {len(self.actors)} GPU actor(s)"
        return f"{where}: {self.capacity} CPU task(s) at a time"


def _one_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0][:200]}" if lines else type(e).__name__
