"""The wire between the parent and its workers. Standard library only: both sides import this.

Every message that crosses a process boundary is a typed record here, turned into one JSON line by `encode` and
back by `decode`; nothing else in kernel-lsp reads or writes a worker's JSON by hand. Three channels use them:

- a job's events: the child sends events (jobs.Event) as numbered JSON lines, flushing each, so that what it
  learned before a crash survives it, through a Unix socket its parent listens on (client.py, `EventChannel`), or
  to a file where the socket's name would be too long (`EventWriter`, `parse_events`, `read_events`); the job
  itself is a file (`write_job`);
- the warm zygote's stdio (zygote.py): `ForkJob` in; `ZygoteReady`, `Forked`, `Exited` out;
- a long-lived worker's stdio (serve.py, local or behind a `runner` command): `RunJob` and `CancelJob` in;
  `WorkerReady`, `JobEvent`, `JobEnd` out; and the compile warmer's stdin: one `WarmRequest`.
- a Ray task or actor (ray_executor.py) hands back plain data: the live events as `event_to_dict` makes them, then
  the whole `WorkerOutcome` (`outcome_to_dict`).

Versioned: each ready message carries PROTOCOL. A worker that speaks another version (an older or newer
kernel-lsp behind a runner command) is refused when it starts, with a message that says what to install, instead
of failing later on a message it misreads.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, dataclass, field, fields
from typing import IO, Any

from ..codes import severity_of
from ..jobs import CheckJob, Event, FindingEvent, Sink, event_from_dict, event_to_dict
from ..model import Finding, Record, Span
from .outcome import WorkerOutcome

PROTOCOL = 2  # 1: the untyped dict envelopes of kernel-lsp 0.1


class ProtocolError(ValueError):
    """A message this side cannot use: not JSON, of an unknown type, or from a worker of another version."""


@dataclass
class ForkJob(Record):
    """Parent to zygote: fork a child that runs the job in `job` (a file) and appends its events to `out`."""

    id: int
    job: str
    out: str
    err: str
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None  # the job's private working directory (the sandbox's)


@dataclass
class ZygoteReady(Record):
    pid: int
    protocol: int = PROTOCOL


@dataclass
class Forked(Record):
    id: int
    pid: int


@dataclass
class Exited(Record):
    id: int
    returncode: int  # negative: the signal that killed it, as subprocess reports it


@dataclass
class WorkerReady(Record):
    """A long-lived worker, once: it imported torch and triton (and opened its CUDA context) and takes jobs."""

    pid: int
    device: str
    gpu: str = ""
    startup: dict[str, float] = field(default_factory=dict)  # step -> seconds
    protocol: int = PROTOCOL
    version: str = ""  # the worker's kernel-lsp version, for the mismatch message
    sandbox: str = ""  # what confines the jobs' code there (sandbox.describe)


@dataclass
class RunJob(Record):
    """Parent to worker: run one job. With `files` (absolute path -> text) the worker writes them under a fresh
    root and runs the job there, so no shared file system is assumed."""

    id: int
    job: CheckJob
    files: dict[str, str] | None = None


@dataclass
class JobEvent(Record):
    id: int
    event: dict[str, Any]  # a jobs.Event as event_to_dict makes it; decoded by decode_event


@dataclass
class JobEnd(Record):
    id: int
    cancelled: bool = False
    exiting: bool = False  # the worker ends after this job (a GPU fault lost its CUDA context)


@dataclass
class CancelJob(Record):
    id: int


@dataclass
class WarmRequest(Record):
    """Parent to the compile warmer: the job whose reference to compile."""

    job: CheckJob


MESSAGES: dict[str, type] = {cls.__name__: cls for cls in (ForkJob, ZygoteReady, Forked, Exited, WorkerReady,
                                                            RunJob, JobEvent, JobEnd, CancelJob, WarmRequest)}
READY = (ZygoteReady, WorkerReady)


def encode(message: Record) -> str:
    """One message as one line of JSON (with its newline)."""
    return json.dumps({"type": type(message).__name__, **message.to_dict()}, default=str) + "\n"


def decode(line: str | bytes) -> Record:
    """The typed message of one line. Raises ProtocolError for a line that is not one of ours, and for a ready
    message of another protocol version (the only message whose shape every version keeps readable)."""
    try:
        raw = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ProtocolError(f"not a message: {e}") from None
    if not isinstance(raw, dict):
        raise ProtocolError("not a message: not a JSON object")
    if "type" not in raw and "ready" in raw:  # kernel-lsp 0.1's worker: {"ready": {...}}
        raise ProtocolError(mismatch(1, _version_of(raw.get("ready"))))
    cls = MESSAGES.get(raw.get("type", ""))
    if cls is None:
        raise ProtocolError(f"unknown message type {raw.get('type')!r}")
    if cls in READY and raw.get("protocol") != PROTOCOL:
        raise ProtocolError(mismatch(raw.get("protocol"), raw.get("version", "")))
    missing = [f.name for f in fields(cls) if f.name not in raw
               and f.default is MISSING and f.default_factory is MISSING]
    if missing:
        raise ProtocolError(f"malformed {cls.__name__}: no {', '.join(missing)}")
    try:
        return cls.from_dict({k: v for k, v in raw.items() if k != "type"})
    except (TypeError, KeyError, AttributeError, ValueError) as e:
        raise ProtocolError(f"malformed {cls.__name__}: {e}") from None


def _version_of(ready: Any) -> str:
    return str(ready.get("version", "")) if isinstance(ready, dict) else ""


def mismatch(theirs: Any, their_version: str = "") -> str:
    from .. import __version__
    who = f"kernel-lsp {their_version}" if their_version else "an older kernel-lsp"
    return (f"the worker speaks protocol {theirs} ({who}); this kernel-lsp {__version__} speaks protocol {PROTOCOL}: "
            "install the same kernel-lsp version where the worker runs")


def send(stream: IO[str], message: Record) -> None:
    stream.write(encode(message))
    stream.flush()


# Events of one job ---------------------------------------------------------------------------------------


class EventWriter(Sink):
    """A sink that appends each event to the child's output file at once. `numbered`: each line carries its place,
    `seq` (0, 1, ...), so that the parent sees a line that went missing: the checked code runs in the same process
    and can find the file (a thread that rewrote it without its error lines passed as clean once)."""

    def __init__(self, stream: IO[str], numbered: bool = False):
        self._stream = stream
        self._seq = 0 if numbered else None

    def emit(self, event: Event) -> None:
        message = event_to_dict(event)
        if self._seq is not None:
            message["seq"] = self._seq
        self._stream.write(json.dumps(message, default=str) + "\n")
        self._stream.flush()
        if self._seq is not None:
            self._seq += 1  # only once the line is out: a write that failed leaves no gap


class TornLine(ValueError):
    """A line the child did not finish writing (it died mid-write)."""


def parse_event(line: str) -> Event | None:
    """One line of a child's output; None for a kind this version does not know; TornLine for a torn line."""
    try:
        message = json.loads(line)
    except json.JSONDecodeError as e:
        raise TornLine(str(e)) from None
    if isinstance(message, dict):
        message.pop("seq", None)
    return decode_event(message)


