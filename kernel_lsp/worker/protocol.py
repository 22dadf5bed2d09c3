"""The wire between the parent and a worker child. Standard library only: both sides import this.

The parent writes one job (jobs.CheckJob as JSON) to a file and starts `python -m kernel_lsp.worker.child JOB
OUT`. The child appends events (jobs.Event) to OUT as JSON lines, `{"event": KIND, ...fields}`, flushing each,
so that what it learned before a crash survives it. This module is the one place jobs and events are turned
into text and back.
"""

from __future__ import annotations

import json
from typing import IO

from ..codes import severity_of
from ..jobs import CheckJob, Event, FindingEvent, Sink, event_from_dict, event_to_dict
from ..model import Finding, Span


class EventWriter(Sink):
    """A sink that appends each event to the child's output file at once."""

    def __init__(self, stream: IO[str]):
        self._stream = stream

    def emit(self, event: Event) -> None:
        self._stream.write(json.dumps(event_to_dict(event), default=str) + "\n")
        self._stream.flush()


class TornLine(ValueError):
    """A line the child did not finish writing (it died mid-write)."""


def parse_event(line: str) -> Event | None:
    """One line of a child's output; None for a kind this version does not know; TornLine for a torn line. An
    event that parses as JSON but not as its type is a bug of kernel-lsp: it becomes a KL900 finding, so it is
    seen instead of silently cutting the job's results short."""
    try:
        message = json.loads(line)
    except json.JSONDecodeError as e:
        raise TornLine(str(e)) from None
    return decode_event(message)


def decode_event(message: dict) -> Event | None:
    try:
        return event_from_dict(message)
    except (TypeError, KeyError, AttributeError, ValueError) as e:
        return FindingEvent(Finding("", Span(0), severity_of("KL900"), "KL900",
                                    f"kernel-lsp could not read a worker event ({type(e).__name__}: {e}); "
                                    "please report it", data={"event": str(message)[:2000]}))


def read_events(path: str) -> list[Event]:
    """Events from a child's output file; a torn last line ends the list."""
    events: list[Event] = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    event = parse_event(line)
                except TornLine:
                    break
                if event is not None:
                    events.append(event)
    except FileNotFoundError:
        pass
    return events


def write_job(job: CheckJob, path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(job.to_dict(), f)


def read_job(path: str) -> CheckJob:
    with open(path, encoding="utf-8") as f:
        return CheckJob.from_dict(json.load(f))
