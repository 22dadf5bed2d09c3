"""The `runner` setting: jobs go to `kernel-lsp worker` started through any command, over its stdio, with the
files they need shipped along (no shared file system). Tested with runner commands that start a worker on this
machine, including one that cannot see the workspace at all, one that dies mid-job, and one that cannot start."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys

import pytest

from tests.conftest import CORPUS, FIXTURES, check_json, codes_of, run_cli

WORKER = [sys.executable, "-m", "kernel_lsp.cli", "worker"]


def _unshare_works() -> bool:
    try:
        return subprocess.run(["unshare", "-m", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def test_runner_gives_the_same_findings_as_a_local_check(tmp_path):
    case = shutil.copy(CORPUS / "bug_relu_drops_nan.py", tmp_path / "relu.py")
    _, local = check_json(case, extra=("--no-cache",))
    _, remote = check_json(case, extra=("--no-cache", "--runner", shlex.join(WORKER)))
    strip = lambda doc: sorted((d["code"], d["range"]["line"], d["message"]) for d in doc["diagnostics"])  # noqa: E731
    assert strip(remote) == strip(local) and codes_of(remote) == {"KL201"}
    assert remote["files"][0]["path"] == str(case.resolve())


@pytest.mark.skipif(not _unshare_works(), reason="needs unshare -m (a mount namespace) to hide the workspace")
def test_runner_needs_no_shared_file_system(tmp_path):
    """The worker runs in a mount namespace where the workspace folder is an empty tmpfs: it sees only what the
    job ships (the kernel, its reference and the modules they import)."""
    ws = tmp_path / "ws"
    shutil.copytree(CORPUS / "kb_leaky_relu_nan", ws / "case")
    runner = ["unshare", "-m", "sh", "-c", f"mount -t tmpfs none {shlex.quote(str(ws))} && exec {shlex.join(WORKER)}"]
    _, doc = check_json(ws / "case" / "impl.py", extra=("--no-cache", "--runner", shlex.join(runner)))
    assert codes_of(doc) == {"KL201"}, doc["diagnostics"]
    assert all("kernel-lsp-job-" not in d["message"] for d in doc["diagnostics"])  # the worker's paths map back


def test_runner_dying_mid_job_is_a_diagnostic_and_the_next_file_still_runs(tmp_path):
    shutil.copy(FIXTURES / "faults" / "segfault.py", tmp_path / "a_segfault.py")
    shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "b_good.py")
    proc = run_cli("check", str(tmp_path), "--format", "json", "--no-cache", "--runner", shlex.join(WORKER))
    assert proc.returncode == 1, proc.stderr
    import json
    by_file = {f["path"].rsplit("/", 1)[-1]: f["findings"] for f in json.loads(proc.stdout)["files"]}
    (crash,) = by_file["a_segfault.py"]
    assert crash["code"] == "KL300" and "SIGSEGV" in crash["message"]
    assert by_file["b_good.py"] == []  # a fresh worker took the next file


@pytest.mark.parametrize("runner, says", [
    ("/nonexistent/kernel-lsp-worker", "could not be started: No such file or directory"),
    ("sh -c 'echo ssh: Could not resolve hostname gpu-box >&2; exit 255'",
     "exited with status 255 before it was ready: ssh: Could not resolve hostname gpu-box"),
])
def test_runner_that_cannot_start_is_one_clear_finding(tmp_path, runner, says):
    case = shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "add.py")
    _, doc = check_json(case, extra=("--no-cache", "--runner", runner))
    (d,) = doc["diagnostics"]
    assert d["code"] == "KL303" and says in d["message"] and d["message"].startswith("no worker to run this file")
