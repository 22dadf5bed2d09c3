"""The vocabulary every layer shares: spans, severities, findings, and the typed result of each stage.

Positions are 0-based for lines and columns, as in LSP; the text renderer adds 1. Everything here is plain
data that survives a JSON round trip (`to_dict` / `from_dict`), because results cross the worker boundary, live
in the on-disk cache and are printed as JSON. Standard library only: the worker child and the parent both import
this module, and neither needs torch or triton to read it. `Severity`, `Span`, `Finding` and the `Record` base (the
JSON encoding) are records.py's; callers import them from here.

Per kernel, a check learns `KernelFacts`: where the kernel is, what each target's compile used
(`CompileFacts`), and what verification found (`Verification`, a `VariantRow` per input variant).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from .records import Finding, Record, Severity, Span

# Severity, Span, Finding and Record are records.py's; callers import them, as every name here, from this module.
__all__ = ["Candidate", "Ceiling", "Ceilings", "CompileFacts", "FileReport", "Finding", "KernelFacts", "KernelInfo",
           "LaunchSite", "Measurement", "Proposal", "Provenance", "Record", "Roofline", "Severity", "SideTiming",
           "SkippedVariant", "Span", "Speedup", "VariantRow", "Verification", "split_lines", "us"]


@dataclass
class LaunchSite:
    """A `kernel[grid](...)` expression found by discovery."""

    kernel: str
    span: Span


@dataclass
class KernelInfo:
    """A `@triton.jit` function found by discovery, without importing the file."""

    name: str
    qualname: str
    def_span: Span  # the `def` keyword line; decorators start earlier
    name_span: Span  # the function's name, where hover and diagnostics about the kernel anchor
    end_line: int
    decorators: list[str]
    is_helper: bool = False  # called from another kernel: a device function, never launched itself
    launches: list[LaunchSite] = field(default_factory=list)


# Stage results ------------------------------------------------------------------------------------------


@dataclass
class CompileFacts(Record):
    """What compiling one specialization for one target used (registers and spills from the cubin)."""

    target: str
    config: str  # the specialization: constexprs, num_warps, num_stages
    ok: bool
    shared: int = 0  # bytes of shared memory per block
    registers: int | None = None
    spill_bytes: int | None = None  # local memory per thread: spills and local arrays
    stack_bytes: int | None = None
    num_warps: int = 4
    seconds: float = 0.0


@dataclass
class VariantRow(Record):
    """The verdict of one input variant: "ok", a finding's code, "raised", "structure" or "stale"."""

    variant: str
    description: str
    inputs: str  # the shapes (and strides) the implementation was called with
    verdict: str
    max_abs: float | None = None  # the implementation's largest error against the truth
    ref_max_abs: float | None = None  # PyTorch's own largest error in the task's dtype
    seconds: float | None = None
    kernels: list[str] = field(default_factory=list)  # the kernels (names) the implementation launched here


@dataclass
class SkippedVariant(Record):
    variant: str
    reason: str


@dataclass
class Verification(Record):
    """What verifying a file's kernels found, variant by variant."""

    variants: list[VariantRow] = field(default_factory=list)
    skipped: list[SkippedVariant] = field(default_factory=list)
    device: str = "cpu-interpreter"  # or "cuda"
    seconds: float = 0.0
    cpu_sizes: dict[str, int] = field(default_factory=dict)  # size knobs the CPU run used instead of the problem's
    bounds_checked: bool = False
    first_variant_cpu_seconds: float = 0.0
    first_variant_ops: int = 0  # interpreter operations of the first variant (they decide the CPU sizes)


