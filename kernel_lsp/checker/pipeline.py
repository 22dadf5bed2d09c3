"""The checker's pipeline for one file: load, capture launches, compile for targets, verify, measure.

Runs in a worker process (it imports torch and the reference side of the problem). The implementation runs in a
player (checker/player.py) this pipeline starts through `connect`: the capture, the compile for the targets, every
call of the verifier and the timed calls are requests to it. Every result leaves as an event through the job's
`Sink`, as soon as it is known, so a crash later loses nothing earlier.
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Any, Callable

from ..jobs import CheckJob, Sink, Stage, crash_hint
from .measure import timing  # noqa: F401  (takes the clocks as they are before any checked code can replace them)
from .measure import gpu_lease
from ..model import KernelFacts, Severity, Span
from ..targets import parse_targets
from ..verdict import lets_evidence_run, problems
from .player import Player, PlayerLost, RemoteError, RemoteRecorder
from .problem.errors import IMPLEMENTATION, DeviceFault, OutOfMemory, UserCodeError, is_out_of_memory
from .problem.loader import load_problem
from .problem.problem import Problem
from .compile.positions import readable
from .compile.stage import compile_stage
from .reporter import Reporter, replaced_text

from .first_run import LOAD_SOURCE, _capture, _short, report_capture_error  # noqa: F401  (callers import LOAD_SOURCE)


def run_check(job: CheckJob, w: Sink, connect: Callable[[str], Any] | None = None) -> None:
    """Load, capture, compile, verify and (on a GPU) measure one file; every result goes to the sink. `connect(device)`
    gives a connection to a fresh player (run/players.py); the player ends with the job."""
    warnings.filterwarnings("ignore")
    import torch  # imported before user code so its import cost is not blamed on it

    w = StageTracker(w)
    rep = Reporter(w, job.path, job.kernels, job.anchor)
    interpreted = os.environ.get("TRITON_INTERPRET") == "1"
    if interpreted:
        # PyTorch's own error (the reference in the task's dtype) depends on how its CPU reductions split across
        # threads: one thread, whatever the machine or executor (a Ray task gets one; a local worker had two), so a
        # message reads the same everywhere. The sizes on the CPU are small: the interpreter dominates.
        torch.set_num_threads(1)
    player = None
    try:
        w.stage("load")  # the player's start (a fork of its server, or that server's imports on a cold start) too
        player = Player(connect("cpu" if interpreted else "cuda"), "cpu" if interpreted else "cuda")
        player.host_pids = getattr(connect, "host_pids", player.host_pids)
        player.tree_pids = getattr(connect, "tree_pids", player.tree_pids)
        player.holder = getattr(connect, "hold", None)
        _run_stages(job, w, rep, player, torch, interpreted, connect)
    except PlayerLost as e:
        # The process running the implementation ended under a call (a crash, an exit, a kill), as a worker that ran
        # it used to: KL300, said where it happened, with what its last words suggest.
        during = f" during {w.last.stage}" + (f" ({w.last.detail})" if w.last.detail else "") if w.last else ""
        if is_out_of_memory(e):  # the player's own copies or clones found the GPU full: memory, not a crash
            rep.add("KL302", _short(f"out of memory{during}: {e}"), None, source="kernel-lsp.worker")
        else:
            rep.add("KL300", _short(f"{e}{during}{crash_hint(e.stderr)}"), None, source="kernel-lsp.worker",
                    stderr=e.stderr[-2000:])
    except OutOfMemory as e:
        rep.add("KL302", _short(f"out of memory when the implementation ran on {e.where} "
                                f"({readable(str(e)).splitlines()[0][:300]})"), None, source="kernel-lsp.worker")
    except DeviceFault as e:
        fault = e.exc
        text = readable(f"{type(fault).__name__}: {fault}").splitlines()[0][:300]
        during = f" during {w.last.stage}" + (f" ({w.last.detail})" if w.last.detail else "") if w.last else ""
        oob = "illegal memory access" in text or "misaligned address" in text
        rep.add("KL208" if oob else "KL105",
                f"the GPU faulted{during}: {text}" + ("; a load or store outside every allocation (the CPU check "
                                                      "and compute-sanitizer can name the line)" if oob else ""),
                rep.launch_span(player.recorder) if player else None, source="kernel-lsp.verify")
        if not isinstance(fault, RemoteError):
            raise  # this process's own context is lost: the worker replaces it
    finally:
        if player is not None:
            if player.replaced:
                rep.add("KL223", replaced_text(player.replaced, "the implementation"), source="kernel-lsp.verify",
                        replaced=list(player.replaced))
            n, s = player.recorder.jit
            if n:
                w.stat("jit_compiles", n)
                w.stat("jit_seconds", round(s, 3))
            player.close()


class StageTracker(Sink):
    """Forwards events, stamps each stage with the seconds since the job started (the timeline of `check
    --timings`), and remembers the last stage, so a fault can say where it happened."""

    def __init__(self, sink: Sink):
        self.sink, self.last, self.t0 = sink, None, time.monotonic()

    def emit(self, event) -> None:
        if isinstance(event, Stage):
            event.at = round(time.monotonic() - self.t0, 3)
            self.last = event
        self.sink.emit(event)


def _run_stages(job: CheckJob, w: Sink, rep: Reporter, player: Player, torch, interpreted: bool,
                connect: Callable[[str], Any]) -> None:
    """The stages after the player's start: everything up to the evidence runs, on a GPU never while a side is
    timed on it (gpu_lease.verifying), then the measure stage, which times under the GPU's lease."""
    # On a GPU, this check's shared hold of it: other checks verify beside it, none times a side meanwhile.
    def waiting(index: int) -> Callable[[], None]:
        return w.wait("load", f"waiting for GPU {index}: another check is timing on it")
    with gpu_lease.verifying_here("cpu" if interpreted else "cuda", waiting):
        if not interpreted and job.verify and job.measure.enabled and job.measure.compile:
            # torch.compile's imports, once per worker, beside the stages before the measure stage (which waits for
            # them); not before this hold, which another check's timing may be keeping from us
            from .measure.compiled import import_compiler_ahead
            import_compiler_ahead()
        problem = _verify_stages(job, w, rep, player, torch, interpreted, connect)
    if problem is not None and job.measure.enabled:
        measure_stage(problem, player, rep, job, interpreted)


