"""`kernel-lsp worker`: a long-lived worker that runs jobs sent over its stdin and streams events on its stdout.

It holds torch, triton and (on a GPU) the CUDA context between jobs, so a job starts in milliseconds instead of
the seconds a fresh process needs. It is what the parent starts once per visible GPU, and what a `runner` command
starts on another machine (`ssh gpu-box kernel-lsp worker`): the protocol assumes nothing but a byte stream.

Protocol (the typed messages of protocol.py, one JSON line each):
- worker to parent, once: `WorkerReady` (pid, device, GPU name, start-up steps, protocol version);
- parent to worker: `RunJob` (the job, and the files it needs when no file system is shared: the worker writes
  them under a fresh root, runs the job there and maps paths back);
- worker to parent: `JobEvent` per event, then `JobEnd` (cancelled; exiting: the worker ends after this job,
  because a GPU fault lost its CUDA context);
- parent to worker: `CancelJob` interrupts the job (KeyboardInterrupt in it); EOF on stdin ends the worker.

The user's code shares this process across jobs; the engine restores what it patches after each job (the launch
recorder, the bounds guard). After a CUDA error the context is unusable: the worker ends the job and exits, and
the parent starts a new one. User code that prints cannot corrupt the protocol: fd 1 is pointed at stderr and the
protocol writes to a private duplicate of the original stdout.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import queue
import shutil
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import IO, Any, Callable, NoReturn

from .. import __version__
from ..codes import severity_of
from ..jobs import CheckJob, Device, Done, Event, FindingEvent, SandboxOptions, event_to_dict
from ..model import Finding, Span
from ..checker.problem.errors import DeviceFault, is_device_fault, is_out_of_memory
from .child import PARENT_ENV, WORKDIR_ENV, choose_device, die_with_parent
from .job_imports import JobImports
from ..player.isolate import kill_descendants
from .sandbox import child_env, enter
from .protocol import (CancelJob, EventWriter, JobEnd, JobEvent, ProtocolError, RunJob, WorkerReady, decode,
                       encode)

IDLE_RELEASE_S = 0.05  # how long a worker waits for its next job (or the end of stdin) before releasing memory


class StreamSink(EventWriter):
    """Events of job `job_id`, tagged with it, with paths under the shipped-files root mapped back."""

    def __init__(self, stream: IO[str], lock: threading.Lock, job_id: Any, root: str | None, path: str):
        super().__init__(stream)
        self.lock, self.job_id, self.root, self.path = lock, job_id, root, path

    def emit(self, event: Event) -> None:
        if isinstance(event, FindingEvent):
            event.finding.path = self.path
            if self.root:
                event.finding.message = event.finding.message.replace(self.root, "")
        with self.lock:
            self._stream.write(encode(JobEvent(self.job_id, event_to_dict(event))))
            self._stream.flush()


# What tamper.py watches in this module besides its own list: the sink every finding of a job leaves through.
WATCHED_HERE = [(StreamSink, ["emit"])]


def place_files(job: CheckJob, files: dict[str, str]) -> str:
    """Write shipped files under a fresh root (each absolute path re-rooted there) and point the job at them."""
    root = tempfile.mkdtemp(prefix="kernel-lsp-job-")
    for path, text in files.items():
        target = Path(root + str(Path(path)))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    job.path = root + job.path
    job.link.reference = root + job.link.reference
    if job.link.inputs_path:
        job.link.inputs_path = root + job.link.inputs_path
    return root


def serve_jobs(device: str = "auto", sandbox: SandboxOptions | None = None) -> NoReturn:
    """Start up (warm imports, then the sandbox), say WorkerReady, and run the jobs the parent sends until its end of
    stdin closes (exit status 0) or a job leaves the process unfit for another (3): `_leave` ends the process."""
    protocol = _private_stdout()
    parent = os.environ.get(PARENT_ENV)
    die_with_parent(int(parent) if parent and parent.isdigit() else None)
    startup: dict[str, float] = {}
    lap = _stopwatch(startup)
    # The players' server first: its own imports (torch, a CUDA context's driver) run beside this process's below
    # (a cold GPU check waited 5.6 s for them after this worker's 10.4 s, H100, 2026-12-06). Its device is told by
    # the driver's files; torch, once imported, has the last word (`choose_device`).
    from . import players
    given, workdir, env = _start_players(players.likely_device(device), sandbox or SandboxOptions(), lap)
    device = choose_device(device)
    import torch  # noqa: F401  (warm: imported once for every job; choose_device imports it for a GPU)
    lap("import torch")
    _match_players(device, env, given)
    gpu, pipeline = _warm_up(device, lap)
    confined = _confine(sandbox or SandboxOptions(), workdir, env, lap)
    from .tamper import Snapshot, TimerCheck
    pristine = Snapshot(*WATCHED_HERE)
    imports = JobImports()
    timer = TimerCheck() if device == "cuda" else None
    lock = threading.Lock()

    def send(message) -> None:
        with lock:
            protocol.write(encode(message))
            protocol.flush()

    jobs: queue.Queue = queue.Queue()
    current: dict[str, Any] = {"id": None}
    threading.Thread(target=_read_stdin, args=(jobs, current), name="kernel-lsp-worker-stdin", daemon=True).start()
    send(WorkerReady(os.getpid(), device, gpu, startup, version=__version__, sandbox=confined))

    def idle() -> bool:
        return jobs.empty() and current["id"] is None

    players.after_check(sandbox or SandboxOptions(), idle)  # spare players for the first check (run/players.py)
    released = True
    while True:
        try:
            # The last job's memory goes back (a collection and the GPU's cache: 0.1-0.2 s on a worker that holds
            # torch and Inductor) after its JobEnd: once idle, or before a job that came meanwhile; never when the
            # parent's end of stdin comes next (a one-file check waits for this process's end).
            try:
                message = jobs.get(timeout=None if released else IDLE_RELEASE_S)
            except queue.Empty:
                _release_memory(device)
                released = True
                continue
            if message is None:
                _leave(protocol, 0)
            if not released:
                _release_memory(device)
            released = False
            poisoned = run_one(message, device, send, lock, protocol, current, pipeline, pristine, timer, imports)
            # What the job's code started and left running; not the players' server, which serves every job (and,
            # started before this process confined itself, is not a process it may signal).
            kill_descendants(keep=frozenset({players.installed().proc.pid}) if players.installed() else frozenset())
            if poisoned:
                _leave(protocol, 3)  # the CUDA context cannot be trusted after a fault: the parent starts a fresh worker
            # Idle now: the next check's players start while none runs (a queued check would compete with them).
            players.after_check(message.job.sandbox, idle)
        except KeyboardInterrupt:
            continue  # a cancel that arrived between jobs


def _leave(protocol: IO[str], code: int) -> NoReturn:
    """End the worker now, without the interpreter's shutdown: with torch, Triton, Inductor and a CUDA context loaded
    it took most of a second (0.87 s on this project's CPU machine, 0.07 s without), which a one-file check's
    parent waits for before it reports. Nothing is left to do at exit: every message is flushed as it is sent, the
    players' server dies with this process, and the parent removes the worker's folder."""
    for stream in (protocol, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _private_stdout() -> IO[str]:
    """The protocol's stream: a private duplicate of stdout, with fd 1 and sys.stdout pointed at stderr, so that the
    user's prints never go into the protocol."""
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)  # the user's prints go to stderr, never into the protocol
    sys.stdout = sys.stderr
    return protocol