@dataclass
class SideTiming(Record):
    """One side's time: the implementation ("triton"), PyTorch "eager", or "torch.compile" of the reference.
    `median_us` and its interval are the time the verdicts use (Provenance.verdict_time); both times are given."""

    side: str
    median_us: float
    low_us: float  # 95% bootstrap interval of the median
    high_us: float
    samples: int
    graph_us: float | None = None  # replayed as a CUDA graph (measured for launch-bound code)
    compile_seconds: float | None = None  # torch.compile's first call, excluded from the timing
    cached_compile: bool | None = None  # torch.compile's result came from this worker's cache
    gpu_us: float | None = None  # GPU time of one call from an idle GPU (the host's launch hidden), and its interval
    gpu_low_us: float | None = None
    gpu_high_us: float | None = None
    wall_us: float | None = None  # per call when calls run back to back (host launch included), and its interval
    wall_low_us: float | None = None
    wall_high_us: float | None = None
    host_us: float | None = None  # the host's time to issue one call (the Python wrapper)


@dataclass
class Speedup(Record):
    """median(baseline) / median(implementation): above 1 the implementation is faster."""

    against: str  # "eager" or "torch.compile"
    ratio: float
    low: float  # 95% bootstrap interval
    high: float


@dataclass
class Ceiling(Record):
    """A device ceiling measured on this GPU: a large copy's bandwidth or a large matmul's rate."""

    name: str  # "copy" or "matmul fp32", "matmul tf32", "matmul bf16", ...
    value: float  # GB/s for copy, TFLOP/s for matmul
    spread: float  # max / median - 1 over the repeated measurements


@dataclass
class Ceilings(Record):
    gpu: str
    driver: str
    l2_bytes: int
    ceilings: list[Ceiling] = field(default_factory=list)
    measured: str = ""  # date

    def get(self, name: str) -> Ceiling | None:
        return next((c for c in self.ceilings if c.name == name), None)


@dataclass
class Roofline(Record):
    """Where the implementation stands against the device's ceilings, from the reference's work."""

    bytes: int  # minimal bytes: each input (and parameter) read once, each output written once, or declared
    bytes_source: str  # "inputs and outputs" or "declared"
    flops: float | None  # from torch's FlopCounterMode on the reference, or declared; None when neither
    flops_source: str  # "counted", "declared" or "none"
    gbps: float  # achieved, bytes over the implementation's median time
    tflops: float | None
    bound: str  # "memory" or "compute": the ceiling that gives the larger floor time
    ceiling: str  # the binding ceiling's name, e.g. "copy" or "matmul bf16"
    ceiling_value: float
    floor_us: float  # the least time the binding ceiling allows
    percent: float  # floor_us / measured median, as a percentage of the binding ceiling
    l2_resident: bool = False  # the data fits in twice the L2: the HBM ceiling need not bind


@dataclass
class Provenance(Record):
    """Where and how the numbers were taken; they mean nothing without it."""

    gpu: str
    sm_clock_mhz: int | None
    driver: str
    torch: str
    triton: str
    cache: str  # "cold" (L2 flushed before every call) or "hot"
    graph: bool  # the sides were also replayed as CUDA graphs
    timer: str  # "cuda events" or, when work escaped the stream, "host clock"
    date: str
    verdict_time: str = "gpu"  # the time speedups and verdicts use: "wall" (back to back) or "gpu"
    gpu_index: int | None = None  # which GPU (as the worker saw it) timed it
    waited_s: float | None = None  # seconds waited for the GPU's timing lease (another check was timing)


_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """The lines of a source file as Python's tokenizer reads them (and the Language Server Protocol counts them):
    ended by `\r\n`, `\r` or `\n` only, never at the form feeds, separators and U+2028 that `str.splitlines` also
    breaks at. Every view of a file (the loader's linecache, pragmas, the contract, LSP positions) splits it so, or
    one of them would read another line than the interpreter runs. player/main.py holds the same rule (it imports
    nothing of kernel_lsp)."""
    lines = _LINE_RE.findall(text)
    return lines if keepends else [ln.rstrip("\r\n") for ln in lines]


def us(x: float) -> str:
    """A time in microseconds as a reader wants it: `12.3 us`, or `1.25 ms` from a millisecond up."""
    return f"{x:.1f} us" if x < 1000 else f"{x / 1000:.2f} ms"


