"""Typed results and the worker boundary survive their JSON round trips (the cache, `--format json`, the wire)."""

from __future__ import annotations

import io
import os
import json

from kernel_lsp.jobs import (CheckJob, Device, Done, FindingEvent, KernelEvent, KernelRef, LinkSpec, Stage, Stat,
                             event_from_dict, event_to_dict)
from kernel_lsp.model import (Ceiling, Ceilings, CompileFacts, FileReport, Finding, KernelFacts, Measurement,
                              Provenance, Roofline, Severity, SideTiming, SkippedVariant, Span, Speedup, VariantRow,
                              Verification)
from kernel_lsp.run.protocol import EventWriter, read_events


def _report() -> FileReport:
    facts = KernelFacts(def_line=3, qualname="K.k", compile=[CompileFacts("sm_90", "BLOCK=64", True, 1024, 32, 0, 0)],
                        verification=Verification([VariantRow("seed-1", "d", "(4,)", "ok", 0.5, 0.25, 0.01)],
                                                  [SkippedVariant("special", "why")], "cuda", 1.5, {"n": 7}, True))
    finding = Finding("/x.py", Span(2, 1, 2, 5), Severity.WARNING, "KL102", "spills", "kernel-lsp.compile", {"a": 1})
    return FileReport("/x.py", [finding], {"k": facts}, stats={"workers": 1}, dependencies=["/y.py"])


def test_model_file_report_round_trips_with_typed_kernel_facts():
    report = _report()
    again = FileReport.from_dict(json.loads(json.dumps(report.to_dict())))
    assert again == report
    assert isinstance(again.kernels["k"].compile[0], CompileFacts)
    assert isinstance(again.kernels["k"].verification.variants[0], VariantRow)


def test_model_measurement_with_unknown_numbers_round_trips():
    """Required fields that are None (no FLOPs counted) are left out of JSON and come back as None."""
    prov = Provenance("NVIDIA H200", None, "580", "2.11", "3.6", "cold", False, "cuda events", "2026-11-30")
    roof = Roofline(1024, "inputs and outputs", None, "none", 10.0, None, "memory", "copy", 4000.0, 0.2, 50.0)
    m = Measurement([SideTiming("triton", 1.0, 0.9, 1.1, 20)], [Speedup("eager", 2.0, 1.9, 2.1)], prov, roof,
                    device=Ceilings("NVIDIA H200", "580", 1, [Ceiling("copy", 4000.0, 0.01)]))
    d = KernelFacts(measurement=m).to_dict()
    assert "flops" not in d["measurement"]["roofline"] and "sm_clock_mhz" not in d["measurement"]["provenance"]
    assert KernelFacts.from_dict(json.loads(json.dumps(d))).measurement == m


def test_model_optional_facts_are_left_out_until_known():
    d = KernelFacts(def_line=1, qualname="k").to_dict()
    assert d == {"def_line": 1, "qualname": "k", "compile": []}


def test_model_unknown_keys_from_a_newer_writer_are_ignored():
    d = _report().to_dict()
    d["kernels"]["k"]["future_fact"] = {"x": 1}
    d["kernels"]["k"]["verification"]["variants"][0]["new_column"] = 3
    assert FileReport.from_dict(d).kernels["k"].verification.variants[0].verdict == "ok"


def test_model_kernel_facts_merge_extends_compile_and_sets_verification():
    a = KernelFacts(def_line=1, compile=[CompileFacts("sm_80", "", True)])
    a.merge(KernelFacts(compile=[CompileFacts("sm_90", "", True)]))
    a.merge(KernelFacts(verification=Verification(device="cuda")))
    assert [c.target for c in a.compile] == ["sm_80", "sm_90"] and a.def_line == 1 and a.verification.device == "cuda"


def test_jobs_check_job_round_trips():
    job = CheckJob("/a.py", LinkSpec("kernelbench", "/p.py", inputs_path="/p.py"),
                   [KernelRef("k", "k", 4, 0, Span(4, 4, 4, 5), 9, launches=[Span(12, 8, 12, 30)])], Span(0),
                   targets=["sm_80", "sm_90"], source_override="text")
    again = CheckJob.from_dict(json.loads(json.dumps(job.to_dict())))
    assert again.kernels[0].launches[0].line == 12 and again.link.reference == "/p.py"
    assert again.to_dict() == job.to_dict()


