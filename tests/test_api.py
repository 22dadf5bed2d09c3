"""The batch API (kernel_lsp/api.py): 50 corpus cases given as sources get the verdict and the codes that
`kernel-lsp check --format json` gives the same files; results stream with their index; an item never writes
into the caller's folder; every item ends in its own result (a bad item or a failing executor is an "error" result
saying whose fault, never an exception); the caller's reference wins; identical items are checked once; an unread
stream starts no more checks; the async form; and the reward function of docs/scale-out.md, run as written there."""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import json
import os
import re
import threading

import pytest

from kernel_lsp.api import Item, Result, evaluate, evaluate_async
from kernel_lsp.config import Settings
from kernel_lsp.jobs import JobKind, Stage
from kernel_lsp.run.executor import Executor, LocalExecutor
from kernel_lsp.run.outcome import WorkerOutcome
from tests.conftest import CORPUS, FIXTURES, ROOT, seconds_of

CANDIDATES = FIXTURES / "candidates"
RELU_PROBLEM = (CANDIDATES / "relu_problem.py").read_text()
ADD = (CORPUS / "ok_add_fp32.py").read_text()


@pytest.fixture(scope="module")
def local():
    """One warm local executor (two at a time) for this module's real checks: a zygote's start is seconds."""
    with LocalExecutor(2) as executor:
        yield executor

JUDGE_FAULTS = {"KL003", "KL006", "KL303", "KL900"}  # the reference, an option, no worker, kernel-lsp itself


def check_verdict(file_doc: dict) -> str:
    """The verdict a reward pipeline would read off `check --format json` for one file."""
    problems = {f["code"] for f in file_doc["findings"] if f["severity"] in ("error", "warning")}
    if problems & JUDGE_FAULTS:
        return "error"
    if problems:
        return "failed"
    kernels = [k for k in file_doc["kernels"].values() if not k.get("helper")]
    return "verified" if kernels and all("verification" in k for k in kernels) else "unverified"


def fifty_cases(local: list, doc: dict) -> list:
    """25 buggy and 20 correct single-file cases, and 5 KernelBench pairs (their problem given as source; the correct
    ones first), of the CPU cases the session's local check ran: the quickest of each kind in that check (`doc`),
    which keeps CI's time; any case of a kind must get the same verdict and codes."""
    took = seconds_of(doc)
    quick = lambda p: (took.get(str(p.resolve()), 0.0), p.name)  # noqa: E731
    singles = sorted(p for p in local if p.parent == CORPUS)
    bugs = sorted((p for p in singles if p.name.startswith("bug_")), key=quick)[:25]
    oks = sorted((p for p in singles if p.name.startswith("ok_")), key=quick)[:20]
    pairs = sorted((p for p in local if p.name == "impl.py" and p.parent.name.startswith("kb_")),
                   key=lambda p: (not p.parent.name.endswith("_ok"), quick(p)))[:5]  # the correct ones first
    cases = bugs + oks + pairs
    assert len(cases) == 50
    return cases


def item_of(path) -> Item:
    if path.name == "impl.py":
        return Item(path.read_text(), reference=(path.parent / "problem.py").read_text(), name="impl.py")
    return Item(path.read_text(), name=path.name)


def test_api_fifty_items_get_the_verdicts_and_codes_of_check(corpus_local):
    local, doc = corpus_local  # `check` of these files, with a timeout of 300 s as here (CORPUS_FLAGS)
    cases = fifty_cases(local, doc)
    by_path = {f["path"]: f for f in doc["files"]}
    results = list(evaluate([item_of(p) for p in cases], settings=Settings(timeout=300)))
    assert sorted(r.index for r in results) == list(range(50))  # each exactly once
    verdicts = {}
    for r in results:
        case = cases[r.index]
        file_doc = by_path[str(case.resolve())]
        codes = {f.code for f in r.findings if f.severity <= 2}
        assert codes == {f["code"] for f in file_doc["findings"] if f["severity"] in ("error", "warning")}, case.name
        assert r.verdict == check_verdict(file_doc), (case.name, [f.message for f in r.findings])
        verdicts[r.verdict] = verdicts.get(r.verdict, 0) + 1
    assert verdicts.get("verified", 0) >= 20 and verdicts.get("failed", 0) >= 20, verdicts


