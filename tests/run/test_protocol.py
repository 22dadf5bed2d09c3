"""Every message between the parent and its workers is a typed record in run/protocol.py: each one survives the
trip through its JSON line, and a worker of another protocol version is refused with a message that says what to
install."""

from __future__ import annotations

import json

import pytest

from kernel_lsp.jobs import CheckJob, JobKind, LinkSpec, event_to_dict, Stage
from kernel_lsp.model import Span
from kernel_lsp.run import protocol as p


def _job() -> CheckJob:
    return CheckJob(path="/w/k.py", link=LinkSpec("native", "/w/k.py", "ref"), kernels=[], anchor=Span(3, 0, 3, 1))


MESSAGES = [
    p.ForkJob(1, "/tmp/job.json", "/tmp/out", "/tmp/err", {"PATH": "/bin"}, "/tmp/cwd"),
    p.ZygoteReady(42),
    p.Forked(1, 43),
    p.Exited(1, -9),
    p.WorkerReady(44, "cuda", "NVIDIA H200", {"import torch": 1.5}, version="0.2.0"),
    p.RunJob(7, _job(), {"/w/k.py": "print(1)"}),
    p.RunJob(8, _job()),
    p.JobEvent(7, event_to_dict(Stage("verify", "variant 3"))),
    p.JobEnd(7, cancelled=False, exiting=True),
    p.CancelJob(7),
    p.WarmRequest(_job()),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_protocol_every_message_survives_its_line(message):
    line = p.encode(message)
    assert line.endswith("\n") and line.count("\n") == 1
    assert p.decode(line) == message
    assert p.decode(line.encode()) == message  # as read from a pipe


def test_protocol_a_worker_of_kernel_lsp_0_1_is_refused_with_what_to_install():
    old = json.dumps({"ready": {"pid": 1, "device": "cuda", "gpu": "H200"}})
    with pytest.raises(p.ProtocolError, match="speaks protocol 1 .*install the same kernel-lsp version"):
        p.decode(old)


def test_protocol_a_newer_worker_is_refused_naming_its_version():
    newer = json.dumps({"type": "WorkerReady", "pid": 1, "device": "cuda", "protocol": p.PROTOCOL + 1,
                        "version": "9.0.0"})
    with pytest.raises(p.ProtocolError, match=f"protocol {p.PROTOCOL + 1} \\(kernel-lsp 9.0.0\\)"):
        p.decode(newer)


@pytest.mark.parametrize("line, says", [
    ("not json", "not a message"),
    ("[1, 2]", "not a JSON object"),
    ('{"type": "Launch"}', "unknown message type"),
    ('{"type": "Forked", "id": 1}', "malformed Forked"),
])
def test_protocol_lines_that_are_not_ours_are_protocol_errors(line, says):
    with pytest.raises(p.ProtocolError, match=says):
        p.decode(line)


def test_protocol_a_jobs_kind_is_typed_and_travels_as_its_string():
    """CheckJob.kind is a JobKind: the line carries "check", as it did when the kind was a bare string, and the worker
    reads back the member, not a string that any typo would have matched nothing against."""
    line = p.encode(p.RunJob(7, _job()))
    assert json.loads(line)["job"]["kind"] == "check"
    job = p.decode(line).job
    assert job.kind is JobKind.CHECK and type(job.kind) is JobKind


def test_protocol_a_job_of_a_kind_no_worker_knows_is_a_protocol_error():
    raw = json.loads(p.encode(p.RunJob(7, _job())))
    raw["job"]["kind"] = "rerun-judge"  # a kind of older versions
    with pytest.raises(p.ProtocolError, match="malformed RunJob: 'rerun-judge' is not a valid JobKind"):
        p.decode(json.dumps(raw))
