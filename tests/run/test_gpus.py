"""`--gpus` (setting `gpus`): one long-lived worker per chosen GPU, files to whichever is free, and the report says
which GPU ran each file. On a CPU machine with fake GPU workers (a script speaking the worker protocol that names
the GPU it was given); the H200 test in tests/test_gpu_measure.py runs the real thing on one GPU."""

from __future__ import annotations

import shutil
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from kernel_lsp.check import CheckRequest, check_file
from kernel_lsp.config import ConfigError, Settings, apply_overrides
from kernel_lsp.jobs import Stage
from kernel_lsp.run import executor as ex
from kernel_lsp.run import local
from tests.conftest import CORPUS, run_cli

FAKE_GPU_WORKER = r'''
import json, os, sys, time
from kernel_lsp.run.protocol import PROTOCOL
print(json.dumps({"type": "WorkerReady", "pid": os.getpid(), "device": "cuda", "gpu": "fake",
                  "protocol": PROTOCOL}), flush=True)
for line in sys.stdin:
    message = json.loads(line)
    time.sleep(0.3)  # long enough that a second file finds this GPU busy
    gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "?")
    finding = {"path": message["job"]["path"], "range": {"line": 0, "col": 0, "end_line": 0, "end_col": 1},
               "severity": "info", "code": "KL402", "message": f"timed on GPU {gpu}", "source": "kernel-lsp.measure",
               "data": {}}
    print(json.dumps({"type": "JobEvent", "id": message["id"], "event": {"event": "finding", "finding": finding}}),
          flush=True)
    print(json.dumps({"type": "JobEvent", "id": message["id"], "event": {"event": "done"}}), flush=True)
    print(json.dumps({"type": "JobEnd", "id": message["id"]}), flush=True)
'''


@pytest.fixture
def fake_gpus(tmp_path, monkeypatch):
    script = tmp_path / "fake_gpu_worker.py"
    script.write_text(FAKE_GPU_WORKER)
    monkeypatch.setattr(ex, "gpu_present", lambda: True)
    monkeypatch.setattr(ex, "visible_gpus", lambda: ["0", "1", "2"])
    monkeypatch.setattr(local, "local_command", lambda device, sandbox=None: [sys.executable, str(script)])
    return tmp_path


def test_gpus_one_worker_per_chosen_gpu_and_files_go_to_the_free_one(fake_gpus):
    files = [shutil.copy(CORPUS / "ok_add_fp32.py", fake_gpus / f"add{i}.py") for i in range(6)]
    settings = apply_overrides(Settings(), {"gpus": "0,2", "verification": False})
    with ex.executor_for(settings) as executor:
        assert [w.name for w in executor.workers.workers] == ["gpu-0", "gpu-2"]
        assert executor.capacity == 2
        with ThreadPoolExecutor(executor.capacity) as pool:
            reports = list(pool.map(lambda f: check_file(CheckRequest(f, settings, fake_gpus, executor=executor)),
                                    files))
    said = {r.findings[0].message for r in reports}
    assert said == {"timed on GPU 0", "timed on GPU 2"}  # both GPUs took files; GPU 1 none
    for r in reports:  # the report names the worker that ran (and timed) each file
        assert r.stats["worker"] == f"gpu-{r.findings[0].message[-1]}"


def test_gpus_all_uses_every_visible_gpu(fake_gpus):
    with ex.executor_for(Settings()) as executor:
        assert [w.name for w in executor.workers.workers] == ["gpu-0", "gpu-1", "gpu-2"]


