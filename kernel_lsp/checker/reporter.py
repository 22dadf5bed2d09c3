"""The Reporter: how a check's stages send their findings and kernel facts out through the job's Sink, placed on the
file's lines (a kernel's name, a launch site), and what the job has reported so far."""

from __future__ import annotations

from typing import Any

from ..codes import severity_of
from ..jobs import KernelRef, Sink
from ..model import Finding, Span
from ..verdict import blocks_timing
from .player import RemoteRecorder


def replaced_text(replaced: list[str], who: str) -> str:
    """KL223's message for code that replaced functions the verdicts and timings rest on, whichever process saw it
    (the player's own watch, or a worker's snapshot of its modules): one wording."""
    shown = ", ".join(replaced[:6]) + (f" and {len(replaced) - 6} more" if len(replaced) > 6 else "")
    return (f"{who} replaced {shown}: functions that verdicts and timings rest on (a kernel never needs to); "
            "kernel-lsp's own clocks and comparisons run in another process and are the originals")


class Reporter:
    """Builds findings for one file and sends them out at once."""

    def __init__(self, sink: Sink, path: str, kernels: list[KernelRef], anchor: Span):
        self.w, self.path, self.kernels, self.anchor = sink, path, kernels, anchor
        self.sent: list[Finding] = []  # what this job has reported so far (the measure stage's gate reads it)

    def kernel(self, qualname: str) -> KernelRef | None:
        for k in self.kernels:
            if k.qualname == qualname:
                return k
        short = qualname.rsplit(".", 1)[-1]
        return next((k for k in self.kernels if k.name == short), None)

    def kernel_span(self, qualname: str) -> Span:
        k = self.kernel(qualname)
        return k.name_span if k else self.anchor

    def launch_line(self, recorder: RemoteRecorder) -> int | None:
        """The first launch site of a launched kernel, else that kernel's def line, else None."""
        for launch in recorder.launches:
            k = self.kernel(launch.spec.qualname)
            if k and k.launches:
                return k.launches[0].line
        for launch in recorder.launches:
            k = self.kernel(launch.spec.qualname)
            if k:
                return k.def_line
        return None

    def launch_span(self, recorder: RemoteRecorder) -> Span | None:
        line = self.launch_line(recorder)
        return Span(line, 0) if line is not None else None

    def add(self, code: str, message: str, span: Span | None = None, source: str = "kernel-lsp",
            severity=None, **data: Any) -> None:
        finding = Finding(self.path, span or self.anchor, severity or severity_of(code), code, message, source, data)
        self.sent.append(finding)
        self.w.finding(finding)

    def preview(self, code: str, message: str, span: Span | None = None, source: str = "kernel-lsp",
                severity=None, **data: Any) -> None:
        """A finding shown at once (an editor publishes it live); the final one comes through `add`."""
        self.w.preview(Finding(self.path, span or self.anchor, severity or severity_of(code), code, message, source,
                               data))

    def unverified_because(self) -> str | None:
        """Why the kernels may not be timed: an error, or a warning of the verifier, reported so far. A warning
        about inputs outside the problem's own distribution (a scale made negative) does not stop the timing:
        the kernel is verified on every input the problem gives it, and those are the inputs timed."""
        for f in self.sent:
            if blocks_timing(f):
                return f"{f.code} ({f.severity.label}) must be fixed first"
        return None
