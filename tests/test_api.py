"""The batch API (kernel_lsp/api.py): 50 corpus cases given as sources get the verdict and the codes that
`kernel-lsp check --format json` gives the same files; results stream with their index; an item never writes
into the caller's folder; a bad option is an "error" result, not an exception."""

from __future__ import annotations

import json
import os


from kernel_lsp.api import Item, Result, evaluate
from kernel_lsp.config import Settings
from tests.conftest import CORPUS

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


def fifty_cases(local: list) -> list:
    """25 buggy and 20 correct single-file cases, and the 5 KernelBench pairs (their problem given as source), of
    the CPU cases the session's local check ran."""
    singles = sorted(p for p in local if p.parent == CORPUS)
    bugs = [p for p in singles if p.name.startswith("bug_")][:25]
    oks = [p for p in singles if p.name.startswith("ok_")][:20]
    pairs = sorted(p for p in local if p.name == "impl.py" and p.parent.name.startswith("kb_"))
    cases = bugs + oks + pairs
    assert len(cases) == 50
    return cases


def item_of(path) -> Item:
    if path.name == "impl.py":
        return Item(path.read_text(), reference=(path.parent / "problem.py").read_text(), name="impl.py")
    return Item(path.read_text(), name=path.name)


def test_api_fifty_items_get_the_verdicts_and_codes_of_check(corpus_local):
    local, doc = corpus_local  # `check` of these files, with a timeout of 300 s as here (CORPUS_FLAGS)
    cases = fifty_cases(local)
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
    assert results[1].verdict == "unverified" and results[1].findings == []  # no Triton kernel: nothing verified
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