def test_gpus_several_workers_per_gpu_check_files_at_once(fake_gpus):
    """`gpu-workers = 2`: two long-lived workers per chosen GPU, so two files of one GPU are in flight at once (the
    timing itself is one at a time per GPU: gpu_lease.py, tests/checker/measure/test_gpu_lease.py)."""
    files = [shutil.copy(CORPUS / "ok_add_fp32.py", fake_gpus / f"add{i}.py") for i in range(4)]
    settings = apply_overrides(Settings(), {"gpus": "1", "gpu-workers": 2, "verification": False})
    with ex.executor_for(settings) as executor:
        assert [w.name for w in executor.workers.workers] == ["gpu-1", "gpu-1"] and executor.capacity == 2
        with ThreadPoolExecutor(executor.capacity) as pool:
            reports = list(pool.map(lambda f: check_file(CheckRequest(f, settings, fake_gpus, executor=executor)),
                                    files))
        pids = {w.info.get("pid") for w in executor.workers.workers}
    assert {r.findings[0].message for r in reports} == {"timed on GPU 1"}
    assert len(pids) == 2 and None not in pids  # both workers ran files
    for bad in (0, 17, True, "2"):
        with pytest.raises(ConfigError, match="gpu-workers"):
            apply_overrides(Settings(), {"gpu-workers": bad})



@pytest.mark.parametrize("mib, cores, expected", [
    (["81559"], 16, 3),  # an 80 GB H100 with 16 cores: three
    (["143771"], 16, 4),  # a 141 GB H200 with 16 cores: four
    (["143771"], 64, 4),  # at most four
    (["81559"], 4, 1),  # its cores allow one
    (["24564"], 32, 1),  # a 24 GB card: one
    (["49140"], 32, 1),  # a 48 GB card (just under 48 GiB): one
    (["95830"], 32, 3),  # a 94 GB H100 NVL: three
    (["143771", "143771"], 16, 2),  # two H200s sharing 16 cores: two each
    ([], 16, 1),  # nvidia-smi says nothing: one
])
def test_gpus_auto_workers_follow_the_gpus_memory_and_the_hosts_cores(tmp_path, monkeypatch, mib, cores, expected):
    """`gpu-workers = "auto"` (the default): long-lived workers per GPU by its memory (24 GiB each) and the cores
    this process may use (4 each per GPU), at most four, at least one; read from nvidia-smi, as the parent does not
    import torch."""
    from kernel_lsp import device
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\n" + "".join(f"echo {m}\n" for m in mib))
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(device.os, "sched_getaffinity", lambda pid: set(range(cores)))
    device.auto_gpu_workers.cache_clear()
    try:
        assert device.auto_gpu_workers() == expected
    finally:
        device.auto_gpu_workers.cache_clear()


def test_gpus_auto_workers_are_one_where_the_checks_do_not_run_on_this_machines_gpu(monkeypatch):
    import kernel_lsp.settings as settings_module
    monkeypatch.setattr(settings_module, "gpu_present", lambda: True)
    monkeypatch.setattr(settings_module, "auto_gpu_workers", lambda: 3)
    assert Settings().gpu_workers == "auto" and Settings().workers_per_gpu() == 3
    assert apply_overrides(Settings(), {"device": "cpu"}).workers_per_gpu() == 1
    assert apply_overrides(Settings(), {"runner": "ssh gpu-box kernel-lsp worker"}).workers_per_gpu() == 1
    assert apply_overrides(Settings(), {"gpu-workers": 2}).workers_per_gpu() == 2
    monkeypatch.setattr(settings_module, "gpu_present", lambda: False)
    assert Settings().workers_per_gpu() == 1

CROWDED_GPU_WORKER = r'''
import json, os, sys, time
from kernel_lsp.run.protocol import PROTOCOL
MARKS = sys.argv[1]
print(json.dumps({"type": "WorkerReady", "pid": os.getpid(), "device": "cuda", "gpu": "fake",
                  "protocol": PROTOCOL}), flush=True)
for line in sys.stdin:
    message = json.loads(line)
    mark = os.path.join(MARKS, str(os.getpid()))
    open(mark, "w").close()
    deadline = time.monotonic() + 1.0
    while len(os.listdir(MARKS)) < 2 and time.monotonic() < deadline:  # another check in flight on this GPU?
        time.sleep(0.01)
    crowded = len(os.listdir(MARKS)) >= 2
    code, text = ("KL302", "out of GPU memory while checking this file") if crowded else ("KL402", "timed")
    finding = {"path": message["job"]["path"], "range": {"line": 0, "col": 0, "end_line": 0, "end_col": 1},
               "severity": "error" if crowded else "info", "code": code, "message": text,
               "source": "kernel-lsp.worker", "data": {}}
    print(json.dumps({"type": "JobEvent", "id": message["id"], "event": {"event": "finding", "finding": finding}}),
          flush=True)
    print(json.dumps({"type": "JobEvent", "id": message["id"], "event": {"event": "done"}}), flush=True)
    deadline = time.monotonic() + 1.0
    while crowded and len(os.listdir(MARKS)) >= 2 and time.monotonic() < deadline:  # both saw the crowd
        time.sleep(0.01)
    os.remove(mark)
    print(json.dumps({"type": "JobEnd", "id": message["id"]}), flush=True)
'''


