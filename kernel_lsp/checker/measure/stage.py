"""The measure stage: time a verified implementation against PyTorch eager and torch.compile of its reference,
on a GPU, and say where it stands. Runs in a worker, after verification, never on an unverified kernel.

Steps (docs/performance-method.md says why each is there):
1. inputs at the problem's own sizes (seed 1), one copy per side, and pristine copies kept aside;
2. baselines (registered in baselines.py): the reference as written (eager), and torch.compile of it (default mode),
   compiled once per reference content in this worker (compiled.py) with the first call's time reported apart;
3. an empty Triton launch, timed the same way: the floor any call pays, and the host-minus-events gap
   of a call that launches nothing elsewhere;
4. under the GPU's lease (gpu_lease.py: one process times per GPU, across processes; waiting shows as progress):
   the sides interleaved (timing.time_sides: GPU time, the host's launch hidden), cold L2 unless configured hot;
   the host clock replaces the events for a side whose work escaped the stream (KL406); then each side back to
   back (timing.time_back_to_back: the time a plain loop that calls it pays, host launch included), and its host
   issue time; another process busy on the GPU meanwhile (neighbours.py) makes the stage time again once, then
   say so (KL408, information);
5. the implementation's last timed output checked against the float64 truth (KL405);
6. CUDA-graph replay of every side when the call is short enough to be launch-bound;
7. the verdicts on the time `measure.time` picks (wall: back to back, the default; gpu), the other shown beside
   it; a side whose host issue time exceeds its GPU time is launch-bound (KL404);
8. the roofline from the reference's bytes and FLOPs against the device's measured ceilings (ceilings.py), on the
   GPU time, and the impossible-speed rule (KL403); the rest is perf_rules.judge (KL400, KL401, KL402).

The sides and their timing are in sides.py, what is reported of them in report.py.
"""

from __future__ import annotations

import contextlib
import time

from ...jobs import CheckJob
from ...model import Measurement, Provenance
from . import baselines, perf_rules
from .compiled import compiler_imported
from ..verify.compare import compare_tensor, flatten_outputs
from ..verify.probes import reference_spread
from ..problem.errors import is_device_fault
from .report import (_driver, _gpu_name, _reference_work, _report_measurement, _report_wrong_timed_output,
                     _side_timings, _sm_clock_mhz, _triton_version)
from .roofline import impossible, roofline, tensors_of
from .sides import (RemoteSide, SplitClock, _add_baselines, _gpu_lease, _graph_replays, _honest_side_times,
                    _sides_to_time, _time_empty_launch, _time_sides_undisturbed)
from .stats import median
from .timing import CudaClock
from ..verify.plan.variants import absolute, clone_inputs, upcast

INPUT_SEED = 1  # the seed of the inputs every side is timed on (the compile warmer compiles on the same)
COPIES = 4  # input copies per side, at different addresses, rotated through (memory permitting)


