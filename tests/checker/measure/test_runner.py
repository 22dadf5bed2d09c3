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


FAKE_WORKER = r'''
import json, os, sys
from kernel_lsp.run.protocol import PROTOCOL
print(json.dumps({"type": "WorkerReady", "pid": os.getpid(), "device": "cuda", "gpu": "fake", "protocol": PROTOCOL}),
      flush=True)
for line in sys.stdin:
    message = json.loads(line)
    job = message["job"]
    finding = {"path": job["path"], "range": {"line": 0, "col": 0, "end_line": 0, "end_col": 1}, "severity": "info",
               "code": "KL402", "message": f"ran in {os.getpid()}", "source": "kernel-lsp.measure", "data": {}}
    job_id = message["id"]
    print(json.dumps({"type": "JobEvent", "id": job_id, "event": {"event": "finding", "finding": finding}}), flush=True)
    print(json.dumps({"type": "JobEvent", "id": job_id, "event": {"event": "done"}}), flush=True)
    print(json.dumps({"type": "JobEnd", "id": job_id, "cancelled": False, "exiting": True}), flush=True)
    sys.exit(3)  # as a worker does after a GPU fault lost its CUDA context
'''

OLD_WORKER = r'''
import json, os, sys
print(json.dumps({"ready": {"pid": os.getpid(), "device": "cuda", "gpu": "fake"}}), flush=True)
sys.stdin.read()
'''


def test_runner_worker_that_retires_after_a_job_is_replaced_for_the_next(tmp_path):
    """A worker that ends itself after a job (a lost CUDA context) is not handed the next job: a new one is."""
    from kernel_lsp.check import CheckRequest, check_file
    from kernel_lsp.config import Settings
    from kernel_lsp.run.executor import WorkerPoolExecutor

    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE_WORKER)
    case = shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "add.py")
    with WorkerPoolExecutor.runners([[sys.executable, str(script)]]) as executor:
        reports = [check_file(CheckRequest(case, Settings(verification=False), tmp_path, executor=executor))
                   for _ in range(2)]
    messages = [[f.message for f in r.findings] for r in reports]
    assert all(len(m) == 1 and m[0].startswith("ran in ") for m in messages), messages
    assert messages[0] != messages[1]  # two processes


def test_runner_of_another_protocol_version_is_refused_with_what_to_install(tmp_path):
    """A worker of kernel-lsp 0.1 (untyped messages) behind a runner: refused when it says it is ready, with a
    message that names both versions, instead of misreading its messages later."""
    script = tmp_path / "old_worker.py"
    script.write_text(OLD_WORKER)
    case = shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "add.py")
    _, doc = check_json(case, extra=("--no-cache", "--runner", shlex.join([sys.executable, str(script)])))
    (d,) = doc["diagnostics"]
    assert d["code"] == "KL303" and "speaks protocol 1" in d["message"], d["message"]
    assert "install the same kernel-lsp version" in d["message"]


def _timings_of(*flags: str) -> tuple[float, list[tuple[float, str]]]:
    """`check ok_add_fp32.py --no-cache --timings FLAGS`: the file's total seconds and its (seconds, label) rows."""
    import re
    proc = run_cli("check", str(CORPUS / "ok_add_fp32.py"), "--no-cache", "--timings", *flags)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("tests/corpus/ok_add_fp32.py: "))
    total = float(re.search(r": ([\d.]+) s$", lines[head]).group(1))
    rows = [re.match(r"\s+([\d.]+) s  (.*)", ln) for ln in lines[head + 1:]]
    return total, [(float(m.group(1)), m.group(2)) for m in rows if m]


def test_timings_say_where_the_time_went_worker_start_included():
    """`check --timings`: the worker's start (its imports, timed by the worker itself), then each stage in the
    order it ran, each with its seconds, adding up to the file's total."""
    total, rows = _timings_of("--runner", shlex.join(WORKER))
    labels = [label for _, label in rows]
    assert labels[0].startswith("worker start (player server ") and "import torch " in labels[0]
    assert "import triton and kernel-lsp" in labels[0]  # the players' server starts first, beside torch's import
    assert labels[1:3] == ["load", "capture: the problem's own inputs"] and labels[3].startswith("verify: ")
    # Under the CPU interpreter the variants run first (a failure shows sooner), then the compile for the targets.
    first_variant = next(i for i, label in enumerate(labels) if label.startswith("verify: variant seed-1"))
    assert any(label.startswith("compile: ") for label in labels[first_variant:])
    assert abs(sum(s for s, _ in rows) - total) < 0.05 * total + 0.05


def test_timings_on_the_cpu_show_the_warm_workers_start_apart_from_the_last_stage():
    """A local check on the CPU forks its job from a warm worker (the zygote) that the command starts: the wait for its
    imports is the file's `worker start`, not part of its last stage (where it had read as seconds of the soak)."""
    total, rows = _timings_of("--device", "cpu")
    assert [label for _, label in rows[:2]] == ["worker start", "load"], rows
    start = rows[0][0]
    assert start > 0.5  # at least torch's import
    assert rows[-1][1].startswith("evidence: ") and rows[-1][0] < total - start
    assert abs(sum(s for s, _ in rows) - total) < 0.05 * total + 0.05


DOUBLING = """# kernel-lsp: reference=problem.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _double[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
"""

SCALED = """import torch
import torch.nn as nn
from helper import scale


class Model(nn.Module):
    def forward(self, x):
        return scale(x)


def get_inputs():
    return [torch.randn(4096)]


def get_init_inputs():
    return []
"""


def test_runner_worker_imports_each_files_own_reference_helper(tmp_path):
    """One worker checks both files in turn. Each reference imports `helper` from its own folder; the second found
    the first's module already imported (a long-lived worker kept it) and judged its kernel against the wrong truth:
    a kernel computing x * 2 against a reference computing x * 3 passed, whichever ran first."""
    for name, factor in (("a_right", 2.0), ("b_wrong", 3.0)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "helper.py").write_text(f"def scale(x):\n    return x * {factor}\n")
        (tmp_path / name / "problem.py").write_text(SCALED)
        (tmp_path / name / "impl.py").write_text(DOUBLING)
    _, doc = check_json(tmp_path / "a_right" / "impl.py", tmp_path / "b_wrong" / "impl.py",
                        extra=("--no-cache", "--runner", shlex.join(WORKER)))
    by_folder = {f["path"].rsplit("/", 2)[-2]: {g["code"] for g in f["findings"]} for f in doc["files"]}
    assert by_folder == {"a_right": set(), "b_wrong": {"KL200"}}, doc["diagnostics"]
