"""The measure stage: time a verified implementation against PyTorch eager and torch.compile of its reference,
on a GPU, and say where it stands. Runs in a worker, after verification, never on an unverified kernel.

Steps (docs/performance-method.md says why each is there):
1. inputs at the problem's own sizes (seed 1), one copy per side, and pristine copies kept aside;
2. baselines: the reference as written (eager), and torch.compile of it (default mode), compiled once per
   reference content in this worker (`_COMPILED`) with the first call's time reported apart;
3. an empty Triton launch, timed the same way: the floor any call pays, and the host-minus-events gap
   of a call that launches nothing elsewhere;
4. the sides interleaved (timing.time_sides), cold L2 unless configured hot; the host clock replaces the events
   for a side whose work escaped the stream (KL406);
5. the implementation's last timed output checked against the float64 truth (KL405);
6. CUDA-graph replay of every side when the call is short enough to be launch-bound (KL404);
7. the roofline from the reference's bytes and FLOPs against the device's measured ceilings (ceilings.py), and
   the impossible-speed rule (KL403); the rest is perf_rules.judge (KL400, KL401, KL402).
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Any

from ..jobs import CheckJob
from ..model import KernelFacts, Measurement, Provenance, Severity, SideTiming, Speedup
from . import perf_rules
from .compare import compare_tensor, flatten_outputs
from .loader import is_device_fault
from .roofline import count_flops, dtype_name, impossible, minimal_bytes, resolve_declared, roofline, tensors_of
from .stats import median, median_interval, ratio_of_medians
from .timing import CudaClock, honest_times, time_graph, time_sides, empty_launch
from .variants import absolute, clone_inputs, upcast

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
    With `warm_lock`, a compile warmer (worker/compile_warmer.py) is filling Inductor's caches for this reference:
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


def _timing(name: str, times: list[float], groups: list[int], graph: list[float] | None = None) -> SideTiming:
    ci = median_interval(times, groups=groups)
    return SideTiming(name, round(ci.estimate, 3), round(ci.low, 3), round(ci.high, 3), len(times),
                      round(median(graph), 3) if graph else None)


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


def _same_inputs(a: list, b: list) -> bool:
    import torch
    return all(not isinstance(x, torch.Tensor) or torch.equal(x, y) for x, y in zip(a, b))


def measure_problem(problem, recorder, rep, job: CheckJob, clock=None, ceilings=None) -> Measurement | None:
    """Time the problem's implementation and its baselines; emit KL4xx findings and the kernels' measurement.

    `clock` and `ceilings` default to the GPU's (CudaClock, ceilings.load_or_measure); tests pass a HostClock and
    made-up ceilings to run the stage's plumbing on a CPU, where the product never measures.
    """
    import torch
    opts = job.measure
    launched = sorted({launch.spec.qualname for launch in recorder.launches})
    where = rep.launch_span(recorder)
    rep.w.stage("measure", "inputs and baselines")
    ref, impl = problem.callables()
    pristine = problem.make_inputs(INPUT_SEED)
    previous_grad = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    try:
        r = ref(*clone_inputs(pristine))
        try:
            truth = problem.float64(ref)(*upcast(clone_inputs(pristine)))
        except Exception:
            truth = r
        try:  # the accumulation floor of the verifier's budget (compare.py), so the check below is the same rule
            abs_terms = problem.float64(ref, absolute=True)(*absolute(upcast(clone_inputs(pristine))))
        except Exception:
            abs_terms = None
        clock = clock or CudaClock(opts.cache)
        k = _copies(pristine, 2 + int(opts.compile) + int(opts.against is not None))
        inputs = {name: [clone_inputs(pristine) for _ in range(k)] for name in ("triton", "eager")}
        sides = {"triton": [lambda c=c: impl(*c) for c in inputs["triton"]],
                 "eager": [lambda c=c: ref(*c) for c in inputs["eager"]]}
        if opts.against is not None and problem.build_other is not None:
            current = problem.build_other(opts.against)
            inputs["current"] = [clone_inputs(pristine) for _ in range(k)]
            sides["current"] = [lambda c=c: current(*c) for c in inputs["current"]]
        compile_info: tuple[float, bool] | None = None
        if opts.compile:
            inputs["torch.compile"] = [clone_inputs(pristine) for _ in range(k)]
            try:
                compiled, seconds, cached = compiled_reference(
                    ref, _reference_key(job, {}), inputs["torch.compile"][0], clock, opts.warm_lock,
                    lambda: rep.w.stage("measure", "waiting for the compile warmer"))
                sides["torch.compile"] = [lambda c=c: compiled(*c) for c in inputs["torch.compile"]]
                compile_info = (seconds, cached)
            except Exception as e:
                rep.add("KL407", f"torch.compile of the reference failed ({type(e).__name__}: "
                        f"{str(e).splitlines()[0][:200] if str(e) else ''}); compared with eager only", where,
                        source=SOURCE)
        rep.w.stage("measure", "an empty launch")
        empty = time_sides({"empty": empty_launch()}, clock, min_rounds=20, max_rounds=50, budget_s=0.05)["empty"]
        overhead = median([h - e for h, e in zip(empty.host_us, empty.event_us)])
        rep.w.stage("measure", f"{', '.join(sides)} interleaved ({clock.cache} L2, {k} input copies)")
        problem_text = None
        try:
            samples = time_sides(sides, clock, budget_s=opts.budget_s, precision=opts.precision)
        except Exception as e:
            if is_device_fault(e):
                raise
            samples, problem_text = None, f"the implementation raised during the timed calls: {type(e).__name__}: {e}"
        times, timers = {}, set()
        for name, s in (samples or {}).items():
            times[name], timer = honest_times(s, overhead)
            timers.add(timer)
        # The timed outputs, once warmed up, must still be right.
        if samples is None or problem.random:
            pass
        elif _same_inputs(inputs["triton"][samples["triton"].copy[-1]], pristine):
            problem_text = _outputs_ok(samples["triton"].last_output, truth, r, abs_terms)
        else:
            problem_text = _outputs_ok(impl(*clone_inputs(pristine)), truth, r, abs_terms)
        if problem_text is not None:
            rep.add("KL405", f"the output of the timed calls is wrong once warmed up: {problem_text[:600]}", where,
                    source=SOURCE)
            for qual in launched:
                rep.w.kernel(qual.rsplit(".", 1)[-1], KernelFacts(
                    performance_note="not measured: the output of the timed calls is wrong (KL405)"))
            return None
        impl_median = median(times["triton"])
        graphs: dict[str, list[float] | None] = {}
        if impl_median < GRAPH_BELOW_US and torch.cuda.is_available():
            rep.w.stage("measure", "CUDA graph replay")
            graphs = {name: time_graph(fns[0], clock) for name, fns in sides.items()}
        timings = [_timing(name, times[name], samples[name].copy, graphs.get(name)) for name in sides]
        if compile_info is not None:
            t = next(t for t in timings if t.side == "torch.compile")
            t.compile_seconds, t.cached_compile = round(compile_info[0], 3), compile_info[1]
        speedups = [_speedup(name, times[name], samples[name].copy, times["triton"], samples["triton"].copy)
                    for name in sides if name != "triton"]
        impl_timing = timings[0]
        provenance = Provenance(_gpu_name(), _sm_clock_mhz(), _driver(), torch.__version__,
                                _triton_version(), clock.cache, bool(graphs),
                                "host clock" if "host clock" in timers else "cuda events", time.strftime("%Y-%m-%d"))
        m = Measurement(timings, speedups, provenance, empty_launch_us=round(median(empty.event_us), 3),
                        launch_bound=bool(impl_timing.graph_us is not None and
                                          impl_timing.graph_us < perf_rules.LAUNCH_BOUND_GRAPH_FRACTION * impl_median))
        # The roofline, from the reference's work.
        rep.w.stage("measure", "roofline")
        if ceilings is None:
            from .ceilings import load_or_measure
            ceilings, _ = load_or_measure()
        module = problem.input_module
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
        m.device = ceilings
        m.roofline = roofline(int(nbytes), bytes_source, flops, flops_source, impl_median, dtype, ceilings)
        reason = impossible(m.roofline, impl_timing.high_us, dtype, ceilings, clock.cache) if m.roofline else None
        m.summary = perf_rules.summary(m)
        evidence = {"provenance": m.provenance.to_dict(), "summary": m.summary,
                    "sides": [s.to_dict() for s in m.sides], "speedups": [s.to_dict() for s in m.speedups]}
        for f in perf_rules.judge(m, reason, opts.compile_severity):
            rep.add(f.code, f.message, where, source=SOURCE,
                    severity=Severity.WARNING if f.severity == "warning" else None, **evidence)
        for qual in launched:
            rep.w.kernel(qual.rsplit(".", 1)[-1], KernelFacts(measurement=m))
        return m
    finally:
        torch.set_grad_enabled(previous_grad)


def _driver() -> str:
    import torch
    if not torch.cuda.is_available():
        return "none"
    from .ceilings import device_identity
    return device_identity()[1]


def _triton_version() -> str:
    import triton
    return triton.__version__