def test_jobs_events_round_trip_through_the_wire(tmp_path):
    events = [Device("cpu"), Stage("compile", "k for sm_90"),
              FindingEvent(Finding("/a.py", Span(1, 0, 1, 1), Severity.ERROR, "KL200", "bad")),
              KernelEvent("k", KernelFacts(compile=[CompileFacts("sm_90", "c", True)])), Stat("compiles", 2), Done()]
    out = tmp_path / "events.jsonl"
    with open(out, "w") as f:
        w = EventWriter(f)
        for e in events:
            w.emit(e)
        f.write('{"event": "stage", "stage": "ver')  # a torn last line, as from a child killed mid-write
    assert read_events(str(out)) == events


def test_jobs_unknown_event_kinds_are_skipped_not_fatal():
    assert event_from_dict({"event": "from-the-future", "x": 1}) is None
    assert event_to_dict(Stat("launches", 3)) == {"event": "stat", "name": "launches", "value": 3}
    buf = io.StringIO()
    EventWriter(buf).stage("load")
    assert json.loads(buf.getvalue()) == {"event": "stage", "stage": "load", "detail": ""}


def test_jobs_an_event_that_does_not_decode_is_an_internal_error_not_a_silent_cut(tmp_path):
    out = tmp_path / "events.jsonl"
    out.write_text('{"event": "stage", "stage": "load", "detail": ""}\n'
                   '{"event": "kernel", "name": "k", "facts": {"measurement": {"sides": 3}}}\n'
                   '{"event": "done"}\n')
    events = read_events(str(out))
    assert isinstance(events[0], Stage) and isinstance(events[2], Done)
    assert isinstance(events[1], FindingEvent) and events[1].finding.code == "KL900"


def test_jobs_a_numbered_events_file_that_lost_a_line_is_tampering(tmp_path):
    """The child numbers its lines; the checked code runs in its process and can rewrite the file (pygpubench's
    thread_fd exploit dropped the error lines): a line missing, or one without its number, is KL223."""
    events = [Stage("load"), FindingEvent(Finding("/a.py", Span(1, 0, 1, 1), Severity.ERROR, "KL200", "wrong")), Done()]
    out = tmp_path / "events.jsonl"
    with open(out, "w") as f:
        w = EventWriter(f, numbered=True)
        for e in events:
            w.emit(e)
    assert read_events(str(out), numbered=True) == events
    lines = out.read_text().splitlines(keepends=True)
    out.write_text(lines[0] + lines[2])  # the finding's line scrubbed
    got = read_events(str(out), numbered=True)
    assert [type(e) for e in got[:2]] == [Stage, Done] and got[2].finding.code == "KL223"
    assert "line 1 was due, line 2 came" in got[2].finding.message
    out.write_text(lines[0] + '{"event": "done"}\n')  # a forged line, without a number
    assert read_events(str(out), numbered=True)[-1].finding.code == "KL223"
    assert read_events(str(out)) == [Stage("load"), Done()]  # a file nobody numbered is read as it is


def test_jobs_events_sent_through_the_channel_cannot_be_taken_back(tmp_path):
    """The child's events go through a Unix socket its parent listens on: the parent keeps every line sent, also
    when the sender then wants them gone; a channel nobody connected to closes at once."""
    import time
    from kernel_lsp.run.child import open_events
    from kernel_lsp.run.client import EventChannel
    channel = EventChannel(str(tmp_path), "events")
    assert channel.path.endswith(".sock")
    events = [Stage("load"), FindingEvent(Finding("/a.py", Span(1, 0, 1, 1), Severity.ERROR, "KL200", "wrong")), Done()]
    with open_events(channel.path) as out:
        w = EventWriter(out, numbered=True)
        for e in events:
            w.emit(e)
    channel.close()
    assert not os.path.exists(channel.path)  # one connection taken, then the name is gone
    assert channel.events() == events
    idle = EventChannel(str(tmp_path), "idle")
    start = time.monotonic()
    idle.close()
    assert time.monotonic() - start < 2 and idle.events() == []