def _verify_stages(job: CheckJob, w: Sink, rep: Reporter, player: Player, torch, interpreted: bool,
                   connect: Callable[[str], Any]) -> Problem | None:
    """Load, capture, compile, verify and gather evidence; the problem when the measure stage follows (None when
    the file could not be loaded or its first run failed)."""
    path = job.path
    recorder = player.recorder
    targets = parse_targets(job.targets)
    if not interpreted:
        # On a GPU, also compile for the GPU's own architecture.
        major, minor = torch.cuda.get_device_capability()
        local = f"sm_{major}{minor}"
        try:
            if local not in {t.name for t in targets}:
                targets.append(parse_targets([local])[0])
        except ValueError:
            pass

    try:
        declared = {n for n in (job.measure.flops, job.measure.bytes) if n and n.isidentifier()}
        problem = load_problem(job.link, path, job.seed, job.source_override, "cpu" if interpreted else "cuda",
                               player, declared)
    except UserCodeError as e:
        if isinstance(e.exc, PlayerLost):
            raise e.exc from None
        in_file = e.line is not None and e.path and os.path.realpath(e.path) == os.path.realpath(path)
        if e.side == IMPLEMENTATION:
            rep.add("KL005", _short(str(e)), Span(e.line, 0) if in_file else None, source=LOAD_SOURCE)
        else:
            rep.add("KL003", _short(str(e)), None, source=LOAD_SOURCE)
        return None

    gpu_lease.let_timing_in(_paused(w, "capture"))  # between a verification's steps a waiting timing goes first
    w.stage("capture", "the problem's own inputs")
    # Under the interpreter the capture is dry: launches are recorded, not executed, so the problem's own
    # (possibly large) sizes cost only the PyTorch glue. Verification runs kernels at CPU-sized inputs.
    launch_error, captured_output = _capture(problem, player, job.seed, dry=interpreted)
    w.stat("launches", recorder.count)
    # Under the interpreter the variants run first and the compile for the targets after them, before the
    # verifier's final findings (which drop a failure a compile error explains): a numeric bug shows about a
    # second sooner (the compile for sm_90 took 0.85 s of a 1.25 s median). On a GPU the compile comes first.
    verify_first = interpreted and job.verify and launch_error is None
    captured_specs = (list(recorder.specs.values()), list(recorder.launches))
    failed = compile_stage(rep, player, targets) if not verify_first else set()
    gpu_lease.let_timing_in(_paused(w, "verify"))

    if launch_error is not None:
        report_capture_error(rep, problem, launch_error, recorder.current in failed, job.link.reference)
        return None
    captured = len(recorder.launches)
    verifier = None
    from .verify.evidence.isolated import EarlyPlayer, run_evidence
    # On a GPU the evidence runs' player starts while the verifier runs (under the interpreter its fork is cheap and
    # the two cores are the verifier's).
    early = EarlyPlayer(job, connect, "cuda") if job.verify and not interpreted and wants_evidence(job) else None
    try:
        if job.verify:
            from .verify.verifier import verify_problem
            verifier = verify_problem(problem, player, rep, job, captured_output,
                                      (lambda: compile_stage(rep, player, targets, captured_specs)) if verify_first
                                      else None)
        report_unexercised(rep, job, recorder, captured, interpreted)
        if verifier is not None:
            report_unreached_launches(rep, job, recorder, captured)
            say_verdict(w, job, rep, interpreted)
        if verifier is not None and gathers_evidence(job, rep):
            # Where the verifier said the interpreter cannot compute a kernel faithfully, neither can the player. The
            # TF32 advice (KL210 too) says nothing of the kind: an implementation could provoke it at will.
            values = not any(f.code == "KL210" and f.data.get("values_judged") is False for f in rep.sent)
            gpu_lease.let_timing_in(_paused(w, "evidence"))
            run_evidence(problem, job, rep, connect, "cpu" if interpreted else "cuda",
                         dict(verifier.base) if interpreted else {}, values,
                         dict(verifier.sizes.base) if interpreted and getattr(verifier, "sizes", None) else {},
                         early, verifier.sign_free)
    finally:
        if early is not None:
            early.discard()  # no evidence runs (a failed verification): its player ends before anything is timed
    return problem