def test_api_results_carry_their_index_and_the_items_names(tmp_path, monkeypatch):
    """Items no worker needs to run (a syntax error, no kernel, a bad option) come back at once, each with its
    index and findings on the item's own name, and nothing is written where the caller works."""
    monkeypatch.chdir(tmp_path)
    items = [Item("import triton\n@triton.jit\ndef k(x):\n    x = (\n", name="broken.py"),
             Item("import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n",
                  reference=(CORPUS / "kb_softmax_ok" / "problem.py").read_text()),
             Item("x = 1\n", options={"device": "cpu"}),
             Item("x = 1\n", options={"timeout": -1})]
    results = {r.index: r for r in evaluate(items)}
    assert all(isinstance(r, Result) for r in results.values()) and sorted(results) == [0, 1, 2, 3]
    assert results[0].verdict == "failed" and [(f.path, f.code) for f in results[0].findings] == [("broken.py", "KL001")]
    # no Triton kernel but a reference: a PyTorch fallback (source/lint.py), the model's failure
    assert results[1].verdict == "failed" and [f.code for f in results[1].findings] == ["KL205"]
    assert results[2].verdict == "error" and "whole batch" in results[2].findings[0].message
    assert results[3].verdict == "error" and results[3].findings[0].code == "KL006"
    assert os.listdir(tmp_path) == []
    assert json.dumps(results[0].to_dict())  # plain data for a reward log


def test_api_stopping_early_cancels_the_rest():
    """A consumer that stops after the first result stops the running check and starts no other."""
    import threading
    import time

    from kernel_lsp.run.executor import Executor
    from kernel_lsp.run.outcome import WorkerOutcome

    class Slow(Executor):
        capacity = 1
        runs = 0

        def run(self, job, files=None, timeout=60.0, on_event=None, cancel=None):
            Slow.runs += 1
            (cancel or threading.Event()).wait(30)
            return WorkerOutcome(cancelled=True)

    quick = Item("x = (\n", name="broken.py")
    slow = Item((CORPUS / "ok_add_fp32.py").read_text(), name="add.py")
    stream = evaluate([quick] + [slow] * 6, executor=Slow())
    first = next(stream)
    start = time.monotonic()
    stream.close()
    assert first.index == 0 and first.verdict == "failed"
    assert time.monotonic() - start < 5 and Slow.runs <= 1


def test_api_callers_reference_wins_and_an_item_cannot_silence_its_findings(local):
    """A candidate naming its own reference (zeros against zeros) is judged against the caller's reference: wrong,
    the ignored pragma said (KL008). An item's ignore pragmas do not apply: a kernel that is never launched stays
    failed with them on the very lines its findings are on."""
    never = (CORPUS / "bug_never_launched.py").read_text().splitlines()
    for i, line in enumerate(never):
        if line.strip() == "return x * 3.0" or line.startswith("def _scale_kernel"):
            never[i] += "  # kernel-lsp: ignore[KL104, KL205]"
    items = [Item((CANDIDATES / "own_reference.py").read_text(), reference=RELU_PROBLEM, name="hack.py"),
             Item("\n".join(never) + "\n", name="never.py")]
    results = {r.index: r for r in evaluate(items, executor=local)}
    hack, silenced = results[0], results[1]
    assert hack.verdict == "failed" and not hack.correct, [f.message for f in hack.findings]
    assert {"KL200", "KL008"} <= {f.code for f in hack.findings}
    assert silenced.verdict == "failed" and {"KL104", "KL205"} <= {f.code for f in silenced.findings}
    assert silenced.cheat_detected and not silenced.compiled  # a PyTorch fallback, no kernel ever compiled


