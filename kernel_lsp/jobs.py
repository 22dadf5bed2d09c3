"""What crosses the worker boundary: the job going in, the events coming out, and the sink the engine writes to.

Standard library only: the parent (check.py), the engine's worker-side stages and the worker's wire format
(run/protocol.py) all import this module. Every type is a `Record`, converted to and from dicts only where it
is serialized (protocol.py for the wire; model.FileReport for the cache and JSON).

Events, in the order a job usually sends them: `Device` (where kernels run), `Stage` (a stage starts; names the
variant too), `FindingEvent`, `KernelEvent` (facts merged into the kernel's entry), `Stat` (counters the parent
adds up), and `Done` when the job ended normally. A job that dies sends no `Done`; the parent diagnoses it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable, Union

from .model import Finding, KernelFacts, Record, Span


@dataclass
class LinkSpec(Record):
    """How the worker finds the reference: the linking form, the files and the names in them."""

    kind: str  # "kernelbench" or "native"
    reference: str  # the file holding the reference (may be the implementation itself)
    reference_name: str = "Model"
    inputs_path: str = ""
    inputs_name: str = "get_inputs"
    entry: str = "ModelNew"
    # The texts of the reference and input-factory files, when pinned (the proposers freeze them before round 1):
    # the worker runs these instead of the files' bytes, as `CheckJob.source_override` does for the kernel file.
    reference_text: str | None = None
    inputs_text: str | None = None


@dataclass
class KernelRef(Record):
    """Discovery's facts about one kernel, so the worker can place findings without re-parsing the file."""

    name: str
    qualname: str
    def_line: int
    def_col: int
    name_span: Span
    end_line: int
    is_helper: bool = False
    launches: list[Span] = field(default_factory=list)  # the `kernel[grid](...)` call sites


@dataclass
class MeasureOptions(Record):
    """What the measure stage does after a clean verification (settings `measure`, docs/performance-method.md)."""

    enabled: bool = False
    cache: str = "cold"  # "cold": L2 flushed before every timed call; "hot": not flushed
    compile: bool = True  # also time torch.compile of the reference
    compile_severity: str = "info"  # of KL401: "info" or "warning"
    budget_s: float = 1.0  # seconds of interleaved timing per file, after warm-up
    precision: float = 0.005  # stop sooner once every side's 95% interval is within +-this of its median; 0: never
    flops: str | None = None  # declared work: a number, or a function of the reference module returning one
    bytes: str | None = None
    against: str | None = None  # another version of the file (the current one, in a race): timed as "current"
    warm_lock: str | None = None  # a compile warmer's lock file (run/compile_warmer.py): wait for it to end
    time: str = "wall"  # the time verdicts use: "wall" (back to back, host launch included) or "gpu"


@dataclass
class SandboxOptions(Record):
    """How processes that run checked code are confined (settings `sandbox`, run/sandbox.py)."""

    enabled: bool = True
    env: list[str] = field(default_factory=list)  # variables passed through besides the allowlist
    writable: list[str] = field(default_factory=list)  # folders writable besides the private one and the caches
    network: bool = False  # allow TCP

    @classmethod
    def from_json(cls, text: str) -> "SandboxOptions":
        import json
        return cls.from_dict(json.loads(text))


@dataclass
class RerunOptions(Record):
    """The evidence runs after a file passes the verifier (checker/verify/evidence/)."""

    enabled: bool = True
    folder: str = ""  # the run's folder: in/ (inputs, truth, the harness's instructions), out/ (its result)
    device: str = "cpu"  # where the implementation runs in the harness: where it ran in the check
    writable: list[str] = field(default_factory=list)  # compile caches the harness may write
    harness_note: str = ""  # how the harness ended, when it saved nothing (for the judge's message)
    harness_started: bool = False  # the harness ran the implementation (a missing result is then its doing)
    values: bool = True  # judge values (not where the CPU interpreter cannot compute them faithfully: KL210)
    sizes: dict[str, int] = field(default_factory=dict)  # the verifier's CPU sizes: the interpreter's cost per call


class JobKind(enum.StrEnum):
    """What a worker does with a CheckJob. A string on the wire (its value), a member everywhere else: a kind no
    worker knows is refused where the job is read (protocol.decode, read_job), not deep in a worker."""

    CHECK = "check"  # one file's stages: load, capture, compile, verify, evidence, measure (checker/pipeline.py)