def _stopwatch(laps: dict[str, float]) -> Callable[[str], None]:
    """A function that records in `laps`, under the name it is given, the seconds since its last call (or since
    this one)."""
    import time
    clock = time.monotonic()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.monotonic()
        laps[name] = round(now - clock, 3)
        clock = now

    return lap


def _warm_up(device: str, lap: Callable[[str], None]) -> tuple[str, Any]:
    """Import torch, Triton and the checker's pipeline once for every job, warm the meta device, and on CUDA
    initialise the context. Returns the GPU's name ("" on the CPU) and the pipeline module."""
    gpu = ""
    import torch  # noqa: F401  (imported by the caller, which times it)
    import triton  # noqa: F401
    from ..checker import pipeline
    lap("import triton and kernel-lsp")
    from ..checker.problem.loader import warm_meta_device
    warm_meta_device()
    lap("meta device")
    if device == "cuda":
        torch.cuda.init()
        gpu = torch.cuda.get_device_name()
        lap("CUDA init")
    return gpu, pipeline


def _start_players(device: str, sandbox: SandboxOptions,
                   lap: Callable[[str], None]) -> tuple[str | None, str, dict[str, str]]:
    """The parent's folder for this worker (None without one), this worker's private folder in it, its scrubbed
    environment, and the players' fork server (run/players.py) started: each job's player is forked there and
    confines itself; the implementation never runs in this process."""
    # Every job's code runs in a player. Its environment is scrubbed again (a runner's shell may have passed more
    # than ours would), it works in a private folder, and the worker kills whatever a job leaves running once the
    # job ends.
    given = os.environ.get(WORKDIR_ENV)  # the parent's folder for this worker, which the parent removes
    given = given if given and os.path.isdir(given) else None
    workdir = tempfile.mkdtemp(prefix="w", dir=given) if given else tempfile.mkdtemp(prefix="kernel-lsp-worker-")
    env = child_env(sandbox, dict(os.environ))
    from . import players
    players.install(players.PlayerServer(device, env, parent=given))
    lap("player server")
    return given, workdir, env