def _paused(w: Sink, stage: str) -> Callable[[], Callable[[], None]]:
    """What a verification says when it gives the GPU up to a timing before its next stage (gpu_lease.let_timing_in),
    and once the wait has ended (Sink.wait)."""
    return lambda: w.wait(stage, "waiting for the GPU: another check is timing on it")


def say_verdict(w: Sink, job: CheckJob, rep: Reporter, interpreted: bool) -> None:
    """The verification's verdict as its own stage ("verdict"), the first verdict a front end can show (the language
    server's status), before the evidence runs and the timing: whether any variant failed (those findings went out
    as previews when found; the final report carries them with every variant), and what follows."""
    failed = len(problems(rep.sent))
    follows = [name for name, on in (("the evidence runs", gathers_evidence(job, rep)),
                                     ("the timing", job.measure.enabled and not interpreted)) if on]
    verdict = f"{failed} finding(s) of warning or error" if failed else "no variant found a wrong result"
    then = f"; {' and '.join(follows)} follow{'s' if follows == ['the timing'] else ''}" if follows else ""
    w.stage("verdict", verdict + then)


def wants_evidence(job: CheckJob) -> bool:
    """The job asks for the evidence runs (they follow a verification that passes: gathers_evidence)."""
    return job.rerun.enabled and job.measure.against is None


def gathers_evidence(job: CheckJob, rep: Reporter) -> bool:
    """The evidence runs follow a verification that passed: no error and no warning so far (any warning fails the
    file already, and one such as KL210 says the verifier could not run the kernel, so neither could they)."""
    return wants_evidence(job) and lets_evidence_run(rep.sent)