def test_gpus_a_file_out_of_memory_beside_other_checks_is_checked_again_alone(tmp_path, monkeypatch):
    """With gpu-workers = 2, two files verified at once can run out of GPU memory together (rmsprop and avg_pool2d
    beside a third worker on an H100): a KL302 from a worker that shares its GPU is not the file's own. The job runs
    once more with every worker of that GPU held, and the report says `retried`."""
    script, marks = tmp_path / "crowded_gpu_worker.py", tmp_path / "marks"
    script.write_text(CROWDED_GPU_WORKER)
    marks.mkdir()
    monkeypatch.setattr(ex, "gpu_present", lambda: True)
    monkeypatch.setattr(ex, "visible_gpus", lambda: ["0"])
    monkeypatch.setattr(local, "local_command", lambda device, sandbox=None: [sys.executable, str(script), str(marks)])
    files = [shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / f"add{i}.py") for i in range(2)]
    settings = apply_overrides(Settings(), {"gpu-workers": 2, "verification": False})
    stages: list[str] = []

    def on_event(event):
        if isinstance(event, Stage) and event.stage == "queue":
            stages.append(event.detail)
    with ex.executor_for(settings) as executor:
        with ThreadPoolExecutor(2) as pool:
            reports = list(pool.map(lambda f: check_file(CheckRequest(f, settings, tmp_path, executor=executor,
                                                                      on_event=on_event)), files))
    assert [[f.code for f in r.findings] for r in reports] == [["KL402"], ["KL402"]]
    assert [r.stats.get("retried") for r in reports] == [1, 1]
    # The retry says what ran out the first time (the first attempt's KL302 is not in the report).
    assert stages == ["out of memory beside other checks on this GPU: checking it again alone (out of GPU memory "
                      "while checking this file)"] * 2, stages


def test_gpus_that_do_not_exist_are_a_usage_error(fake_gpus):
    problem = ex.check_gpus(apply_overrides(Settings(), {"gpus": [0, 5]}))
    assert problem == "gpus: GPU 5 is not among the 3 this process can use (0, 1, 2)"


def test_gpus_on_a_machine_without_one_is_a_clear_usage_error():
    proc = run_cli("check", str(CORPUS / "ok_add_fp32.py"), "--gpus", "0,2", "--no-cache")
    assert proc.returncode == 2 and "no GPU to choose from" in proc.stderr, proc.stderr


def test_gpus_setting_rejects_what_is_not_a_list_of_indices():
    for bad in ("first", [-1], [True], "0,x"):
        with pytest.raises(ConfigError, match="gpus"):
            apply_overrides(Settings(), {"gpus": bad})


def test_several_runner_commands_give_one_worker_each(tmp_path):
    """Two --runner commands: two workers, each file on one of them, the same findings as one runner."""
    import shlex
    worker = [sys.executable, "-m", "kernel_lsp.cli", "worker"]
    files = [shutil.copy(CORPUS / "bug_relu_drops_nan.py", tmp_path / f"relu{i}.py") for i in range(2)]
    proc = run_cli("check", *map(str, files), "--format", "json", "--no-cache",
                   "--runner", shlex.join(worker), "--runner", shlex.join(worker))
    assert proc.returncode == 1, proc.stderr
    import json
    doc = json.loads(proc.stdout)
    assert {f["stats"]["worker"] for f in doc["files"]} <= {"runner-0", "runner-1"}
    assert all([d["code"] for d in f["findings"]] == ["KL201"] for f in doc["files"])
