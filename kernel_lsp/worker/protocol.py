"""Messages between the parent and a worker child. Standard library only: both sides import this.

The parent writes one job (a JSON object) to a file and starts `python -m kernel_lsp.worker.child JOB OUT`.
The child appends events to OUT as JSON lines, flushing each, so that what it learned before a crash
survives it. Event kinds:

- {"event": "stage", "stage": NAME, "detail": TEXT}   the child starts a stage (names the variant too)
- {"event": "finding", "finding": FINDING}            a Finding.to_dict()
- {"event": "kernel", "name": NAME, "facts": {...}}   facts merged into the kernel's entry (resources...)
- {"event": "stat", "name": NAME, "value": NUMBER}    counters added up by the parent (compiles, launches)
- {"event": "done"}                                   the job ended normally
"""

from __future__ import annotations

import json

from typing import Any, IO

PROTOCOL_VERSION = 1


class EventWriter:
    def __init__(self, stream: IO[str]):
        self._stream = stream

    def emit(self, event: str, **payload: Any) -> None:
        self._stream.write(json.dumps({"event": event, **payload}, default=str) + "\n")
        self._stream.flush()

    def stage(self, stage: str, detail: str = "") -> None:
        self.emit("stage", stage=stage, detail=detail)

    def finding(self, finding: dict[str, Any]) -> None:
        self.emit("finding", finding=finding)

    def kernel(self, name: str, **facts: Any) -> None:
        self.emit("kernel", name=name, facts=facts)

    def stat(self, name: str, value: float = 1) -> None:
        self.emit("stat", name=name, value=value)


def read_events(path: str) -> list[dict[str, Any]]:
    """Events from a child's output file; a torn last line (the child died mid-write) is dropped."""
    events = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError:
                    break
    except FileNotFoundError:
        pass
    return events