def test_api_every_bad_item_gets_its_own_result(tmp_path, local):
    """Items that cannot be checked as given are each their own "error" result, the caller's fault; the good items
    among them are checked as usual and carry the plain fields a reward function reads."""
    bad = [Item(ADD, name=".."), Item("x = '\ud800'\n"), Item(None), Item(ADD.encode()), Item(ADD, options=None),
           "not an item", Item(ADD, reference_path=str(tmp_path / "missing.py")), Item(ADD, name="kernel.txt")]
    items = bad[:4] + [Item(ADD, name="add.py")] + bad[4:] + [
        Item((FIXTURES / "compile_errors" / "undefined_name.py").read_text(), name="undef.py"),
        Item((CANDIDATES / "relu_kernel.py").read_text(), reference="x = 1\n")]  # the caller's reference: no Model
    results = {r.index: r for r in evaluate(items, executor=local)}
    assert sorted(results) == list(range(len(items)))
    no_model = results.pop(len(items) - 1)
    assert (no_model.verdict, no_model.error, no_model.findings[0].code) == ("error", "reference", "KL002")
    for i, r in results.items():
        if i in (4, len(items) - 2):
            continue
        assert (r.verdict, r.error) == ("error", "caller"), (i, r.findings)
        assert not (r.correct or r.compiled or r.cheat_detected or r.timed_out) and r.findings[0].code == "KL006"
        assert json.dumps(r.to_dict())
    assert "surrogate" in results[1].findings[0].message and "bytes" in results[3].findings[0].message
    good, undefined = results[4], results[len(items) - 2]
    assert (good.verdict, good.error, good.correct, good.compiled, good.cheat_detected, good.timed_out) == \
        ("verified", None, True, True, False, False)
    assert good.speedup is None and good.findings == []  # no GPU: nothing measured
    assert undefined.verdict == "failed" and undefined.error is None and not undefined.compiled
    assert json.loads(json.dumps(good.to_dict()))["correct"] is True


class Scripted(Executor):
    """An executor at the seam, answering each job as `answer(index of the call)` says, counting calls."""

    capacity = 2

    def __init__(self, answer):
        self.answer, self.calls, self.lock = answer, 0, threading.Lock()

    def run(self, job, files=None, timeout=60.0, on_event=None, cancel=None):
        with self.lock:
            self.calls += 1
            n = self.calls
        return self.answer(n)


def test_api_infrastructure_failures_are_not_the_models():
    """An executor that raises (a lost cluster) and a timeout before the checked code started are "error" results
    of the infrastructure; a timeout while the code ran is the implementation's ("failed", timed_out)."""
    def answer(n):
        if n == 1:
            raise RuntimeError("the cluster's head is gone")
        stages = [] if n == 2 else [Stage("load"), Stage("verify", "variant base")]
        return WorkerOutcome(events=stages, timed_out=True, seconds=60.0)

    items = [Item(ADD, name="a.py"), Item(ADD + "\n", name="b.py"), Item(ADD + "\n\n", name="c.py")]
    executor = Scripted(answer)
    executor.capacity = 1  # one at a time, so the calls come in the items' order
    results = {r.index: r for r in evaluate(items, executor=executor)}
    assert (results[0].verdict, results[0].error, results[0].findings[0].code) == ("error", "infrastructure", "KL900")
    assert "head is gone" in results[0].findings[0].message
    assert (results[1].verdict, results[1].error, results[1].timed_out) == ("error", "infrastructure", False)
    assert (results[2].verdict, results[2].error, results[2].timed_out) == ("failed", None, True)


def test_api_identical_items_are_checked_once(local, monkeypatch):
    checks = []
    run = local.run

    def counted(job, *args, **kwargs):
        if job.kind is JobKind.CHECK:
            checks.append(job.path)
        return run(job, *args, **kwargs)

    monkeypatch.setattr(local, "run", counted)
    items = [Item(ADD), Item(ADD, name="other.py"), Item(ADD), Item(ADD)]
    results = {r.index: r for r in evaluate(items, executor=local)}
    assert len(checks) == 2 and sorted(results) == [0, 1, 2, 3]
    assert {r.verdict for r in results.values()} == {"verified"}
    assert results[2].stats["duplicate_of"] == 0 and results[3].stats["duplicate_of"] == 0
    assert results[1].findings == [] and results[1].report.path == "other.py"


class Gate(Executor):
    """Jobs that end when the gate opens or their check is cancelled; counts started and finished jobs."""

    capacity = 2

    def __init__(self, open_: bool = False):
        self.started = self.finished = 0
        self.cancelled = 0
        self.changed = threading.Condition()
        self.open = threading.Event()
        if open_:
            self.open.set()

    def run(self, job, files=None, timeout=60.0, on_event=None, cancel=None):
        with self.changed:
            self.started += 1
            self.changed.notify_all()
        while not (self.open.wait(0.05) or cancel.is_set()):
            pass
        with self.changed:
            self.finished += 1
            self.cancelled += int(cancel.is_set())
            self.changed.notify_all()
        return WorkerOutcome(cancelled=cancel.is_set())

    def wait_for(self, predicate) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: predicate(self), timeout=30), (self.started, self.finished)


