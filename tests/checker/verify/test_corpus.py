"""Every corpus case gets exactly the error and warning codes its `# expect:` line names; clean ones get none."""

import re

import pytest

from tests.conftest import CORPUS
from tests.corpus.report import cases, matches


def expected(path) -> dict[str, str | None]:
    """The codes a case expects, each with the severity it must have (`KL201:warning`) or None (error or
    warning). A case with alternatives (`KL220 | KL200 KL201`) expects the first here; test_corpus_case accepts
    any."""
    m = re.search(r"^# expect: (.+)$", path.read_text(), re.M)
    assert m, f"{path} has no # expect: line"
    if m.group(1).strip() == "clean":
        return {}
    first = m.group(1).split("|")[0]
    return {c.split(":")[0]: (c.split(":")[1] if ":" in c else None) for c in first.split()}


def expected_codes(path) -> set[str]:
    return set(expected(path))


CASES = cases(gpu=False)  # the GPU's own cases run in tests/test_gpu.py


@pytest.fixture(scope="module")
def corpus_report(corpus_local):
    paths, doc = corpus_local
    assert paths == CASES
    return {f["path"]: f for f in doc["files"]}


def test_corpus_is_large_and_mixed():
    assert len(CASES) >= 30
    clean = [p for p in CASES if not expected_codes(p)]
    assert len(clean) >= 10 and len(CASES) - len(clean) >= 15


@pytest.mark.parametrize("case", CASES, ids=[str(p.relative_to(CORPUS)) for p in CASES])
def test_corpus_case(corpus_report, case):
    report = corpus_report[str(case.resolve())]
    got = {f["code"] for f in report["findings"] if f["severity"] in ("error", "warning")}
    assert matches(case.read_text(), got), [f["message"] for f in report["findings"]]
    for code, severity in expected(case).items():
        if severity:
            assert {f["severity"] for f in report["findings"] if f["code"] == code} == {severity}
    if not got and "verification" in next(iter(report["kernels"].values()), {}):
        # A clean verdict rests on many variants, not one (each kernel of a dispatch lists the variants it ran on).
        rows = {r["variant"] for k in report["kernels"].values() if "verification" in k
                for r in k["verification"]["variants"]}
        assert len(rows) >= 8, rows


def test_a_catalog_cheat_is_caught_by_any_code_of_its_class():
    """tests/test_gpu.py: a race in the cheat decides between codes of one class, either catches it; a code of
    another class, a missing catch or a clean case is no catch."""
    from tests.corpus.report import caught_by_class
    timing = "# expect: KL406\n"
    assert caught_by_class(timing, {"KL406"}) and caught_by_class(timing, {"KL403"})
    assert caught_by_class(timing, {"KL403", "KL406"})
    assert not caught_by_class(timing, set()) and not caught_by_class(timing, {"KL220"})
    assert not caught_by_class(timing, {"KL403", "KL200"})
    two_faced = "# expect: KL220\n# may-add: KL206\n"
    assert caught_by_class(two_faced, {"KL405"}) and caught_by_class(two_faced, {"KL405", "KL206"})
    assert not caught_by_class(two_faced, {"KL403"})
    assert caught_by_class("# expect: KL221 | KL205 KL104\n", {"KL205", "KL104"})
    assert caught_by_class("# expect: clean\n", set()) and not caught_by_class("# expect: clean\n", {"KL403"})