def _match_players(device: str, env: dict[str, str], given: str | None) -> None:
    """Bring what was set up before torch chose the device in line with its choice: the environment the worker will
    keep (TRITON_INTERPRET, which `choose_device` sets or clears), and the players' server, replaced when torch chose
    another device than the driver's files suggested (a GPU that this torch cannot use)."""
    if "TRITON_INTERPRET" in os.environ:
        env["TRITON_INTERPRET"] = os.environ["TRITON_INTERPRET"]
    else:
        env.pop("TRITON_INTERPRET", None)
    from . import players
    server = players.installed()
    if server is not None and server.device != device:
        server.close()
        shutil.rmtree(server.dir, ignore_errors=True)
        players.install(players.PlayerServer(device, env, parent=given))


def _confine(sandbox: SandboxOptions, workdir: str, env: dict[str, str], lap: Callable[[str], None]) -> str:
    """Confine this process (sandbox.py), after starting the players' fork server and the warm imports; returns
    `enter`'s one-line account of the confinement, for WorkerReady."""
    os.environ.clear()
    os.environ.update(env)
    confined = enter(sandbox, workdir)
    lap("sandbox")
    return confined


def _read_stdin(jobs: queue.Queue, current: dict[str, Any]) -> None:
    """Queue each RunJob the parent sends, interrupt the main thread on a CancelJob for the job it is running, and
    queue None at EOF (the parent is gone)."""
    for line in sys.stdin:
        try:
            message = decode(line)
        except ProtocolError:
            continue
        if isinstance(message, CancelJob):
            if message.id == current["id"] and current["id"] is not None:
                _thread.interrupt_main()
        elif isinstance(message, RunJob):
            jobs.put(message)
    jobs.put(None)  # EOF: the parent is gone


