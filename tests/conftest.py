"""Shared test helpers: run the real CLI in a subprocess, write kernel files, and skip GPU tests on CPUs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
FIXTURES = ROOT / "tests" / "fixtures"


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 600):
    """Run `kernel-lsp ARGS` as a user would; returns the CompletedProcess."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "kernel_lsp.cli", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def check_json(*paths: str | Path, extra: tuple[str, ...] = (), cwd: Path | None = None) -> tuple[int, dict]:
    proc = run_cli("check", *map(str, paths), "--format", "json", *extra, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


# How the corpus is checked wherever tests compare against it: a generous timeout, so a case that is slow in the
# interpreter on a loaded machine does not time out on one side only.
CORPUS_FLAGS = ("--format", "json", "--no-cache", "--jobs", "2", "--timeout", "300")


# The corpus cases that take longest to check on the CPU (about 40 s each on CI's two cores, the next one 12 s).
SLOWEST_CASES = ("ok_persistent_polyval.py", "ok_sigmoid_mean_serial.py")


def seconds_of(doc: dict) -> dict[str, float]:
    """Each file's seconds in a `check --format json` report (its worker's timeline), by path."""
    return {f["path"]: float((f.get("stats") or {}).get("seconds") or 0.0) for f in doc["files"]}


@pytest.fixture(scope="session")
def corpus_local():
    """(paths, JSON) of one local `kernel-lsp check` of every CPU case of tests/corpus, shared by the tests that
    compare against it (the cases' expectations, the Ray executor's JSON, the batch API's verdicts): the corpus
    is checked once per session."""
    from tests.corpus.report import cases
    paths = cases(gpu=False)
    # The cases that take longest (tens of seconds in the interpreter) go first, so that two at a time the check
    # does not end on one of them alone.
    ordered = [p for p in paths if p.name in SLOWEST_CASES] + [p for p in paths if p.name not in SLOWEST_CASES]
    # Alone, about 140 s on two cores; CI runs it beside two other pytest processes.
    proc = run_cli("check", *map(str, ordered), *CORPUS_FLAGS, cwd=CORPUS, timeout=1500)
    assert proc.returncode in (0, 1), proc.stderr
    return paths, json.loads(proc.stdout)


def corpus_file(corpus_local, name: str) -> dict:
    """One case's file report from the session's local check of the corpus (`corpus_local`), by its path under
    tests/corpus: the tests that read what one case's check says take it from there instead of checking it again."""
    _, doc = corpus_local
    (report,) = [f for f in doc["files"] if f["path"] == str((CORPUS / name).resolve())]
    return report


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def codes_of(doc: dict, severities=("error", "warning")) -> set[str]:
    return {d["code"] for d in doc["diagnostics"] if d["severity"] in severities}


def errors_beyond_speed(doc: dict) -> dict[str, set[str]]:
    """Per file of a `check --format json` report, its error and warning codes other than the speed verdicts
    (KL400, KL401), which load may move (the GPU tests of checks at once)."""
    return {f["path"]: {d["code"] for d in f["findings"] if d["severity"] in ("error", "warning")
                        and d["code"] not in ("KL400", "KL401")} for f in doc["files"]}


def speed_verdicts(doc: dict) -> dict[tuple, str]:
    """(file, kernel, baseline) -> perf_rules.verdict of its speedup ("slower", "faster", "inconclusive"), for every
    speedup a `check --format json` report measured."""
    from kernel_lsp.checker.measure.perf_rules import verdict
    from kernel_lsp.model import Speedup
    return {(f["path"], name, s["against"]): verdict(Speedup.from_dict(s)) for f in doc["files"]
            for name, facts in f.get("kernels", {}).items()
            for s in (facts.get("measurement") or {}).get("speedups", [])}


def copy_case(name: str, dest: Path) -> Path:
    src = CORPUS / name
    if src.is_dir():
        shutil.copytree(src, dest / name)
        return dest / name
    shutil.copy(src, dest / name)
    return dest / name


def pytest_collection_modifyitems(config, items):
    try:
        import torch
        has_cuda = torch.cuda.is_available()
    except Exception:
        has_cuda = False
    if not has_cuda:
        skip = pytest.mark.skip(reason="needs a CUDA GPU")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