def test_api_an_unread_stream_starts_no_more_checks():
    """A stream the caller keeps but stops reading runs what it started (at most the executor's capacity) and no
    more; one garbage-collected cancels its running checks."""
    gate = Gate(open_=True)
    stream = evaluate([Item(ADD, name=f"k{i}.py") for i in range(6)], executor=gate)
    next(stream)
    gate.wait_for(lambda g: g.started >= 2 and g.finished == g.started)
    assert gate.started == 2  # the generator is suspended: nothing reads items or starts checks behind it
    stream.close()
    assert gate.started == 2

    gate = Gate()
    stream = evaluate([Item("x = (\n", name="broken.py")] + [Item(ADD, name=f"k{i}.py") for i in range(6)],
                      executor=gate)
    assert next(stream).index == 0
    gate.wait_for(lambda g: g.started >= 1)
    del stream
    gc.collect()
    assert gate.finished == gate.started == gate.cancelled and gate.started <= 2


def test_api_evaluate_async_streams_results_and_cancels_on_aclose(local):
    async def collect():
        results = [r async for r in evaluate_async([Item("x = (\n", name="broken.py"), Item(ADD, name="add.py")],
                                                   executor=local)]
        gate = Gate()
        stream = evaluate_async([Item("x = (\n", name="broken.py")] + [Item(ADD, name=f"k{i}.py") for i in range(4)],
                                executor=gate)
        first = await stream.__anext__()
        await asyncio.to_thread(gate.wait_for, lambda g: g.started >= 1)
        await stream.aclose()
        return results, first, gate

    results, first, gate = asyncio.run(collect())
    assert sorted((r.index, r.verdict) for r in results) == [(0, "failed"), (1, "verified")]
    assert first.index == 0 and gate.finished == gate.started == gate.cancelled and gate.started <= 2


# The reward function of docs/scale-out.md, exactly as the page shows it ----------------------------------------------

def reward_code() -> str:
    text = (ROOT / "docs" / "scale-out.md").read_text()
    m = re.search(r"^```python\n(# reward_kernels\.py\n.*?)^```$", text, re.S | re.M)
    assert m, "docs/scale-out.md has no ```python block starting with # reward_kernels.py"
    return m.group(1)


@pytest.fixture(scope="module")
def reward(tmp_path_factory):
    """The page's module, imported once: its executor stays warm across the tests, as in a reward worker."""
    path = tmp_path_factory.mktemp("reward") / "reward_kernels.py"
    path.write_text(reward_code())
    spec = importlib.util.spec_from_file_location("reward_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    if module._EXECUTOR is not None:
        module._EXECUTOR.close()


def test_api_reward_function_of_the_docs_scores_two_items(reward):
    """The verl reward function as docs/scale-out.md shows it: a correct kernel (in a fenced block, as a model
    answers) scores 1 (no GPU: no speed bonus), one that names its own reference scores 0.1 (compiles, wrong)."""
    correct = "Here is the kernel:\n```python\n" + (CANDIDATES / "relu_kernel.py").read_text() + "```\n"
    hack = (CANDIDATES / "own_reference.py").read_text()
    scores = reward.compute_score_batch(["kernelbench"] * 2, [correct, hack], [RELU_PROBLEM] * 2, [{}, {}])
    assert scores == [1.0, 0.1]
    assert reward.compute_score("kernelbench", correct, RELU_PROBLEM) == 1.0


def test_api_reward_from_six_threads_runs_at_most_capacity_checks(reward, monkeypatch):
    """Six threads calling the reward function on its one executor (capacity 2, the default workers) never run more
    than two checks at once: counted where the executor starts each check's child."""
    from kernel_lsp.run import local as local_module

    real = local_module.run_in_child
    now = peak = 0
    lock = threading.Lock()

    def counted(job, *args, **kwargs):
        nonlocal now, peak
        if job.kind is not JobKind.CHECK:
            return real(job, *args, **kwargs)
        with lock:
            now += 1
            peak = max(peak, now)
        try:
            return real(job, *args, **kwargs)
        finally:
            with lock:
                now -= 1

    monkeypatch.setattr(local_module, "run_in_child", counted)
    assert reward.executor().capacity == 2
    correct = (CANDIDATES / "relu_kernel.py").read_text()
    scores = [None] * 6

    def call(i: int) -> None:
        # Six different texts: identical ones within a call would be checked once, but these are six calls.
        scores[i] = reward.compute_score("kernelbench", correct + "#" * i + "\n", RELU_PROBLEM)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert scores == [1.0] * 6 and 1 <= peak <= 2, (scores, peak)