def _copies(pristine: list, sides: int) -> int:
    """How many input copies per side: COPIES, or fewer when they would take over a quarter of free GPU memory."""
    import torch
    if not torch.cuda.is_available():
        return 2
    per_copy = sum(t.numel() * t.element_size() for t in tensors_of(pristine))
    free, _ = torch.cuda.mem_get_info()
    return max(1, min(COPIES, int(0.25 * free) // max(1, per_copy * sides)))


def _judged_against(problem, ref, inputs: list) -> tuple:
    """(the reference's result, its float64 truth, the budget's parts) for `inputs`: what _outputs_ok judges by. The
    truth falls back to the reference's own result where the reference cannot run in float64, and the budget's
    parts are the float64 reference on absolute inputs (None where it cannot run) and, without a float64 truth, how
    far the reference moves when its inputs move by an ulp (probes.reference_spread): the verifier's budget
    (compare.py), so the check is the same rule."""
    r = ref(*clone_inputs(inputs))
    spread = None
    try:
        truth = problem.float64(ref)(*upcast(clone_inputs(inputs)))
    except Exception:
        truth = r
        try:
            spread = reference_spread(ref, inputs, flatten_outputs(r), [])
        except Exception as e:
            if is_device_fault(e):
                raise
    try:
        abs_terms = problem.float64(ref, absolute=True)(*absolute(upcast(clone_inputs(inputs))))
    except Exception:
        abs_terms = None
    return r, truth, (abs_terms, spread)


def _outputs_ok(got, truth, reference, budget) -> str | None:
    """None when every output of a timed call is within the verifier's budget (`budget`: _judged_against's parts),
    else the first problem."""
    import torch
    abs_terms, spread = budget
    got, truth, reference = flatten_outputs(got), flatten_outputs(truth), flatten_outputs(reference)
    abs_terms = flatten_outputs(abs_terms) if abs_terms is not None else [None] * len(reference)
    spread = spread if spread is not None and len(spread) == len(reference) else [None] * len(reference)
    if len(got) != len(reference):
        return f"{len(got)} outputs where the reference has {len(reference)}"
    for j, (y, t, r, a, sp) in enumerate(zip(got, truth, reference, abs_terms, spread)):
        if not isinstance(r, torch.Tensor):
            continue
        a = a if isinstance(a, torch.Tensor) and a.is_floating_point() else None
        c = compare_tensor(y, r, t if isinstance(t, torch.Tensor) else r, f"output {j}" if j else "output", None, a,
                           spread=sp)
        if not c.ok:
            return c.message
    return None


def _refilled_ok(problem, ref, remote: RemoteSide, copy: int, pristine: list) -> str | None:
    """The timed buffers refilled in place with new values, then one more call: None when its outputs are right for
    the values it was called on. A result replayed once an address repeats (a warmed-up loop) is right on the inputs
    it was timed on, and would be timed at the speed of its copy; here it is stale. Only where every input can be
    refilled as it is (tensors of the same shape and dtype, not broadcast views; other arguments equal), and the
    truth comes from a copy of what the call was given; anything else, or any error but a device fault, skips it."""
    import torch
    buffers = pristine  # the timed copies are clones of it: the same shapes, dtypes and strides
    fresh = problem.make_inputs(INPUT_SEED + 1)
    if len(fresh) != len(buffers):
        return None
    for x, f in zip(buffers, fresh):
        if isinstance(x, torch.Tensor):
            if (not isinstance(f, torch.Tensor) or x.shape != f.shape or x.dtype != f.dtype
                    or any(st == 0 for st, n in zip(x.stride(), x.shape) if n > 1)):
                return None
        elif type(x) not in (int, float, bool, str, type(None)) or x != f:
            return None
    try:
        answer = remote.ask("refill", copy=copy, values=fresh)
        r, truth, budget = _judged_against(problem, ref, answer["given"])
        text = _outputs_ok(answer["out"], truth, r, budget)
    except Exception as e:
        if is_device_fault(e):
            raise
        return None
    return None if text is None else f"after the timed buffers were refilled in place with new values, {text}"


def _same_inputs(a: list, b: list) -> bool:
    import torch
    return all(not isinstance(x, torch.Tensor) or torch.equal(x, y) for x, y in zip(a, b))


def measure_problem(problem, player, rep, job: CheckJob, clock=None, ceilings=None) -> Measurement | None:
    """Time the problem's implementation and its baselines; emit KL4xx findings and the kernels' measurement.

    `clock` and `ceilings` default to the GPU's (CudaClock, ceilings.load_or_measure); tests pass a HostClock and
    made-up ceilings to run the stage's plumbing on a CPU, where the product never measures.
    """
    import torch
    opts = job.measure
    recorder = player.recorder
    launched = sorted({launch.spec.qualname for launch in recorder.launches})
    where = rep.launch_span(recorder)
    rep.w.stage("measure", "inputs and baselines")
    compiler_imported()  # torch.compile's imports, started ahead (compiled.py): never beside a timing
    ref, impl = problem.callables()
    pristine = problem.make_inputs(INPUT_SEED)
    previous_grad = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    try:
        r, truth, budget = _judged_against(problem, ref, pristine)
        clock = SplitClock(clock or CudaClock(opts.cache), player)
        k = _copies(pristine, 1 + len(baselines.wanted(opts)) + int(opts.against is not None))
        sides, remote = _sides_to_time(problem, player, opts, impl, pristine, k)
        first_calls = _add_baselines(sides, rep, job, ref, pristine, k, clock, where)
        try:
            with _gpu_lease(rep, job, torch) as lease_note:
                empty, overhead, tail_overhead = _time_empty_launch(rep, clock)
                rep.w.stage("measure", f"{', '.join(sides)} interleaved ({clock.cache} L2, {k} input copies)")
                samples, back, disturbed, started, problem_text = _time_sides_undisturbed(rep, player, sides, clock,
                                                                                          opts, lease_note)
                if samples is not None:
                    rep.w.stage("measure", "the L2 flush's own time")
                flush_us = clock.flush_us() if samples is not None else 0.0
                graphs = _graph_replays(rep, clock, sides, samples)
                held = clock.held_up(bool(disturbed)) + started  # the flush's and the graphs' quiet included
        except BaseException:
            if clock.player is not None:
                with contextlib.suppress(Exception):  # what is on its way out says more
                    clock.player.go()
            raise
        if clock.player is not None:
            clock.player.go()  # the player's processes run on
        times, timers = _honest_side_times(samples, back, overhead, tail_overhead, flush_us)
        # The timed outputs, once warmed up, must still be right.
        if samples is not None and not problem.random:
            rep.w.stage("measure", "the last timed output and a call on refilled buffers, judged")
            problem_text = _timed_output_wrong(problem, ref, impl, remote, samples["triton"].copy[-1], pristine,
                                               truth, r, budget)
        if problem_text is not None:
            _report_wrong_timed_output(rep, problem_text, where, launched)
            return None
        impl_median = median(times["triton"])  # GPU time: the roofline and the impossible-speed rule use it
        # The verdicts' time: back to back (what a loop that calls the side pays), unless measure.time says gpu or
        # the host clock replaced the events (escaped work: back-to-back events would not see it either).
        verdict = opts.time if "host clock" not in timers else "gpu"
        timings, speedups = _side_timings(sides, times, samples, back, graphs, verdict, first_calls)
        impl_timing = timings[0]
        provenance = Provenance(_gpu_name(), _sm_clock_mhz(), _driver(), torch.__version__,
                                _triton_version(), clock.cache, bool(graphs),
                                "host clock" if "host clock" in timers else "cuda events", time.strftime("%Y-%m-%d"),
                                verdict_time=verdict, gpu_index=lease_note.get("index"),
                                waited_s=lease_note.get("waited"))
        m = Measurement(timings, speedups, provenance, empty_launch_us=round(median(empty.event_us), 3),
                        launch_bound=any(perf_rules.side_launch_bound(t) for t in timings),
                        disturbed="; ".join(n.describe() for n in disturbed) or None,
                        held_up="; ".join(held) or None)
        # The roofline, from the reference's work.
        rep.w.stage("measure", "roofline")
        if ceilings is None:
            from .ceilings import load_or_measure
            ceilings, _ = load_or_measure()
        nbytes, bytes_source, flops, flops_source, dtype = _reference_work(opts, problem.input_module, ref,
                                                                           pristine, r)
        m.device = ceilings
        m.roofline = roofline(int(nbytes), bytes_source, flops, flops_source, impl_median, dtype, ceilings)
        reason = (impossible(m.roofline, impl_timing.gpu_high_us or impl_timing.high_us, dtype, ceilings, clock.cache)
                  if m.roofline else None)
        m.summary = perf_rules.summary(m)
        _report_measurement(rep, m, reason, opts.compile_severity, where, launched)
        return m
    finally:
        torch.set_grad_enabled(previous_grad)


def _timed_output_wrong(problem, ref, impl, remote: RemoteSide, copy: int, pristine: list, truth, r,
                        budget) -> str | None:
    """What is wrong with the implementation's output once warmed up, None when nothing is: its last timed output
    (or, where the timed calls changed their inputs, a call on fresh ones) against the truth, then its output on
    refilled inputs."""
    last = remote.ask("output", copy=copy)
    if _same_inputs(last["args"], pristine):
        problem_text = _outputs_ok(last["out"], truth, r, budget)
    else:
        problem_text = _outputs_ok(impl(*clone_inputs(pristine)), truth, r, budget)
    if problem_text is None:
        problem_text = _refilled_ok(problem, ref, remote, copy, pristine)
    return problem_text
