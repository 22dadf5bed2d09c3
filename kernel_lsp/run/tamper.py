"""Did a job's code change the process a long-lived worker keeps for the next job? Worker side.

A long-lived GPU worker runs every job's code in one process. Code that replaces a function of torch, Triton or the
clock there (`torch.cuda.Event.elapsed_time`, `torch.allclose`, `time.perf_counter`) would still be in place for the
next file, which it could make pass or look fast. `Snapshot` records what those functions are before the first job;
`changed()` after each job lists the ones that are no longer the same objects, and the worker then retires
(serve.py), so the next job starts in a fresh process. The list is what a verdict or a timing rests on, not every
attribute (torch.compile itself sets some of those as it warms up).
"""

from __future__ import annotations

import sys

WATCHED = {
    "time": ["perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns", "sleep"],
    "builtins": ["open", "__import__", "isinstance", "len", "abs", "max", "min", "sum"],
    "torch": ["allclose", "isclose", "equal", "manual_seed", "empty", "empty_like", "empty_strided", "zeros",
              "zeros_like", "ones", "ones_like", "full", "randn", "rand", "randint", "randn_like", "rand_like",
              "abs", "isnan", "isinf", "isfinite", "where", "sum", "max", "min", "maximum", "minimum", "compile",
              "as_strided", "cat", "stack", "from_numpy", "tensor"],
    "torch.cuda": ["synchronize", "current_stream", "default_stream", "Event", "Stream", "_sleep",
                   "mem_get_info", "is_available", "current_device", "get_device_properties"],
    "torch._C": ["_cuda_synchronize"],
    "torch.testing": ["assert_close"],
    "triton.testing": ["do_bench", "do_bench_cudagraph"],
    "json": ["dumps", "loads"],
    "os": ["_exit"],
    "kernel_lsp.checker.verify.rules": ["judge", "judge_random", "same"],
    "kernel_lsp.checker.verify.verifier": ["judge", "judge_random", "same"],
}
CLASSES = {
    "torch.Tensor": ["__eq__", "__ne__", "equal", "clone", "copy_", "to", "item", "tolist", "__getitem__",
                     "__setitem__", "sum", "abs", "double", "float", "cpu", "cuda", "contiguous", "fill_", "zero_"],
    "torch.cuda.Event": ["record", "elapsed_time", "synchronize", "query", "wait"],
    "triton.runtime.jit.JITFunction": ["run", "__getitem__"],
    # kernel-lsp's own channel and judges, in the process that runs the checked code: code that drops the findings
    # on their way out, or passes every comparison, replaces one of these.
    "kernel_lsp.jobs.Sink": ["stage", "finding", "preview", "kernel", "stat"],
    "kernel_lsp.run.protocol.EventWriter": ["emit"],
    "kernel_lsp.run.serve.StreamSink": ["emit"],
    "kernel_lsp.checker.pipeline.Reporter": ["add", "preview"],
    "kernel_lsp.checker.pipeline.StageTracker": ["emit"],
}


def _resolve(dotted: str):
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:cut]))
        if module is not None:
            obj = module
            for name in parts[cut:]:
                obj = getattr(obj, name, None)
                if obj is None:
                    return None
            return obj
    return None


def _current() -> dict[str, int]:
    out = {}
    for where, names in {**WATCHED, **CLASSES}.items():
        obj = _resolve(where)
        if obj is None:
            continue
        space = vars(obj)
        for name in names:
            if name in space:
                out[f"{where}.{name}"] = id(space[name])
            elif where in WATCHED and hasattr(obj, name):
                out[f"{where}.{name}"] = id(getattr(obj, name))
    return out


class Snapshot:
    def __init__(self) -> None:
        self.ids = _current()

    def changed(self) -> list[str]:
        """"torch.allclose", ...: the watched functions that are no longer the objects they were."""
        now = _current()
        return [name for name, ident in self.ids.items() if now.get(name) != ident]


def finding_for(replaced: list[str], path: str, anchor):
    """KL223 for a job whose code replaced watched functions, or None."""
    if not replaced:
        return None
    from ..codes import severity_of
    from ..model import Finding
    shown = ", ".join(replaced[:6]) + (f" and {len(replaced) - 6} more" if len(replaced) > 6 else "")
    return Finding(path, anchor, severity_of("KL223"), "KL223",
                   f"the checked code replaced {shown}: functions that verdicts and timings rest on (a kernel never "
                   "needs to); kernel-lsp's own clocks and comparisons are the originals, and a long-lived worker "
                   "retires after this job", source="kernel-lsp.worker")


class TimerCheck:
    """Do the GPU's events still tell time? Calibrated before any job (a sleep kernel of about 2 ms, on the events
    and the host clock), checked after each: code that patched the CUDA runtime below Python (its GOT entries for
    cudaEventElapsedTime, say) would make every later job's timings lie."""

    def __init__(self) -> None:
        import torch
        self.torch = torch
        self.cycles = 1 << 22
        torch.cuda._sleep(1 << 10)
        self.us = self._events_us()

    def _events_us(self) -> float:
        torch = self.torch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        torch.cuda._sleep(self.cycles)
        end.record()
        torch.cuda.synchronize()
        return torch._C._CudaEventBase.elapsed_time(start, end) * 1e3

    def broken(self) -> bool:
        try:
            return self._events_us() < 0.5 * self.us
        except Exception:
            return True
