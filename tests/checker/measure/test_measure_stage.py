"""The measure stage's plumbing, run on a CPU in a subprocess under Triton's interpreter with the host clock and
made-up ceilings: every step (baselines, interleaving, output check, roofline, findings, facts) without a GPU.
The product never does this (a CPU measurement is never reported); the numbers here mean nothing."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import CORPUS, ROOT

SCRIPT = r'''
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
from pathlib import Path
from kernel_lsp.check import kernel_refs
from kernel_lsp.source.discover import discover_source
from kernel_lsp.source.link import link_file
from kernel_lsp.checker.player import Player
from kernel_lsp.checker.problem.loader import load_problem
from kernel_lsp.checker.measure.stage import measure_problem
from kernel_lsp.checker.reporter import Reporter
from kernel_lsp.checker.measure.timing import HostClock
from kernel_lsp.jobs import CheckJob, FindingEvent, KernelEvent, MeasureOptions, SandboxOptions
from kernel_lsp.model import Ceiling, Ceilings
from kernel_lsp.run.players import PlayerServer
from kernel_lsp.run.protocol import EventWriter, read_events

path = Path(sys.argv[1]).resolve()
text = path.read_text()
link = link_file(path, text).link
job = CheckJob(str(path), link.to_spec(), kernel_refs(discover_source(text).kernels), link.anchor,
               measure=MeasureOptions(enabled=True, compile=False, budget_s=0.05, flops=sys.argv[2] or None))
wire = sys.argv[3]
sink = EventWriter(open(wire, "w"))
rep = Reporter(sink, job.path, job.kernels, job.anchor)
server = PlayerServer("cpu")
player = Player(server.fork(SandboxOptions()), "cpu")
problem = load_problem(job.link, job.path, 0, player=player, keep={sys.argv[2]} if sys.argv[2] else set())
player.call(problem.implementation, problem.make_inputs(0))
exec(sys.argv[4])  # a test's extra setup (a baseline registered for the run)
ceilings = Ceilings("Made-up GPU", "0", 1 << 20, [Ceiling("copy", 1000.0, 0.01), Ceiling("matmul fp32", 10.0, 0.01),
                                                   Ceiling("matmul tf32", 20.0, 0.01)])
m = measure_problem(problem, player, rep, job, clock=HostClock(), ceilings=ceilings)
player.close()
server.close()
events = read_events(wire)  # through the wire, as the parent reads them
print(json.dumps({"findings": [e.finding.to_dict() for e in events if isinstance(e, FindingEvent)],
                  "kernels": {e.name: e.facts.to_dict() for e in events if isinstance(e, KernelEvent)},
                  "measurement": m.to_dict() if m else None}))
'''


def run(case, flops: str = "", extra: str = "") -> dict:
    import tempfile
    wire = tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False).name
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(case), flops, wire, extra], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_measure_stage_runs_every_step_and_reports_typed_facts():
    out = run(CORPUS / "ok_add_fp32.py")
    m = out["measurement"]
    assert [s["side"] for s in m["sides"]] == ["triton", "eager"] and all(s["samples"] >= 10 for s in m["sides"])
    assert m["speedups"][0]["against"] == "eager" and m["speedups"][0]["low"] <= m["speedups"][0]["ratio"]
    assert m["provenance"]["gpu"].startswith("no GPU") and m["provenance"]["timer"] in ("cuda events", "host clock")
    r = m["roofline"]
    assert r["bytes"] == 3 * 1000 * 4 and r["bytes_source"] == "inputs and outputs" and r["flops_source"] == "none"
    assert r["bound"] == "memory" and r["ceiling"] == "copy"
    codes = [f["code"] for f in out["findings"]]
    assert "KL402" in codes and set(codes) <= {"KL400", "KL401", "KL402", "KL404", "KL406"}
    summary = next(f for f in out["findings"] if f["code"] == "KL402")
    assert summary["message"] == m["summary"] and summary["data"]["provenance"]["gpu"] == m["provenance"]["gpu"]
    assert out["kernels"]["_add_kernel"]["measurement"] == m  # the same record after the wire


BASELINES = '''
from kernel_lsp.checker.measure.baselines import baseline

@baseline("eager twice", "the reference called twice", "the reference called twice", "KL400")
def _twice(ctx):
    return [lambda c=c: (ctx.ref(*c), ctx.ref(*c))[1] for c in ctx.copies()]

@baseline("broken", "a broken baseline", "the broken baseline", "KL400", may_fail=True)
def _broken(ctx):
    raise RuntimeError("no such backend")
'''


def test_measure_stage_times_every_registered_baseline_and_says_which_could_not_be_built():
    """A baseline is one registered builder (baselines.py): the stage times it beside the others, with its speedup;
    one whose builder raises is left out with a KL407 naming it and what the rest is compared with."""
    out = run(CORPUS / "ok_add_fp32.py", extra=BASELINES)
    m = out["measurement"]
    assert [s["side"] for s in m["sides"]] == ["triton", "eager", "eager twice"]
    assert [s["against"] for s in m["speedups"]] == ["eager", "eager twice"]
    (f,) = [f for f in out["findings"] if f["code"] == "KL407"]
    assert f["message"] == ("the broken baseline failed (RuntimeError: no such backend); compared with PyTorch "
                            "eager, the reference called twice only")


def test_measure_stage_declared_flops_come_from_the_reference_module(tmp_path):
    case = tmp_path / "add.py"
    case.write_text((CORPUS / "ok_add_fp32.py").read_text() + "\n\ndef work():\n    return 1000\n")
    r = run(case, "work")["measurement"]["roofline"]
    assert r["flops"] == 1000.0 and r["flops_source"] == "declared"


def test_measure_stage_refuses_a_result_replayed_once_an_address_repeats():
    """A cache that replays once an input's address has been seen eight times is right on the inputs being timed
    (and would be timed at its copy's speed); the timed buffers, refilled in place with new values, show it stale."""
    out = run(CORPUS / "bug_cache_replays_after_nine_calls.py")
    (f,) = [f for f in out["findings"] if f["code"] == "KL405"]
    assert "after the timed buffers were refilled in place with new values" in f["message"], f["message"]
    assert out["measurement"] is None


def test_only_a_verifier_warning_on_out_of_distribution_inputs_lets_the_kernel_be_timed():
    """An out-of-distribution warning (rmsprop's square average made negative) leaves the kernel verified on the
    problem's own inputs, so it is timed; any other verifier warning or an error stops the timing."""
    from kernel_lsp.checker.reporter import Reporter
    from kernel_lsp.jobs import ListSink
    from kernel_lsp.model import Severity, Span

    rep = Reporter(ListSink(), "k.py", [], Span(0))
    rep.add("KL201", "a NaN where the truth has none; only on inputs outside the problem's own distribution",
            severity=Severity.WARNING, outside_distribution=True)
    rep.add("KL104", "kernel k is not exercised", severity=Severity.INFO)
    assert rep.unverified_because() is None
    rep.add("KL201", "a NaN where the truth has none", severity=Severity.WARNING)
    assert rep.unverified_because() == "KL201 (warning) must be fixed first"