@dataclass
class CheckJob(Record):
    """One file to load, capture, compile and verify in a worker."""

    path: str
    link: LinkSpec
    kernels: list[KernelRef]
    anchor: Span  # where findings without a better place go (the link pragma, or line 1)
    targets: list[str] = field(default_factory=lambda: ["sm_90"])
    seed: int = 0
    verify: bool = True
    device: str = "auto"  # auto, cpu or cuda; the child replaces it with where kernels really run
    source_override: str | None = None  # the editor's unsaved text, run instead of the file's bytes
    measure: MeasureOptions = field(default_factory=MeasureOptions)
    sandbox: SandboxOptions = field(default_factory=SandboxOptions)
    rerun: RerunOptions = field(default_factory=RerunOptions)
    kind: JobKind = JobKind.CHECK


# Events --------------------------------------------------------------------------------------------------


@dataclass
class Stage(Record):
    stage: str
    detail: str = ""
    at: float | None = None  # seconds since the job started in the worker (`check --timings`)
    # A wait for something that is not the checked code (a GPU another check times on, the compile warmer), set by
    # Sink.wait alone: it lasts until the worker's next stage, and the job's time limit leaves it out (run/outcome.py
    # TimeLimit). Never read from the detail, which may carry names the checked code chose (a kernel's qualname).
    wait: bool | None = None  # True for a wait; None otherwise (left out of the wire's JSON)


@dataclass
class FindingEvent(Record):
    finding: Finding


@dataclass
class Preview(Record):
    """A finding as soon as it is found (the verifier's first failing variant of a cause): shown live by the
    server, never part of the report, which holds the final finding (with every variant it failed on)."""

    finding: Finding


@dataclass
class KernelEvent(Record):
    name: str
    facts: KernelFacts


@dataclass
class Stat(Record):
    name: str
    value: float = 1


@dataclass
class Device(Record):
    device: str  # "cpu" (the interpreter) or "cuda"


@dataclass
class Done(Record):
    pass


Event = Union[Stage, FindingEvent, Preview, KernelEvent, Stat, Device, Done]
EVENT_TYPES: dict[str, type] = {"stage": Stage, "finding": FindingEvent, "preview": Preview, "kernel": KernelEvent,
                                "stat": Stat, "device": Device, "done": Done}
LIVE = (Stage, Preview)  # events forwarded to the front end while the job runs
_NAMES = {cls: name for name, cls in EVENT_TYPES.items()}


def event_to_dict(event: Event) -> dict[str, Any]:
    return {"event": _NAMES[type(event)], **event.to_dict()}


def event_from_dict(d: dict[str, Any]) -> Event | None:
    """The typed event, or None for a kind this version does not know."""
    cls = EVENT_TYPES.get(d.get("event", ""))
    return None if cls is None else cls.from_dict({k: v for k, v in d.items() if k != "event"})


class Sink:
    """Where the engine sends what it learns, as soon as it learns it. Subclasses implement `emit`."""

    def emit(self, event: Event) -> None:
        raise NotImplementedError

    def stage(self, stage: str, detail: str = "") -> None:
        self.emit(Stage(stage, detail))

    def finding(self, finding: Finding) -> None:
        self.emit(FindingEvent(finding))

    def preview(self, finding: Finding) -> None:
        self.emit(Preview(finding))

    def kernel(self, name: str, facts: KernelFacts) -> None:
        self.emit(KernelEvent(name, facts))

    def stat(self, name: str, value: float = 1) -> None:
        self.emit(Stat(name, value))

    def wait(self, stage: str, detail: str) -> Callable[[], None]:
        """Say that the job waits for something that is not the checked code (a Stage with `wait` set), and return
        what says that the wait has ended: the stage that was current before it, again, where this sink keeps it
        (`last`, checker/pipeline.py StageTracker), else `stage`. The job's time limit leaves the time between the
        two out (run/outcome.py TimeLimit): a check that waits for another's timing is not timed out for it."""
        before = getattr(self, "last", None)
        self.emit(Stage(stage, detail, wait=True))

        def ended() -> None:
            if before is not None:
                self.stage(before.stage, before.detail)
            else:
                self.stage(stage)
        return ended


class ListSink(Sink):
    """Keeps events in memory (tests, and callers that run a stage in-process)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)


def crash_hint(stderr: str) -> str:
    """What a crashed process's last words suggest (": heap corruption (...), typically an out-of-bounds store"),
    else its last line; "" when it said nothing."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if any(s in ln for s in ("malloc", "free()", "corrupted", "tcache", "double free")):
            return f": heap corruption ({ln[:160]}), typically an out-of-bounds store"
        if "illegal memory access" in ln or "CUDA error" in ln:
            return f": {ln[:200]}"
    return f": {lines[-1][:200]}" if lines else ""
