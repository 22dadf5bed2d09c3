"""The measure stage: time a verified implementation against PyTorch eager and torch.compile of its reference,
on a GPU, and say where it stands. Runs in a worker, after verification, never on an unverified kernel.

Steps (docs/performance-method.md says why each is there):
1. inputs at the problem's own sizes (seed 1), one copy per side, and pristine copies kept aside;
2. baselines: the reference as written (eager), and torch.compile of it (default mode), compiled once per
   reference content in this worker (`_COMPILED`) with the first call's time reported apart;
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
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from pathlib import Path
from typing import Any

from ...jobs import CheckJob
from ...model import KernelFacts, Measurement, Provenance, Severity, SideTiming, Speedup
from . import neighbours, perf_rules
from ..verify.compare import compare_tensor, flatten_outputs
from ..problem.errors import is_device_fault
from .roofline import count_flops, dtype_name, impossible, minimal_bytes, resolve_declared, roofline, tensors_of
from .stats import median, median_interval, ratio_of_medians
from .timing import BackToBack, CudaClock, honest_times, time_back_to_back, time_graph, time_sides, empty_launch
from ..verify.plan.variants import absolute, clone_inputs, upcast

SOURCE = "kernel-lsp.measure"
GRAPH_BELOW_US = 40.0  # calls shorter than this are also replayed as CUDA graphs, to tell launch overhead apart
WARM_WAIT_S = 60.0  # the longest the stage waits for a compile warmer before compiling beside it
INPUT_SEED = 1  # the seed of the inputs every side is timed on (the compile warmer compiles on the same)
COPIES = 4  # input copies per side, at different addresses, rotated through (memory permitting)
_COMPILED: dict[str, tuple[Any, float]] = {}  # reference content -> (torch.compile'd reference, first call seconds)


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


def compiled_reference(ref, key: str, example: list, clock, warm_lock: str | None = None,
                       on_wait=None) -> tuple[Any, float, bool]:
    """(torch.compile of the reference, seconds its first call took, whether it came from this worker's cache).
    With `warm_lock`, a compile warmer (run/compile_warmer.py) is filling Inductor's caches for this reference:
    wait for it to end first (on_wait() is called before waiting)."""
    import torch
    if key in _COMPILED:
        compiled, seconds = _COMPILED[key]
        return compiled, seconds, True
    if warm_lock and on_wait is not None:
        on_wait()
    wait_for_lock(warm_lock, WARM_WAIT_S)
    compiled = torch.compile(ref)
    clock.sync()
    t0 = time.perf_counter()
    compiled(*example)
    clock.sync()
    seconds = time.perf_counter() - t0
    _COMPILED[key] = (compiled, seconds)
    return compiled, seconds, False


def wait_for_lock(lock_path: str | None, timeout: float) -> float:
    """Block until the compile warmer holding `lock_path` has ended, at most `timeout` seconds; the seconds waited.
    Returns at once when there is no warmer or its lock file cannot be opened (a worker on another machine)."""
    if not lock_path:
        return 0.0
    import fcntl
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except OSError:
        return 0.0
    start_at = time.monotonic()
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
                break
            except BlockingIOError:
                if time.monotonic() - start_at >= timeout:
                    break
                time.sleep(0.02)
    finally:
        os.close(fd)
    return time.monotonic() - start_at


def _first_float_dtype(tensors: list) -> str:
    for t in tensors:
        if t.is_floating_point():
            return dtype_name(t.dtype)
    return dtype_name(tensors[0].dtype) if tensors else "float32"


def _gpu_name() -> str:
    import torch
    return torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU (host clock, tests only)"


def _sm_clock_mhz() -> int | None:
    try:
        import pynvml
        import torch
        if not torch.cuda.is_available():
            return None
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        return int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
    except Exception:
        return None


def _timing(name: str, gpu: list[float], gpu_groups: list[int], wall: list[float] | None, wall_groups: list[int],
            issue: list[float] | None, verdict: str, graph: list[float] | None = None) -> SideTiming:
    g = median_interval(gpu, groups=gpu_groups)
    w = median_interval(wall, groups=wall_groups) if wall else None
    chosen, n = (w, len(wall)) if verdict == "wall" and w is not None else (g, len(gpu))
    return SideTiming(name, round(chosen.estimate, 3), round(chosen.low, 3), round(chosen.high, 3), n,
                      round(median(graph), 3) if graph else None,
                      gpu_us=round(g.estimate, 3), gpu_low_us=round(g.low, 3), gpu_high_us=round(g.high, 3),
                      wall_us=round(w.estimate, 3) if w else None, wall_low_us=round(w.low, 3) if w else None,
                      wall_high_us=round(w.high, 3) if w else None,
                      host_us=round(median(issue), 3) if issue else None)


def _speedup(against: str, base: list[float], base_groups: list[int], impl: list[float],
             impl_groups: list[int]) -> Speedup:
    ci = ratio_of_medians(base, impl, numerator_groups=base_groups, denominator_groups=impl_groups)
    return Speedup(against, round(ci.estimate, 4), round(ci.low, 4), round(ci.high, 4))


def _copies(pristine: list, sides: int) -> int:
    """How many input copies per side: COPIES, or fewer when they would take over a quarter of free GPU memory."""
    import torch
    if not torch.cuda.is_available():
        return 2
    per_copy = sum(t.numel() * t.element_size() for t in tensors_of(pristine))
    free, _ = torch.cuda.mem_get_info()
    return max(1, min(COPIES, int(0.25 * free) // max(1, per_copy * sides)))


def _judged_against(problem, ref, inputs: list) -> tuple:
    """(the reference's result, its float64 truth, the float64 reference on absolute inputs) for `inputs`: what
    _outputs_ok judges by. The truth falls back to the reference's own result, the last to None, where the reference
    cannot run in float64. The accumulation floor is the verifier's budget's (compare.py), so the check is the same
    rule."""
    r = ref(*clone_inputs(inputs))
    try:
        truth = problem.float64(ref)(*upcast(clone_inputs(inputs)))
    except Exception:
        truth = r
    try:
        abs_terms = problem.float64(ref, absolute=True)(*absolute(upcast(clone_inputs(inputs))))
    except Exception:
        abs_terms = None
    return r, truth, abs_terms


def _outputs_ok(got, truth, reference, abs_terms) -> str | None:
    """None when every output of a timed call is within the verifier's budget, else the first problem."""
    import torch
    got, truth, reference = flatten_outputs(got), flatten_outputs(truth), flatten_outputs(reference)
    abs_terms = flatten_outputs(abs_terms) if abs_terms is not None else [None] * len(reference)
    if len(got) != len(reference):
        return f"{len(got)} outputs where the reference has {len(reference)}"
    for j, (y, t, r, a) in enumerate(zip(got, truth, reference, abs_terms)):
        if not isinstance(r, torch.Tensor):
            continue
        a = a if isinstance(a, torch.Tensor) and a.is_floating_point() else None
        c = compare_tensor(y, r, t if isinstance(t, torch.Tensor) else r, f"output {j}" if j else "output", None, a)
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
        r, truth, abs_terms = _judged_against(problem, ref, answer["given"])
        text = _outputs_ok(answer["out"], truth, r, abs_terms)
    except Exception as e:
        if is_device_fault(e):
            raise
        return None
    return None if text is None else f"after the timed buffers were refilled in place with new values, {text}"


def _same_inputs(a: list, b: list) -> bool:
    import torch
    return all(not isinstance(x, torch.Tensor) or torch.equal(x, y) for x, y in zip(a, b))


class RemoteSide:
    """A side timed in the player (player/timed.py): the implementation (or another version of it, built there), its
    input copies sent once; its calls are `RemoteCall`s, which `SplitClock` times there."""

    def __init__(self, player, impl, copies: list, cache: str):
        self.player, self.impl = player, impl
        answer = player.time({"do": "setup", "model": impl.id, "copies": copies, "cache": cache})
        if answer.get("error"):
            raise _remote(answer["error"])
        self.calls = [RemoteCall(self, i) for i in range(len(copies))]

    def ask(self, do: str, **more) -> dict:
        answer = self.player.time({"do": do, "model": self.impl.id, **more})
        if answer.get("error"):
            raise _remote(answer["error"])
        return answer


def _remote(info: dict):
    from ..player import remote_error
    return remote_error(info)


class RemoteCall:
    """Copy `copy` of a remote side: called plainly (a warm-up), or timed by `SplitClock`."""

    def __init__(self, side: RemoteSide, copy: int):
        self.side, self.copy = side, copy

    def __call__(self):
        self.side.ask("call", copy=self.copy)


class SplitClock:
    """The clock of the sides this process times (eager, torch.compile), and the player's for a remote side: one
    timed call, a back-to-back batch and a graph replay each run in the process that holds the side, by the same
    clock code (player/clock.py), while the other process waits on the wire."""

    def __init__(self, local):
        self.local, self.cache, self.l2_bytes = local, local.cache, getattr(local, "l2_bytes", 0)
        self.last_tail_us = 0.0

    def time(self, fn):
        if isinstance(fn, RemoteCall):
            r = fn.side.ask("once", copy=fn.copy)
            self.last_tail_us = float(r.get("tail_us") or 0.0)
            return float(r["event_us"]), float(r["host_us"]), None
        out = self.local.time(fn)
        self.last_tail_us = getattr(self.local, "last_tail_us", 0.0)
        return out

    def back_to_back(self, fns, calls: int) -> BackToBack:
        if isinstance(fns[0], RemoteCall):
            return BackToBack(**fns[0].side.ask("b2b", calls=calls)["b2b"])
        return self.local.back_to_back(fns, calls)

    def graph(self, fn) -> list[float] | None:
        if isinstance(fn, RemoteCall):
            return fn.side.ask("graph").get("graph")
        return time_graph(fn, self.local)

    def flush_us(self) -> float:
        return self.local.flush_us()

    def sync(self) -> None:
        self.local.sync()


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
    ref, impl = problem.callables()
    pristine = problem.make_inputs(INPUT_SEED)
    previous_grad = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    try:
        r, truth, abs_terms = _judged_against(problem, ref, pristine)
        clock = SplitClock(clock or CudaClock(opts.cache))
        k = _copies(pristine, 2 + int(opts.compile) + int(opts.against is not None))
        sides, remote = _sides_to_time(problem, player, opts, ref, impl, pristine, k)
        compile_info = _add_compiled_side(sides, rep, job, ref, pristine, k, clock, where) if opts.compile else None
        with _gpu_lease(rep, job, torch) as lease_note:
            empty, overhead, tail_overhead = _time_empty_launch(rep, clock)
            rep.w.stage("measure", f"{', '.join(sides)} interleaved ({clock.cache} L2, {k} input copies)")
            samples, back, disturbed, problem_text = _time_sides_undisturbed(rep, player, sides, clock, opts,
                                                                             lease_note)
            flush_us = clock.flush_us() if samples is not None else 0.0
            graphs = _graph_replays(rep, clock, sides, samples)
        times, timers = _honest_side_times(samples, back, overhead, tail_overhead, flush_us)
        # The timed outputs, once warmed up, must still be right.
        if samples is not None and not problem.random:
            problem_text = _timed_output_wrong(problem, ref, impl, remote, samples["triton"].copy[-1], pristine,
                                               truth, r, abs_terms)
        if problem_text is not None:
            _report_wrong_timed_output(rep, problem_text, where, launched)
            return None
        impl_median = median(times["triton"])  # GPU time: the roofline and the impossible-speed rule use it
        # The verdicts' time: back to back (what a loop that calls the side pays), unless measure.time says gpu or
        # the host clock replaced the events (escaped work: back-to-back events would not see it either).
        verdict = opts.time if "host clock" not in timers else "gpu"
        timings, speedups = _side_timings(sides, times, samples, back, graphs, verdict, compile_info)
        impl_timing = timings[0]
        provenance = Provenance(_gpu_name(), _sm_clock_mhz(), _driver(), torch.__version__,
                                _triton_version(), clock.cache, bool(graphs),
                                "host clock" if "host clock" in timers else "cuda events", time.strftime("%Y-%m-%d"),
                                verdict_time=verdict, gpu_index=lease_note.get("index"),
                                waited_s=lease_note.get("waited"))
        m = Measurement(timings, speedups, provenance, empty_launch_us=round(median(empty.event_us), 3),
                        launch_bound=any(perf_rules.side_launch_bound(t) for t in timings),
                        disturbed="; ".join(n.describe() for n in disturbed) or None)
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


def _sides_to_time(problem, player, opts, ref, impl, pristine: list, k: int) -> tuple[dict, RemoteSide]:
    """The sides to time, each k calls on copies of the inputs of their own: the implementation (its copies held
    by the player), PyTorch eager, and the other version of the implementation when measure.against names one.
    Returns them and the implementation's RemoteSide."""
    inputs = {name: [clone_inputs(pristine) for _ in range(k)] for name in ("triton", "eager")}
    remote = RemoteSide(player, impl, inputs.pop("triton"), opts.cache)  # the player holds them from here
    sides = {"triton": remote.calls, "eager": [lambda c=c: ref(*c) for c in inputs["eager"]]}
    if opts.against is not None and problem.build_other is not None:
        current = problem.build_other(opts.against)
        inputs["current"] = [clone_inputs(pristine) for _ in range(k)]
        sides["current"] = RemoteSide(player, current, inputs["current"], opts.cache).calls
    return sides, remote


def _add_compiled_side(sides: dict, rep, job: CheckJob, ref, pristine: list, k: int, clock,
                       where) -> tuple[float, bool] | None:
    """Add torch.compile of the reference to the sides, on k copies of the inputs of its own, and return its first
    call's seconds and whether the compile was cached; when the compile fails, say so (KL407) and return None."""
    opts = job.measure
    inputs = [clone_inputs(pristine) for _ in range(k)]
    try:
        compiled, seconds, cached = compiled_reference(
            ref, _reference_key(job, {}), inputs[0], clock.local, opts.warm_lock,
            lambda: rep.w.stage("measure", "waiting for the compile warmer"))
        sides["torch.compile"] = [lambda c=c: compiled(*c) for c in inputs]
        return (seconds, cached)
    except Exception as e:
        rep.add("KL407", f"torch.compile of the reference failed ({type(e).__name__}: "
                f"{str(e).splitlines()[0][:200] if str(e) else ''}); compared with eager only", where,
                source=SOURCE)
        return None


def _time_empty_launch(rep, clock) -> tuple:
    """Time an empty Triton launch: the floor any call pays. Returns its timing, the median host-minus-events gap
    of a call that launches nothing, and the median of its tail."""
    rep.w.stage("measure", "an empty launch")
    empty = time_sides({"empty": empty_launch()}, clock.local, min_rounds=20, max_rounds=50,
                       budget_s=0.05)["empty"]
    overhead = median([h - e for h, e in zip(empty.host_us, empty.event_us)])
    tail_overhead = median(empty.tail_us) if empty.tail_us else 0.0
    return empty, overhead, tail_overhead


def _time_sides_undisturbed(rep, player, sides: dict, clock, opts, lease_note: dict) -> tuple:
    """Time the sides interleaved, then each back to back, and once more when another process used the GPU
    meanwhile. Returns the interleaved samples, the back-to-back timings, the processes that used the GPU, and
    None; when the implementation raises during the timed calls, None for the samples and what it raised instead
    (a device fault propagates)."""
    disturbed: list = []
    back: dict = {}
    try:
        for attempt in range(2):  # once more when another process used the GPU meanwhile
            mine = {os.getpid(), *player.host_pids()}  # the player times its side: not a neighbour
            watch = neighbours.start(lease_note.get("uuid"), mine)
            samples = time_sides(sides, clock, budget_s=opts.budget_s, precision=opts.precision)
            rep.w.stage("measure", "each side back to back (host launch included)")
            back = time_back_to_back(sides, clock)
            disturbed = neighbours.disturbers(watch, mine)
            if not disturbed:
                break
            rep.w.stage("measure", "timing again: another process used the GPU ("
                        + "; ".join(n.describe() for n in disturbed) + ")")
    except Exception as e:
        if is_device_fault(e):
            raise
        return None, back, disturbed, (f"the implementation raised during the timed calls: "
                                       f"{type(e).__name__}: {e}")
    return samples, back, disturbed, None


def _graph_replays(rep, clock, sides: dict, samples) -> dict[str, list[float] | None]:
    """Each side's CUDA-graph replay times when the implementation's call is short enough to be launch-bound (on a
    GPU, after timings that succeeded); otherwise none."""
    import torch
    graphs_needed = samples is not None and torch.cuda.is_available()
    graphs: dict[str, list[float] | None] = {}
    if graphs_needed and median(samples["triton"].event_us) < GRAPH_BELOW_US:
        rep.w.stage("measure", "CUDA graph replay")
        graphs = {name: clock.graph(fns[0]) for name, fns in sides.items()}
    return graphs


def _honest_side_times(samples, back: dict, overhead: float, tail_overhead: float, flush_us: float) -> tuple:
    """Each side's times with the empty launch's overhead taken off, and the timers they come from: the host clock
    replaces the events for a side whose events saw far less than the host did back to back."""
    times, timers = {}, set()
    for name, s in (samples or {}).items():
        times[name], timer = honest_times(s, overhead, tail_overhead)
        if name in back and back[name].events_under_report(flush_us):
            timer = "host clock"  # the events saw far less than the host: another stream, or a patched timer
            times[name] = [max(h - overhead, e) for h, e in zip(s.host_us, s.event_us)]
        timers.add(timer)
    return times, timers


def _timed_output_wrong(problem, ref, impl, remote: RemoteSide, copy: int, pristine: list, truth, r,
                        abs_terms) -> str | None:
    """What is wrong with the implementation's output once warmed up, None when nothing is: its last timed output
    (or, where the timed calls changed their inputs, a call on fresh ones) against the truth, then its output on
    refilled inputs."""
    last = remote.ask("output", copy=copy)
    if _same_inputs(last["args"], pristine):
        problem_text = _outputs_ok(last["out"], truth, r, abs_terms)
    else:
        problem_text = _outputs_ok(impl(*clone_inputs(pristine)), truth, r, abs_terms)
    if problem_text is None:
        problem_text = _refilled_ok(problem, ref, remote, copy, pristine)
    return problem_text


def _report_wrong_timed_output(rep, problem_text: str, where, launched: list[str]) -> None:
    """Say that the timed calls' output is wrong (KL405), and that each launched kernel is not measured."""
    rep.add("KL405", f"the output of the timed calls is wrong once warmed up: {problem_text[:600]}", where,
            source=SOURCE)
    for qual in launched:
        rep.w.kernel(qual.rsplit(".", 1)[-1], KernelFacts(
            performance_note="not measured: the output of the timed calls is wrong (KL405)"))


def _side_timings(sides: dict, times: dict, samples: dict, back: dict, graphs: dict, verdict: str,
                  compile_info: tuple[float, bool] | None) -> tuple[list[SideTiming], list[Speedup]]:
    """Each side's timing (GPU and back-to-back times, the verdict's time, graph replays, torch.compile's first
    call), and the implementation's speedup over each other side on the verdict's time."""
    wall = {name: (back[name].loop_us(), back[name].loop_groups()) if name in back else ([], []) for name in sides}
    timings = [_timing(name, times[name], samples[name].copy, wall[name][0], wall[name][1],
                       back[name].issue_us if name in back else None, verdict, graphs.get(name))
               for name in sides]
    if compile_info is not None:
        t = next(t for t in timings if t.side == "torch.compile")
        t.compile_seconds, t.cached_compile = round(compile_info[0], 3), compile_info[1]
    chosen = {name: wall[name] if verdict == "wall" and wall[name][0] else (times[name], samples[name].copy)
              for name in sides}
    speedups = [_speedup(name, chosen[name][0], chosen[name][1], chosen["triton"][0], chosen["triton"][1])
                for name in sides if name != "triton"]
    return timings, speedups


def _reference_work(opts, module, ref, pristine: list, r) -> tuple:
    """The reference's bytes and FLOPs, declared (measure.bytes, measure.flops) or else counted from its inputs,
    outputs and operations, each with where it comes from, and the first float dtype among them."""
    nbytes = resolve_declared(opts.bytes, module)
    flops = resolve_declared(opts.flops, module)
    bytes_source = "declared" if nbytes is not None else "inputs and outputs"
    flops_source = "declared" if flops is not None else "counted"
    if nbytes is None:
        nbytes = minimal_bytes(pristine, r, ref)
    if flops is None:
        flops = count_flops(ref, clone_inputs(pristine))
        flops_source = "counted" if flops else "none"
    dtype = _first_float_dtype(tensors_of(pristine) + tensors_of(r))
    return nbytes, bytes_source, flops, flops_source, dtype


def _report_measurement(rep, m: Measurement, reason, compile_severity, where, launched: list[str]) -> None:
    """Emit the performance findings (perf_rules.judge), each with the measurement as evidence, and the
    measurement as each launched kernel's facts."""
    evidence = {"provenance": m.provenance.to_dict(), "summary": m.summary,
                "sides": [s.to_dict() for s in m.sides], "speedups": [s.to_dict() for s in m.speedups]}
    for f in perf_rules.judge(m, reason, compile_severity):
        rep.add(f.code, f.message, where, source=SOURCE,
                severity={"warning": Severity.WARNING, "info": Severity.INFO}.get(f.severity or ""), **evidence)
    for qual in launched:
        rep.w.kernel(qual.rsplit(".", 1)[-1], KernelFacts(measurement=m))


@contextlib.contextmanager
def _gpu_lease(rep, job: CheckJob, torch):
    """Hold this GPU's timing lease (gpu_lease.py) around the timed calls; on a machine without CUDA (the stage's
    CPU tests) there is nothing to hold."""
    note: dict[str, Any] = {}  # the GPU's uuid and index, the seconds waited
    if not torch.cuda.is_available():
        yield note
        return
    from . import gpu_lease
    uuid, index = gpu_lease.gpu_identity()
    note.update(uuid=uuid, index=index)

    def waiting(holder: str) -> None:
        rep.w.stage("measure", f"waiting for GPU {index}: another check is timing" + (f" ({holder})" if holder else ""))
    with gpu_lease.lease(uuid, f"timing {os.path.basename(job.path)}", waiting) as waited:
        note["waited"] = round(waited, 3) if waited >= 0.05 else None
        yield note


def _driver() -> str:
    import torch
    if not torch.cuda.is_available():
        return "none"
    from .ceilings import device_identity
    return device_identity()[1]


def _triton_version() -> str:
    import triton
    return triton.__version__