def report_unexercised(rep: Reporter, job: CheckJob, recorder: RemoteRecorder, captured: int,
                       interpreted: bool) -> None:
    """KL104 for each kernel that verification did not run: never launched (a warning when no kernel ran at
    all), or launched only on a path the verification's inputs do not take (information: it is unverified).
    `captured`: how many of the recorder's launches came from the run on the problem's own inputs."""
    def names(launches) -> set[str]:
        return {n for l in launches for n in (l.spec.qualname, l.spec.name)}
    on_own, later = names(recorder.launches[:captured]), names(recorder.launches[captured:])
    instead = ", ".join(sorted({l.spec.name for l in recorder.launches[captured:]}))
    for k in job.kernels:
        if k.is_helper or k.qualname in later or k.name in later:
            continue
        if k.qualname in on_own or k.name in on_own:
            if job.verify and later:
                where = (" (the CPU interpreter verifies at smaller sizes; check it with --device cuda)"
                         if interpreted else "")
                rep.add("KL104", f"kernel {k.name} ran on the problem's own inputs, but none of the verification's "
                        f"inputs took its path ({instead} ran instead): it is not verified{where}", k.name_span,
                        source="kernel-lsp.verify", severity=Severity.INFO, kernel=k.qualname)
        elif recorder.launches:  # another kernel ran: this one is a path the linked inputs do not take
            rep.add("KL104", f"kernel {k.name} is not exercised by the linked inputs (another kernel ran): it "
                    "is not verified", k.name_span, source="kernel-lsp.compile", severity=Severity.INFO,
                    kernel=k.qualname)
        else:
            rep.add("KL104", f"kernel {k.name} is defined but the linked code never launches it",
                    k.name_span, source="kernel-lsp.compile", kernel=k.qualname)


def report_unreached_launches(rep: Reporter, job: CheckJob, recorder: RemoteRecorder, captured: int) -> None:
    """KL104 (information) for each launch site of a kernel that ran, where no launch of the verification came from
    that site: a path of the launcher (an `if` on sizes, strides or dtypes choosing other grids, blocks or
    arguments) that the inputs never took, so what it launches with is not verified. A kernel that never ran at
    all is report_unexercised's. `captured`: how many launches came from the run on the problem's own inputs."""
    def lines(launches) -> dict[str, set[int]]:
        out: dict[str, set[int]] = {}
        for launch in launches:
            if launch.line is not None:
                out.setdefault(launch.qualname, set()).add(launch.line)
        return out
    on_own, later = lines(recorder.launches[:captured]), lines(recorder.launches[captured:])
    for k in job.kernels:
        ran = later.get(k.qualname, set())
        if k.is_helper or not ran or len(k.launches) < 2:
            continue  # one site: it ran, or the kernel did not (KL104 of its own)
        for span in k.launches:
            last = span.end_line if span.end_line is not None else span.line
            if any(span.line <= line <= last for line in ran):
                continue
            own = any(span.line <= line <= last for line in on_own.get(k.qualname, set()))
            rep.add("KL104", f"this launch of {k.name} ran "
                    + ("on the problem's own inputs but in no verification variant" if own else "in no variant")
                    + ": the launcher's path to it (a branch on sizes, strides or dtypes?) was never taken by the "
                    "verification's inputs, so what it launches with is not verified",
                    span, source="kernel-lsp.verify",
                    severity=Severity.INFO, kernel=k.qualname)


def measure_stage(problem: Problem, player: Player, rep: Reporter, job: CheckJob, interpreted: bool) -> None:
    """Time the implementation, only on a GPU and only once it is verified; otherwise say why not."""
    recorder = player.recorder
    launched = sorted({launch.spec.qualname.rsplit(".", 1)[-1] for launch in recorder.launches})
    if interpreted:
        note = "not measured: no GPU (kernels ran in the CPU interpreter); use a CUDA machine or a runner"
    elif not job.verify:
        note = "not measured: verification is off, and an unverified kernel is never timed"
    else:
        note = rep.unverified_because()
        note = f"not measured: the kernel is not verified ({note})" if note else None
    if note is not None:
        for name in launched:
            rep.w.kernel(name, KernelFacts(performance_note=note))
        return
    from .measure.stage import measure_problem
    measure_problem(problem, player, rep, job)
