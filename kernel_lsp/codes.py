"""Stable diagnostic codes. Each code is the LSP diagnostic code and the SARIF ruleId alike.

A code never changes meaning once released; docs/diagnostics.md explains each one (a test keeps the two in
step). Warnings mean likely bugs; information says what was measured or could not be judged; hints are advice.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Severity


@dataclass(frozen=True)
class Code:
    code: str
    name: str
    severity: Severity
    summary: str


_ALL = [
    # Input and linking (KL0xx)
    Code("KL001", "syntax-error", Severity.ERROR, "The file does not parse as Python."),
    Code("KL002", "reference-missing", Severity.ERROR, "The linked PyTorch reference file or name does not exist."),
    Code("KL003", "reference-broken", Severity.ERROR, "The reference could not be imported, built or run."),
    Code("KL004", "no-reference", Severity.HINT, "A file with Triton kernels has no linked PyTorch reference."),
    Code("KL005", "implementation-broken", Severity.ERROR, "The implementation module could not be imported or built."),
    Code("KL006", "config-error", Severity.ERROR, "The [tool.kernel-lsp] configuration is invalid."),
    Code("KL007", "reference-nondeterministic", Severity.ERROR, "The reference gives different outputs on the same inputs (it draws random numbers it does not seed), so no value can be judged against it."),
    Code("KL008", "link-pragma-ignored", Severity.INFO, "A link pragma in the file was ignored: the reference the caller gave (--reference, the batch API's) wins."),
    Code("KL009", "malformed-pragma", Severity.WARNING, "A `# kernel-lsp` comment that looks like a pragma is not read as one (no colon after kernel-lsp, spaces around =, an unknown key): the message shows the form that is read."),
    # Compile and resources (KL1xx)
    Code("KL100", "compile-error", Severity.ERROR, "Triton failed to compile the kernel for a target."),
    Code("KL101", "shared-memory-overflow", Severity.ERROR, "Shared memory exceeds the target's per-block limit."),
    Code("KL102", "register-spills", Severity.WARNING, "The kernel spills registers to local memory."),
    Code("KL103", "too-many-registers", Severity.ERROR, "Registers per block exceed the target's register file."),
    Code("KL104", "kernel-never-launched", Severity.WARNING, "A kernel is defined but the linked code never launches it."),
    Code("KL105", "launch-failed", Severity.ERROR, "The implementation raised while launching or running a kernel."),
    Code("KL106", "needs-cuda", Severity.WARNING, "The implementation insists on CUDA, so nothing was verified on the CPU: verify with --device cuda or a runner."),
    # Verification (KL2xx)
    Code("KL200", "numeric-mismatch", Severity.ERROR, "The output differs from the float64 truth beyond PyTorch's own error."),
    Code("KL201", "nonfinite-mismatch", Severity.ERROR, "NaN or infinity positions differ from the reference."),
    Code("KL202", "shape-mismatch", Severity.ERROR, "The output's shape, dtype or structure differs from the reference."),
    Code("KL203", "unwritten-output", Severity.ERROR, "Output elements were never written by the kernel."),
    Code("KL204", "input-mutated", Severity.ERROR, "The implementation modified one of its inputs."),
    Code("KL205", "no-kernel-launch", Severity.ERROR, "The implementation returned a result without launching a Triton kernel."),
    Code("KL206", "stale-result", Severity.ERROR, "The result does not depend on the current inputs (cached across calls)."),
    Code("KL207", "nondeterministic", Severity.WARNING, "Repeated runs on the same inputs differ beyond rounding: a likely race."),
    Code("KL208", "out-of-bounds", Severity.ERROR, "A load or store touches memory outside the tensors passed to the launch."),
    Code("KL209", "variant-failed", Severity.ERROR, "The implementation fails on an input the reference accepts."),
    Code("KL210", "interpreter-limit", Severity.INFO, "The CPU interpreter cannot judge this part faithfully."),
    Code("KL220", "checker-aware", Severity.ERROR, "Where it is called afresh (the evidence runs), the implementation raises, launches no kernel, does not complete or computes a wrong result."),
    Code("KL221", "computed-without-kernel", Severity.ERROR, "Output elements do not depend on any Triton launch: the kernel's work is discarded or partly replaced."),
    Code("KL222", "rerun-incomplete", Severity.INFO, "The evidence runs could not be made; the verifier's verdict stands without them."),
    Code("KL223", "tampering", Severity.ERROR, "The checked code replaced a function of torch, Triton or the clock that verdicts and timings rest on, or rewrote the worker's record of the job."),
    # Faults of the user's code (KL3xx)
    Code("KL300", "worker-crashed", Severity.ERROR, "The worker running the user's code died (signal or abort)."),
    Code("KL301", "worker-timeout", Severity.ERROR, "The worker running the user's code exceeded its time limit."),
    Code("KL302", "out-of-memory", Severity.ERROR, "The user's code ran out of GPU or host memory."),
    Code("KL303", "worker-unavailable", Severity.ERROR, "No worker could be started to run this file (a runner command that fails, say)."),
    # Performance, measured on a GPU (KL4xx)
    Code("KL400", "slower-than-eager", Severity.WARNING, "The kernel is slower than the PyTorch reference run eagerly (the whole 95% interval below 1x)."),
    Code("KL401", "slower-than-compile", Severity.INFO, "The kernel is slower than torch.compile of the reference (the whole 95% interval below 1x)."),
    Code("KL402", "performance", Severity.INFO, "Where the kernel stands: speedups over eager and torch.compile, and the share of the device's ceiling."),
    Code("KL403", "impossible-speed", Severity.ERROR, "Measured faster than the device's measured ceilings allow: skipped work or a broken measurement, never a win."),
    Code("KL404", "launch-bound", Severity.INFO, "A side's host issue time (its Python wrapper) exceeds its GPU time: a loop that calls it pays the host's time."),
    Code("KL405", "timed-output-mismatch", Severity.ERROR, "The output of the timed calls differs from the truth: the kernel behaves differently once warmed up."),
    Code("KL406", "work-outside-stream", Severity.WARNING, "Work ran outside the caller's CUDA stream; the time is the host clock's."),
    Code("KL407", "measure-incomplete", Severity.INFO, "Part of the measurement could not be taken (a baseline failed, or the kernel is not verified)."),
    Code("KL408", "timing-disturbed", Severity.INFO, "Another process used the GPU during the timing, also when it was taken again."),
    # Faults of the tool itself (KL9xx)
    Code("KL900", "internal-error", Severity.ERROR, "kernel-lsp itself failed; please report it."),
]

CODES: dict[str, Code] = {c.code: c for c in _ALL}


def severity_of(code: str) -> Severity:
    return CODES[code].severity
