"""The worker-side pipeline for one file: load, capture launches, compile for targets, verify.

Runs only inside a worker child (it imports torch and triton and executes user code). Every result leaves as
an event through the `EventWriter`, as soon as it is known, so a crash later loses nothing earlier.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from typing import Any

from ..codes import severity_of
from ..model import Finding, Severity, Span
from ..worker.protocol import EventWriter
from .capture import LaunchRecorder, Spec
from .compile import CompileResult, compile_spec, jit_function_for
from .loader import Problem, UserCodeError, load_problem
from .positions import map_compile_error, readable
from .targets import Target, parse_targets


class Reporter:
    """Builds findings for one file and sends them out at once."""

    def __init__(self, writer: EventWriter, path: str, kernels: list[dict[str, Any]], anchor: dict[str, int]):
        self.w, self.path, self.kernels = writer, path, kernels
        self.anchor = Span.from_dict(anchor)

    def kernel(self, qualname: str) -> dict[str, Any] | None:
        for k in self.kernels:
            if k["qualname"] == qualname:
                return k
        short = qualname.rsplit(".", 1)[-1]
        return next((k for k in self.kernels if k["name"] == short), None)

    def kernel_span(self, qualname: str) -> Span:
        k = self.kernel(qualname)
        return Span.from_dict(k["name_span"]) if k else self.anchor

    def add(self, code: str, message: str, span: Span | None = None, source: str = "kernel-lsp",
            severity=None, **data: Any) -> None:
        f = Finding(self.path, span or self.anchor, severity or severity_of(code), code, message, source, data)
        self.w.finding(f.to_dict())


@contextlib.contextmanager
def compile_mode(functions: list[Any]):
    """Make user functions compilable while the process runs under the interpreter.

    Under TRITON_INTERPRET=1 every `@triton.jit` function, Triton's own library (`tl.max`, `tl.sum`, ...)
    included, is an InterpretedFunction, which the code generator does not know. For the duration of the
    compile stage they are swapped for JITFunctions, in Triton's language modules and in the user's globals
    (followed through helpers), then restored for verification.
    """
    import sys as _sys

    import triton
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:
        InterpretedFunction = None
    swapped: list[tuple[dict, str, Any]] = []
    seen: set[int] = set()
    made: dict[int, Any] = {}

    def jit_of(value):
        if id(value) not in made:
            made[id(value)] = jit_function_for(value.fn, getattr(value, "kwargs", {}))
        return made[id(value)]

    def visit(namespace: dict | None):
        if namespace is None or id(namespace) in seen or InterpretedFunction is None:
            return
        seen.add(id(namespace))
        for name, value in list(namespace.items()):
            if isinstance(value, InterpretedFunction):
                swapped.append((namespace, name, value))
                namespace[name] = jit_of(value)
                visit(getattr(value.fn, "__globals__", None))

    for mod_name, mod in list(_sys.modules.items()):
        if mod_name.startswith("triton.language") and mod is not None:
            visit(getattr(mod, "__dict__", None))
    for fn in functions:
        visit(getattr(fn, "__globals__", None))
    previous = triton.knobs.runtime.interpret
    triton.knobs.runtime.interpret = False
    try:
        yield lambda fn: made.get(id(fn)) or jit_function_for(fn)
    finally:
        triton.knobs.runtime.interpret = previous
        for namespace, name, value in reversed(swapped):
            namespace[name] = value


def _kib(n: int) -> str:
    return f"{n / 1024:.1f} KiB"


def compile_stage(rep: Reporter, recorder: LaunchRecorder, targets: list[Target]) -> set[str]:
    """Compile every captured spec for every target; returns the kernels that failed to compile."""
    failed: set[str] = set()
    errors: dict[tuple, dict[str, Any]] = {}
    launched_keys = {l.spec.key() for l in recorder.launches}
    with compile_mode(list(recorder.functions.values())) as to_jit:
        _compile_all(rep, recorder, targets, failed, errors, launched_keys, to_jit)
    for (line, col, end_col, message), info in errors.items():
        rep.add("KL100", f"compile error ({', '.join(info['targets'])}): {message}",
                Span(line, col, line, end_col), source="kernel-lsp.compile",
                kernel=info["kernel"], targets=info["targets"], config=info["config"])
    return failed


def _compile_all(rep, recorder, targets, failed, errors, launched_keys, to_jit) -> None:
    for spec in recorder.specs.values():
        fn = recorder.functions[spec.qualname]
        kernel = rep.kernel(spec.qualname)
        facts = []
        for target in targets:
            rep.w.stage("compile", f"{spec.qualname} for {target.name} ({spec.describe()})")
            result = compile_spec(to_jit(fn), spec, target)
            rep.w.stat("compiles")
            if not result.ok:
                failed.add(spec.qualname)
                _collect_error(rep, errors, kernel, spec, target, result)
                continue
            facts.append(result.facts())
            _judge_resources(rep, spec, target, result, from_config_only=spec.key() not in launched_keys)
        rep.w.kernel(spec.qualname.rsplit(".", 1)[-1], compile=facts)


def _collect_error(rep, errors, kernel, spec: Spec, target: Target, result: CompileResult) -> None:
    if kernel is None:
        pos_key = (rep.anchor.line, rep.anchor.col, rep.anchor.col + 1, readable(str(result.error))[:500])
    else:
        pos = map_compile_error(result.error, kernel, rep.kernels)
        pos_key = (pos.line, pos.col, pos.end_col, pos.message[:2000])
    entry = errors.setdefault(pos_key, {"targets": [], "kernel": spec.qualname, "config": spec.describe()})
    if target.name not in entry["targets"]:
        entry["targets"].append(target.name)


def _judge_resources(rep: Reporter, spec: Spec, target: Target, r: CompileResult, from_config_only: bool) -> None:
    span = rep.kernel_span(spec.qualname)
    where = f"{spec.name} ({spec.describe()})"
    data = {"kernel": spec.qualname, "target": target.name, "config": spec.describe()}
    # An autotune config that does not fit is skipped by the autotuner at run time: advice, not an error.
    sev = Severity.ERROR if not from_config_only else Severity.INFO
    if r.shared > target.max_shared_per_block:
        tail = ("launching it there raises OutOfResources" if not from_config_only
                else "the autotuner will skip this config there")
        rep.add("KL101", f"{where} needs {_kib(r.shared)} of shared memory; {target.name} allows "
                f"{_kib(target.max_shared_per_block)} per block: {tail}", span, "kernel-lsp.compile", sev,
                shared=r.shared, limit=target.max_shared_per_block, **data)
    if r.registers is not None:
        threads = spec.num_warps * target.warp_size
        if r.registers * threads > target.registers_per_block:
            rep.add("KL103", f"{where} uses {r.registers} registers x {threads} threads = {r.registers * threads}, "
                    f"over {target.name}'s {target.registers_per_block} per block: the launch fails there",
                    span, "kernel-lsp.compile", None if not from_config_only else sev, registers=r.registers, **data)
    if r.local_bytes:
        rep.add("KL102", f"{where} spills on {target.name}: {r.local_bytes} bytes of local memory per thread "
                f"({r.registers} registers); try smaller tiles or fewer stages", span, "kernel-lsp.compile",
                registers=r.registers, spill_bytes=r.local_bytes, **data)


def run_check(job: dict[str, Any], w: EventWriter) -> None:
    warnings.filterwarnings("ignore")
    import torch  # imported before user code so its import cost is not blamed on it
    import triton  # noqa: F401

    path = job["path"]
    rep = Reporter(w, path, job["kernels"], job["anchor"])
    recorder = LaunchRecorder()
    recorder.install()
    interpreted = os.environ.get("TRITON_INTERPRET") == "1"
    if interpreted:
        recorder.interpret_autotune_without_benchmarks()
    targets = parse_targets(job["targets"])
    if not interpreted:
        # On a GPU, also compile for the GPU's own architecture.
        major, minor = torch.cuda.get_device_capability()
        local = f"sm_{major}{minor}"
        try:
            if local not in {t.name for t in targets}:
                targets.append(parse_targets([local])[0])
        except ValueError:
            pass

    w.stage("load")
    try:
        problem = load_problem(job["link"], path, job.get("seed", 0), job.get("source_override"),
                               "cpu" if interpreted else "cuda")
    except UserCodeError as e:
        same_file = e.path and os.path.realpath(e.path) == os.path.realpath(path)
        code = "KL005" if same_file and "reference" not in str(e) else "KL003"
        span = Span(e.line, 0) if (same_file and e.line is not None and code == "KL005") else None
        rep.add(code, _short(str(e)), span, source="kernel-lsp.link")
        return

    w.stage("capture", "the problem's own inputs")
    # Under the interpreter the capture is dry: launches are recorded, not executed, so the problem's own
    # (possibly large) sizes cost only the PyTorch glue. Verification runs kernels at CPU-sized inputs.
    recorder.dry = interpreted
    launch_error, captured_output = _capture(problem, job.get("seed", 0))
    recorder.dry = False
    w.stat("launches", recorder.count)
    failed = compile_stage(rep, recorder, targets)

    if launch_error is not None:
        kernel = recorder.current
        if kernel not in failed:
            line = launch_error.line
            rep.add("KL105", _short(f"running the implementation on the problem's inputs raised {type(launch_error.exc).__name__}: "
                                    f"{readable(str(launch_error.exc))}"),
                    Span(line, 0) if line is not None else None, source="kernel-lsp.verify")
        return
    launched = {l.spec.qualname for l in recorder.launches}
    for k in job["kernels"]:
        if not k.get("is_helper") and k["qualname"] not in launched and k["name"] not in {l.spec.name for l in recorder.launches}:
            rep.add("KL104", f"kernel {k['name']} is defined but the linked code never launches it",
                    Span.from_dict(k["name_span"]), source="kernel-lsp.compile", kernel=k["qualname"])
    if job.get("verify", True):
        from .verify import verify_problem
        verify_problem(problem, recorder, rep, job, captured_output)


def _capture(problem: Problem, seed: int) -> tuple[UserCodeError | None, Any]:
    """Run the implementation once on the problem's own inputs; returns (error, output)."""
    import torch
    try:
        inputs = problem.make_inputs(seed)
    except Exception as e:
        return UserCodeError("the input factory raised", e, None), None
    try:
        with torch.no_grad():
            return None, problem.implementation(*inputs)
    except Exception as e:
        return UserCodeError("the implementation raised", e, _impl_file(problem)), None


def _impl_file(problem: Problem) -> str | None:
    impl = problem.implementation
    mod = getattr(impl, "__module__", None) or type(impl).__module__
    import sys
    m = sys.modules.get(mod)
    return getattr(m, "__file__", None)


def _short(text: str, limit: int = 600) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