def run_one(message: RunJob, device: str, send, lock, protocol, current, pipeline, pristine=None,
            timer=None, imports: JobImports | None = None) -> bool:
    """Run one job; returns True when the process must not run another: a CUDA fault poisoned its context, or the
    job's code replaced a function of torch, Triton or the clock that the next job would meet (tamper.py)."""
    job_id = message.id
    root = None
    poisoned = False
    cancelled = False
    try:
        job = message.job
        path = job.path
        if message.files:
            root = place_files(job, message.files)
        from .tamper import finding_for
        sink = StreamSink(protocol, lock, job_id, root, path)
        job.device = device
        sink.emit(Device(device))
        current["id"] = job_id
        if imports is not None:
            imports.forget()  # what an interrupted forget of the last job left
        try:
            with _profiled(job_id):
                from . import players
                pipeline.run_check(job, sink, players.connector(job.sandbox))
            replaced = pristine.changed() if pristine is not None else []
            tampered = finding_for(replaced, path, job.anchor)
            if tampered is not None:
                sink.finding(tampered)
        except KeyboardInterrupt:
            cancelled = True
        except DeviceFault:
            poisoned = True  # reported by the pipeline, with the stage it happened in
        except Exception as e:
            text = f"{type(e).__name__}: {e}"
            poisoned = is_device_fault(e)
            if is_out_of_memory(e):
                sink.finding(Finding(path, job.anchor, severity_of("KL302"), "KL302",
                                     f"out of GPU memory while checking this file ({text.splitlines()[0][:200]})",
                                     source="kernel-lsp.worker"))
            elif poisoned:
                sink.finding(Finding(path, job.anchor, severity_of("KL300"), "KL300",
                                     f"the kernel faulted on the GPU ({text.splitlines()[0][:300]}); the worker's "
                                     "CUDA context is replaced", source="kernel-lsp.worker"))
            else:
                sink.finding(Finding(path, Span(0), severity_of("KL900"), "KL900",
                                     "kernel-lsp failed while checking this file: " + text.splitlines()[0][:300],
                                     data={"traceback": traceback.format_exc()}))
        finally:
            current["id"] = None
            if imports is not None:
                imports.forget()  # the next job imports the user's modules afresh (job_imports.py)
        if not cancelled:
            sink.emit(Done())
    except KeyboardInterrupt:
        cancelled = True
    finally:
        if root:
            shutil.rmtree(root, ignore_errors=True)
    # A fault the job reported as a finding (an illegal address inside the implementation is KL105) still leaves
    # the context unusable: probe it, and leave rather than fail every later job.
    poisoned = poisoned or (device == "cuda" and not _context_healthy())
    if pristine is not None and not poisoned:
        replaced = pristine.changed()
        if replaced:
            sys.stderr.write(f"kernel-lsp worker: job {job_id} replaced {', '.join(replaced[:8])}; retiring\n")
            poisoned = True
    if timer is not None and not poisoned and timer.broken():
        sys.stderr.write(f"kernel-lsp worker: after job {job_id} the CUDA events no longer tell time; retiring\n")
        poisoned = True
    send(JobEnd(job_id, cancelled, poisoned))
    return poisoned


@contextlib.contextmanager
def _profiled(job_id: Any):
    """With KERNEL_LSP_PROFILE=DIR, each job runs under cProfile and its stats land in DIR/job-PID-ID.prof (read
    them with `python -m pstats`); how docs/performance.md's GPU profiles were taken."""
    folder = os.environ.get("KERNEL_LSP_PROFILE")
    if not folder:
        yield
        return
    import cProfile
    profile = cProfile.Profile()
    profile.enable()
    try:
        yield
    finally:
        profile.disable()
        try:
            os.makedirs(folder, exist_ok=True)
            profile.dump_stats(os.path.join(folder, f"job-{os.getpid()}-{job_id}.prof"))
        except OSError as e:  # a profile that cannot be written never fails the check it measured
            sys.stderr.write(f"kernel-lsp worker: the profile of job {job_id} was not written: {e}\n")


def _context_healthy() -> bool:
    try:
        import torch
        torch.ones(1, device="cuda").add_(1)
        torch.cuda.synchronize()
        return True
    except Exception:
        return False


def _release_memory(device: str) -> None:
    if device == "cuda":
        try:
            import gc

            import torch
            gc.collect()
            torch.cuda.empty_cache()
        except Exception:
            pass


def contained(argv: list[str]) -> int:
    """`kernel-lsp worker ARGS`: this module's main in a reaper (reaper.py), so that nothing a job starts outlives
    the worker, however it ends (a runner's ssh session closing included)."""
    from . import reaper
    return reaper.main([sys.executable, "-m", "kernel_lsp.run.serve", *argv])


def main(argv: list[str] | None = None) -> NoReturn:
    import argparse
    p = argparse.ArgumentParser(prog="kernel-lsp worker")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default=os.environ.get("KERNEL_LSP_DEVICE", "auto"))
    p.add_argument("--sandbox", type=SandboxOptions.from_json, default=None,
                   help="the sandbox's options as JSON (what the parent's settings say)")
    args = p.parse_args(argv)
    serve_jobs(args.device, args.sandbox)


if __name__ == "__main__":
    sys.exit(main())