@dataclass
class Measurement(Record):
    """The measure stage's result for one implementation (shared by the kernels it launches)."""
    sides: list[SideTiming]
    speedups: list[Speedup]
    provenance: Provenance
    roofline: Roofline | None = None
    empty_launch_us: float | None = None  # an empty Triton kernel's launch, timed the same way
    launch_bound: bool = False
    summary: str = ""  # the one line the code lens shows
    device: Ceilings | None = None  # the device's measured ceilings, for charts and the hover
    disturbed: str | None = None  # another process used the GPU during the timing (after one retry): who
    held_up: str | None = None  # the implementation's processes ran on, or left the GPU busy, outside its timed calls

    def side(self, name: str) -> SideTiming | None:
        return next((s for s in self.sides if s.side == name), None)

    def speedup(self, against: str) -> Speedup | None:
        return next((s for s in self.speedups if s.against == against), None)


@dataclass
class KernelFacts(Record):
    """Everything a check learned about one kernel, for hover, JSON and code actions."""

    def_line: int | None = None
    qualname: str | None = None
    helper: bool | None = None  # a device function called by other kernels, never launched (nor verified) itself
    compile: list[CompileFacts] = field(default_factory=list)
    verification: Verification | None = None
    measurement: Measurement | None = None
    performance_note: str | None = None  # why there is no measurement ("not measured: no GPU")

    def merge(self, other: "KernelFacts") -> None:
        """Add facts that arrived later (the worker sends compile and verification facts as it learns them)."""
        self.compile.extend(other.compile)
        for f in dataclasses.fields(self):
            value = getattr(other, f.name)
            if value is not None and not isinstance(value, list):
                setattr(self, f.name, value)


@dataclass
class FileReport:
    """Everything the engine learned about one file: findings plus per-kernel facts for hover and JSON."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    kernels: dict[str, KernelFacts] = field(default_factory=dict)  # by kernel name
    cached: bool = False
    stats: dict[str, Any] = field(default_factory=dict)
    dependencies: list[str] = field(default_factory=list)  # workspace files the result depends on

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "findings": [f.to_dict() for f in self.findings],
            "kernels": {name: k.to_dict() for name, k in self.kernels.items()},
            "cached": self.cached,
            "stats": self.stats,
            "dependencies": self.dependencies,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "FileReport":
        return cls(
            path=d["path"],
            findings=[Finding.from_dict(f) for f in d.get("findings", [])],
            kernels={name: KernelFacts.from_dict(k) for name, k in d.get("kernels", {}).items()},
            cached=d.get("cached", False),
            stats=d.get("stats", {}),
            dependencies=d.get("dependencies", []),
        )


# Proposals (the code actions that change a kernel) ----------------------------------------------------------


@dataclass
class Candidate(Record):
    """One proposed version of a file, and what became of it."""

    origin: str  # "llm round 1 #2", "tune BLOCK=256, num_warps=8"
    verdict: str  # "accepted", "selected", "verified", "rejected", "blocked", "unparsable", "not run"
    reason: str = ""  # why it was rejected or blocked: the findings or the screen's words
    findings: list[str] = field(default_factory=list)  # "KL200 line 17: ..." of its check
    median_us: float | None = None  # the implementation's time, when measured
    speedup: Speedup | None = None  # against the current kernel, when raced
    diff_lines: int = 0


@dataclass
class Proposal(Record):
    """The result of a fix, optimize or tune request: the accepted edit (if any) and the evidence behind it."""

    mode: str  # fix, optimize, tune
    path: str
    accepted: bool
    summary: str  # one line for the user
    diff: str = ""  # unified diff of the accepted candidate against the file as it was
    new_text: str | None = None  # the accepted file text
    candidates: list[Candidate] = field(default_factory=list)
    before: Measurement | None = None
    after: Measurement | None = None
    variants: list[VariantRow] = field(default_factory=list)  # the accepted candidate's verification
    tokens: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)  # what could not be done ("no GPU: configs pruned only")