def decode_event(message: dict) -> Event | None:
    """An event from its dict. One that parses as JSON but not as its type is a bug of kernel-lsp: it becomes a
    KL900 finding, so it is seen instead of silently cutting the job's results short."""
    try:
        return event_from_dict(message)
    except (TypeError, KeyError, AttributeError, ValueError) as e:
        return FindingEvent(Finding("", Span(0), severity_of("KL900"), "KL900",
                                    f"kernel-lsp could not read a worker event ({type(e).__name__}: {e}); "
                                    "please report it", data={"event": str(message)[:2000]}))


def read_events(path: str, numbered: bool = False) -> list[Event]:
    """Events from a child's output file (parse_events)."""
    try:
        with open(path, encoding="utf-8") as f:
            return parse_events(f, numbered)
    except FileNotFoundError:
        return []


def parse_events(lines, numbered: bool = False) -> list[Event]:
    """Events from a child's output lines; a torn last line ends the list. `numbered` (the writer numbered its
    lines): a line missing, out of place or without its number means the record was changed while the job ran,
    which only the checked code could do: a KL223 error is added, and the file's verdict cannot be clean."""
    events: list[Event] = []
    expected, broken = 0, None
    for line in lines:
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            break
        seq = message.pop("seq", None) if isinstance(message, dict) else None
        if numbered and broken is None and seq != expected:
            broken = (expected, seq)
        expected = (seq if isinstance(seq, int) else expected) + 1
        event = decode_event(message)
        if event is not None:
            events.append(event)
    if broken is not None:
        want, got = broken
        found = "a line without its number" if got is None else f"line {got}"
        events.append(FindingEvent(Finding(
            "", Span(0), severity_of("KL223"), "KL223",
            f"the worker's record of this job was changed while it ran (line {want} was due, {found} came): "
            "the checked code edits what its checker reports, so none of its results can be trusted",
            source="kernel-lsp.worker")))
    return events


def outcome_to_dict(outcome: WorkerOutcome) -> dict[str, Any]:
    """A job's outcome as plain data, for a worker that hands it back whole (a Ray task or actor)."""
    d = {f.name: getattr(outcome, f.name) for f in fields(outcome) if f.name != "events"}
    return {**d, "events": [event_to_dict(e) for e in outcome.events]}


def outcome_from_dict(d: dict[str, Any]) -> WorkerOutcome:
    known = {f.name for f in fields(WorkerOutcome)} - {"events"}
    events = [decode_event(e) for e in d.get("events", [])]
    return WorkerOutcome(events=[e for e in events if e is not None], **{k: v for k, v in d.items() if k in known})


def write_job(job: CheckJob, path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(job.to_dict(), f)


def read_job(path: str) -> CheckJob:
    with open(path, encoding="utf-8") as f:
        return CheckJob.from_dict(json.load(f))
