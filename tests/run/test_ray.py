"""The Ray executor (run/ray_executor.py) on a local Ray cluster of 2 CPUs, started once for the module: the
same JSON as local runs, a lost worker or actor retried with nothing lost or doubled, a lost head (on a cluster of its
own) ending the run within seconds with every unfinished file a KL303, and the ways it cannot start (an address that
does not answer, Ray not installed) as usage errors. Ray comes with the dev extra, as in CI;
without it, only the tests that need no Ray run."""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from tests.conftest import CORPUS, CORPUS_FLAGS, FIXTURES, ROOT, run_cli, seconds_of
from tests.lsp.rawclient import alive, children, descendants, wait_ended

try:
    import ray
except ImportError:
    ray = None

needs_ray = pytest.mark.skipif(ray is None, reason='needs Ray: pip install "kernel-lsp[ray]" (the dev extra has it)')

# Files of every shape: native links, a KernelBench pair, a reference in a sibling module, clean and buggy ones.
FEW = ["ok_add_fp32.py", "bug_relu_drops_nan.py", "kb_leaky_relu_nan/impl.py", "sibling_ref/gelu_impl.py"]
# "at": when a stage began (a KL300's data names the stage the worker died in). "rerun_runs": the isolated re-run's
# refills past the first three stop after `refill_budget_s` (player/harness.py), so a kernel slow under the
# interpreter runs as many as the machine's load allows (ok_persistent_polyval.py: 18 and 19 in one CI run).
TIMINGS = {"seconds", "timeline", "worker_start_s", "worker_startup", "rerun_seconds", "first_variant_cpu_seconds",
           "compile_seconds", "at", "rerun_runs"}


@pytest.fixture(scope="module")
def cluster():
    """The address of a cluster of 2 CPUs this module starts (`address="local"`: never a cluster that happens to run
    on the machine, whatever RAY_ADDRESS or a `ray start` says). This process joins it (RayExecutor then uses the
    connection); CLI runs join it by address."""
    started = not ray.is_initialized()
    if started:
        for attempt in range(2):  # a loaded machine can miss Ray's 30 s start-up deadline once
            try:
                ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
                         logging_level=logging.ERROR)
                break
            except Exception:
                ray.shutdown()
                if attempt:
                    raise
    yield ray.get_runtime_context().gcs_address
    if started:
        ray.shutdown()


def normalized(doc: dict) -> dict:
    """A check's JSON without what may differ between two runs of the same files: timings."""
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in TIMINGS}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value
    return strip(doc)


def comparable(file_doc: dict) -> dict:
    """One file's JSON as two runs of the whole corpus on a loaded machine must agree on it: everything but timings,
    and of each kernel's facts whether it was verified and its compile facts (the details of the variant rows of a
    cheating case differed once between two such runs in CI; the findings may not)."""
    doc = normalized(file_doc)
    doc["kernels"] = {name: {"verified": "verification" in facts, "compile": facts.get("compile")}
                      for name, facts in doc.get("kernels", {}).items()}
    return doc


def _check(paths, *extra) -> dict:
    proc = run_cli("check", *map(str, paths), "--format", "json", "--no-cache", *extra, cwd=ROOT)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def _same_json(paths, address):
    local = _check(paths)
    remote = _check(paths, "--ray-address", address)
    assert [f["path"] for f in remote["files"]] == [f["path"] for f in local["files"]]
    for mine, theirs in zip(remote["files"], local["files"]):
        assert normalized(mine) == normalized(theirs), mine["path"]
    assert normalized(remote) == normalized(local)


@needs_ray
def test_ray_gives_the_same_json_as_local(cluster):
    _same_json([CORPUS / f for f in FEW], cluster)


def one_case_of_each_expectation(paths, took: dict[str, float] | None = None) -> list:
    """A corpus case of each distinct expectation (its `# expect:` alternatives and `# may-add:` codes) and layout (a
    single file, a problem beside its kernel, a sibling reference): what the executor carries differs by how a case
    is laid out and what it finds, not by which kernel of one kind it is. Of each, the quickest in the session's
    local check (`took`: seconds by path), which keeps CI's time; else the first by name."""
    from tests.corpus.report import alternatives, may_add
    chosen: dict[tuple, Path] = {}
    quick = lambda p: ((took or {}).get(str(p), 0.0), str(p))  # noqa: E731
    for path in sorted(paths, key=quick):
        text = path.read_text()
        layout = "pair" if path.name == "impl.py" else "sibling" if path.parent.name == "sibling_ref" else "single"
        key = (layout, tuple(sorted(tuple(sorted(a)) for a in alternatives(text))), tuple(sorted(may_add(text))))
        chosen.setdefault(key, path)
    return sorted(chosen.values())


@needs_ray
def test_ray_gives_the_same_json_as_local_on_a_case_of_every_expectation(cluster, corpus_local):
    """A corpus case of every expectation through Ray against the session's local check of the same files with the
    same flags (the local check covers every case; the Ray run, one of each kind, keeps CI's time). A case whose own
    cheat races (its `# expect:` line lists alternatives: an allocator's addresses or a thread decide which code, or
    its `# may-add:` line names codes that may join), is compared by its codes matching those instead."""
    from tests.corpus.report import alternatives, matches, may_add
    paths, local = corpus_local
    chosen = one_case_of_each_expectation(paths, seconds_of(local))
    assert 20 <= len(chosen) < len(paths)
    local_files = {f["path"]: f for f in local["files"]}
    proc = run_cli("check", *map(str, chosen), *CORPUS_FLAGS, "--ray-address", cluster, cwd=CORPUS)
    assert proc.returncode in (0, 1), proc.stderr
    remote = json.loads(proc.stdout)
    assert len(remote["files"]) == len(chosen)
    racy = set()
    for mine in remote["files"]:
        theirs = local_files[mine["path"]]
        text = open(mine["path"]).read()
        if len(alternatives(text)) > 1 or may_add(text):
            racy.add(mine["path"])
            assert matches(text, {f["code"] for f in mine["findings"] if f["severity"] in ("error", "warning")})
        else:
            assert comparable(mine) == comparable(theirs), mine["path"]
    steady = lambda doc: sorted((d for d in doc["diagnostics"]  # noqa: E731  (the local check orders its files
                                 if d["path"] in {f["path"] for f in remote["files"]} and d["path"] not in racy),
                                key=lambda d: d["path"])  # otherwise: its slowest cases first)
    assert normalized(steady(remote)) == normalized(steady(local))


def _report(executor, path, on_event=None):
    from kernel_lsp.check import CheckRequest, check_file
    from kernel_lsp.config import Settings
    return check_file(CheckRequest(path.resolve(), Settings(), ROOT, executor=executor, on_event=on_event))


def _codes(report) -> set[str]:
    return {f.code for f in report.findings if f.severity <= 2}


def _gated_adds(gate: Path, paths: list[Path]) -> list[Path]:
    """Copies of ok_add_fp32.py at `paths` whose inputs are made only once the file `gate` exists."""
    original = (CORPUS / "ok_add_fp32.py").read_text()
    text = original.replace("def make_inputs():\n", (
        f"def make_inputs():\n    import os, time\n    while not os.path.exists({str(gate)!r}):\n"
        "        time.sleep(0.01)\n"))
    assert text != original
    for path in paths:
        path.write_text(text)
    return paths


def _run_killing_once(executor, paths, kill):
    """Check `paths` two at a time; `kill()` once, as soon as the first job reports a stage."""
    killed = threading.Event()

    def on_event(event):
        if not killed.is_set():
            killed.set()
            kill()

    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(2) as pool:
        reports = list(pool.map(lambda p: _report(executor, p, on_event), paths))
    assert killed.is_set()
    return reports


@needs_ray
def test_ray_actor_killed_mid_run_is_retried_and_nothing_is_lost_or_doubled(cluster):
    """The GPU path (an actor holding a long-lived worker), on the CPU: its actor is killed with ray.kill mid-job.
    Ray restarts it; the job runs again there; every file has one report, with the findings a local run gives."""
    from kernel_lsp.run.ray_executor import RayExecutor
    paths = [CORPUS / "bug_relu_drops_nan.py", CORPUS / "ok_add_fp32.py", CORPUS / "bug_store_off_by_one.py"]
    with RayExecutor(device="cpu", actors=1, actor_gpus=0) as executor:
        actor = executor.actors[0]
        reports = _run_killing_once(executor, paths, lambda: ray.kill(actor, no_restart=False))
    assert [r.path for r in reports] == [str(p.resolve()) for p in paths]
    assert [_codes(r) for r in reports] == [{"KL201"}, set(), {"KL208"}]
    assert sorted(r.stats.get("retried", 0) for r in reports) == [0, 0, 1]
    for r in reports:
        assert len({(f.code, f.span.line, f.message) for f in r.findings}) == len(r.findings)  # none doubled
        assert all(k.verification is not None for k in r.kernels.values())


@needs_ray
def test_ray_actor_killed_after_its_job_reported_its_worker_dead_is_a_loss_not_a_crash(cluster, tmp_path):
    """Killing an actor kills its children first; the job's outcome (its worker killed by SIGKILL) can then reach
    this side before the actor is gone, as it did in CI under load. Made to happen in that order here: the job's
    file waits on a gate; at its first event the actor's children are killed (as Ray's kill does first); when the
    outcome has arrived, before the executor looks at it, the actor is killed and its process waited out; then the
    gate opens. The job runs again on the restarted actor; it is not reported as the file's crash (KL300)."""
    from kernel_lsp.run.ray_executor import RayExecutor
    gate = tmp_path / "gate"
    (case,) = _gated_adds(gate, [tmp_path / "add.py"])
    errors: list[BaseException] = []  # what the callbacks raise (the executor swallows an on_event's exceptions)
    with RayExecutor(device="cpu", actors=1, actor_gpus=0, retries=1) as executor:
        actor = executor.actors[0]
        host, pid = ray.get(actor.ping.remote())
        if host != socket.gethostname() or not alive(pid):
            pytest.skip("the actor runs on another machine")
        judge = executor._actor_lost

        def kill_children():
            try:
                for child in children(pid):
                    try:
                        os.kill(child, 9)
                    except ProcessLookupError:
                        pass
            except BaseException as e:
                errors.append(e)
                gate.write_text("")

        def actor_dies_first(*args):
            try:
                if alive(pid):  # the first outcome only; the retry's actor is another process
                    ray.kill(actor, no_restart=False)
                    assert wait_ended(pid, 60), "the killed actor's process still runs"
            except BaseException as e:
                errors.append(e)
            finally:
                gate.write_text("")
            return judge(*args)

        executor._actor_lost = actor_dies_first
        (report,) = _run_killing_once(executor, [case], kill_children)
    assert not errors, errors
    assert _codes(report) == set() and report.stats.get("retried") == 1, [f.message for f in report.findings]


@needs_ray
def test_ray_an_actor_takes_a_job_per_worker_at_once(cluster, tmp_path):
    """gpu-workers = 2 (`per_gpu`): the actor of a GPU holds two long-lived workers and runs two jobs at once, as a
    local GPU with two workers does (on the CPU here). Each file's inputs wait on a gate that opens only once both
    jobs have begun: one job at a time per actor would never open it."""
    from concurrent.futures import ThreadPoolExecutor

    from kernel_lsp.run.ray_executor import RayExecutor
    gate = tmp_path / "gate"
    cases = _gated_adds(gate, [tmp_path / "add_a.py", tmp_path / "add_b.py"])
    begun: set[str] = set()
    lock = threading.Lock()

    def on_event_for(name):
        def on_event(event):
            with lock:
                begun.add(name)
                if len(begun) == 2:
                    gate.write_text("")
        return on_event

    with RayExecutor(device="cpu", actors=1, actor_gpus=0, per_gpu=2) as executor:
        assert executor.capacity == 2
        with ThreadPoolExecutor(2) as pool:
            futures = [pool.submit(_report, executor, case, on_event_for(case.name)) for case in cases]
            deadline = time.monotonic() + 240
            while len(begun) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            both = len(begun) == 2
            gate.write_text("")  # (either way, so that the jobs end)
            reports = [f.result(timeout=600) for f in futures]
    assert both, f"only {sorted(begun)} began while the other waited"
    assert [_codes(r) for r in reports] == [set(), set()], [[f.message for f in r.findings] for r in reports]


@needs_ray
def test_ray_a_file_that_crashes_its_worker_on_an_actor_is_KL300_and_not_retried(cluster):
    """The other side of the test above: the checked code's own crash leaves the actor answering from the same
    process, so it is the file's finding, once."""
    from kernel_lsp.run.ray_executor import RayExecutor
    with RayExecutor(device="cpu", actors=1, actor_gpus=0) as executor:
        report = _report(executor, FIXTURES / "faults" / "segfault.py")
    assert "KL300" in _codes(report) and "retried" not in report.stats, report.findings
    assert "SIGSEGV" in next(f.message for f in report.findings if f.code == "KL300")


def _ray_task_workers() -> list[int]:
    """Ray worker processes running our task now (Ray titles them after the function)."""
    import psutil
    return [p.pid for p in psutil.process_iter(["cmdline"]) if (p.info["cmdline"] or [""])[0].startswith("ray::run_task")]


@needs_ray
def test_ray_task_whose_worker_dies_mid_job_is_retried(cluster):
    """The CPU path: the Ray worker running a task is killed (SIGKILL, as the OOM killer would); the job runs again
    on another worker and the report says so; the other file is untouched."""
    from kernel_lsp.run.ray_executor import RayExecutor

    def kill():
        pids = []
        for _ in range(50):
            pids = _ray_task_workers()
            if pids:
                break
            time.sleep(0.1)
        assert pids, "no Ray worker runs a task"
        os.kill(pids[0], 9)

    paths = [CORPUS / "bug_relu_drops_nan.py", CORPUS / "ok_add_fp32.py"]
    with RayExecutor(device="cpu") as executor:
        assert executor.capacity == 2 and not executor.actors
        reports = _run_killing_once(executor, paths, kill)
    assert [_codes(r) for r in reports] == [{"KL201"}, set()]
    assert sorted(r.stats.get("retried", 0) for r in reports) == [0, 1]


@needs_ray
def test_ray_job_lost_more_often_than_retries_allow_is_one_clear_finding(cluster, tmp_path):
    """A job whose worker is lost every time (retries = 0 here, killed once) ends as KL303 naming the loss, not as a
    hang or a traceback."""
    from kernel_lsp.run.ray_executor import RayExecutor
    case = shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "add.py")
    with RayExecutor(device="cpu", retries=0, actors=1, actor_gpus=0) as executor:
        actor = executor.actors[0]
        (report,) = _run_killing_once(executor, [case], lambda: ray.kill(actor, no_restart=False))
    (finding,) = report.findings
    assert finding.code == "KL303" and "lost 1 time (retries = 0)" in finding.message, finding.message


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Head:
    """A one-node Ray cluster of its own (`ray start --head`, in a session and a temporary folder of its own), so
    that a test can kill its head without touching the module's cluster or any other on the machine."""

    def __init__(self, env: dict):
        import psutil
        self.psutil = psutil
        self.temp = tempfile.mkdtemp(prefix="klray-")  # short: Ray's socket paths live under it
        port = _free_port()
        start = subprocess.Popen(
            [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", f"--port={port}", "--num-cpus=2",
             "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={self.temp}",
             f"--ray-client-server-port={_free_port()}", f"--dashboard-agent-listen-port={_free_port()}"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.group = start.pid  # `ray start` led the session's process group; the head's processes stay in it
        self.address = f"127.0.0.1:{port}"
        self.seen: set = set()
        try:
            said, _ = start.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            start.kill()
            said, _ = start.communicate()
        if start.returncode != 0:
            self.close()
            raise AssertionError(f"ray start failed: {said}")

    def processes(self) -> list:
        """The head's processes (its group) and all they started (Ray's workers, the checks' children)."""
        found = []
        for p in self.psutil.process_iter():
            try:
                if os.getpgid(p.pid) == self.group:
                    found += [p, *p.children(recursive=True)]
            except (ProcessLookupError, self.psutil.Error):
                pass
        self.seen |= set(found)
        return found

    def kill(self, what: str) -> None:
        """Kill the head's GCS server alone (`what` "gcs") or the whole head node, its workers too ("node")."""
        victims = self.processes()
        if what == "gcs":
            victims = [p for p in victims if p.name() == "gcs_server"]
            assert len(victims) == 1, victims
        for p in victims:
            try:
                p.kill()
            except self.psutil.Error:
                pass

    def close(self) -> None:
        self.processes()
        for p in self.seen:
            try:
                p.kill()
            except self.psutil.Error:
                pass
        self.psutil.wait_procs(list(self.seen), timeout=30)
        shutil.rmtree(self.temp, ignore_errors=True)


class OwnCluster:
    """For a kernel-lsp process that starts a local Ray cluster of its own (`executor = "ray"`, no address): its
    environment (no RAY_ADDRESS, and a Ray temporary folder of the test's, where no `ray start` on the machine left
    an address to join), its Ray processes, the head's GCS server among them to kill, and what of them is left."""

    UNSET = ("RAY_ADDRESS", "RAY_gcs_rpc_server_reconnect_timeout_s")

    def __init__(self):
        self.temp = tempfile.mkdtemp(prefix="klr-")  # short: Ray's socket paths live under it
        env = {k: v for k, v in os.environ.items() if k not in self.UNSET}
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
        self.env = {**env, "RAY_TMPDIR": self.temp}
        self.seen: set[int] = set()

    def below(self, pid: int) -> set[int]:
        found = descendants(pid)
        self.seen |= found
        return found

    def wait_for_job(self, proc: subprocess.Popen, said=lambda: "", timeout: float = 240) -> None:
        """Until a job runs on a Ray worker of the cluster `proc` started."""
        deadline = time.monotonic() + timeout
        while not any(_first_arg(p).startswith("ray::run_task") for p in self.below(proc.pid)):
            assert time.monotonic() < deadline and proc.poll() is None, said()
            time.sleep(0.1)

    def kill_gcs(self, proc: subprocess.Popen) -> None:
        (gcs,) = [p for p in self.below(proc.pid) if _comm(p) == "gcs_server"]
        os.kill(gcs, 9)

    def left(self, timeout: float = 30) -> dict[int, str]:
        """What is still running, `timeout` seconds at most after the process ended, of all it was seen to start."""
        deadline = time.monotonic() + timeout
        while any(alive(p) for p in self.seen) and time.monotonic() < deadline:
            time.sleep(0.1)
        return {p: _first_arg(p) for p in self.seen if alive(p)}

    def close(self) -> None:
        for pid in self.seen:
            if alive(pid):
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
        shutil.rmtree(self.temp, ignore_errors=True)


@contextmanager
def _ended(proc: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """`proc`, killed on the way out if it still runs."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _first_arg(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return ""


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


@needs_ray
@pytest.mark.parametrize("what", ["gcs", "node"])
def test_ray_head_lost_mid_run_ends_the_run_with_every_unfinished_file_KL303(tmp_path, what):
    """The cluster's head dies once one file is done, while two files' inputs take an hour to make: the GCS server
    alone of a local cluster the check started itself (the raylet and the jobs go on), or the whole node of one it
    joined by address. Ray itself would wait a minute for the head and then end the process with status 1 and no
    report. The run ends within seconds, exit 1, its JSON complete on stdout: the done file keeps its findings, the
    others are one KL303 each naming the lost head; of a cluster of its own, no process is left."""
    gated = []
    for name in ("held_a.py", "held_b.py"):
        text = (CORPUS / "ok_add_fp32.py").read_text()
        held = text.replace("def make_inputs():\n", "def make_inputs():\n    import time\n    time.sleep(3600)\n")
        assert held != text
        gated.append(tmp_path / name)
        gated[-1].write_text(held)
    done_file = CORPUS / "bug_relu_drops_nan.py"
    own = OwnCluster()
    head = _Head(own.env) if what == "node" else None
    where = ["--ray-address", head.address] if head else ["--executor", "ray"]
    try:
        with open(tmp_path / "stdout", "w+") as stdout:
            proc = subprocess.Popen(
                [sys.executable, "-m", "kernel_lsp.cli", "check", str(done_file), *map(str, gated), "--format",
                 "json", "--no-cache", "--timeout", "600", *where],
                cwd=ROOT, env=own.env, stdout=stdout, stderr=subprocess.PIPE, text=True)
            lines, one_done = [], threading.Event()

            def read_stderr():
                for line in proc.stderr:
                    lines.append(line)
                    if "] done: " in line:
                        one_done.set()
            reader = threading.Thread(target=read_stderr, daemon=True)
            reader.start()
            with _ended(proc):
                assert one_done.wait(300), "".join(lines)
                assert proc.poll() is None, "".join(lines)
                if head:
                    head.kill(what)
                else:
                    own.kill_gcs(proc)
                killed = time.monotonic()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    raise AssertionError("the check still ran 30 s after the head was lost:\n" + "".join(lines[-20:]))
                took = time.monotonic() - killed
                left = own.left()
            reader.join(10)
            stdout.seek(0)
            out = stdout.read()
    finally:
        if head:
            head.close()
        own.close()
    err = "".join(lines)
    assert proc.returncode == 1, err
    assert not left, f"still running after the check ended: {left}"
    doc = json.loads(out)
    files = {f["path"]: f for f in doc["files"]}
    assert list(files) == [str(p.resolve()) for p in [done_file, *gated]], list(files)
    errors = {p: [d for d in f["findings"] if d["severity"] in ("error", "warning")] for p, f in files.items()}
    assert {d["code"] for d in errors[str(done_file)]} == {"KL201"}, errors[str(done_file)]
    for p in gated:
        (finding,) = errors[str(p.resolve())]
        assert finding["code"] == "KL303" and "\n" not in finding["message"], finding
        assert "the Ray cluster's head at " in finding["message"] and " was lost " in finding["message"], finding
    assert "2 file(s) not finished (KL303)" in err, err
    print(f"head ({what}) killed: the check ended {took:.1f} s later")


LOST_HEAD_PROCESS = '''
import json, sys
from kernel_lsp.api import Item, evaluate
from kernel_lsp.config import ConfigError, Settings, apply_overrides
from kernel_lsp.run import ray_head
address, wait_s, held = sys.argv[1:4]
if wait_s != "-":
    ray_head.DRIVER_GCS_WAIT_S = int(wait_s)  # the control: kernel-lsp's wait for a lost head, shortened
item = Item(open(held).read(), name="held.py", options={"timeout": 600})
for r in evaluate([item], settings=apply_overrides(Settings(), {"executor": "ray", "ray_address": address})):
    print(json.dumps({"verdict": r.verdict, "error": r.error, "messages": [f.message for f in r.findings]}), flush=True)
try:  # a later check, on a Ray executor again (a local cluster: no address to ask first)
    next(evaluate([item], settings=apply_overrides(Settings(), {"executor": "ray"})))
except ConfigError as e:
    print(json.dumps({"again": str(e)}), flush=True)
sys.stdin.readline()  # until the test says to leave: then an ordinary exit, with Ray's exit handler
'''


@needs_ray
def test_ray_head_lost_leaves_a_batch_api_process_running_and_able_to_exit(tmp_path):
    """Two batch-API processes (kernel_lsp.api.evaluate on a Ray executor) each have a job running when the head's
    GCS server is killed. Ray ends such a process with status 1 once the head has not answered for
    `gcs_rpc_server_reconnect_timeout_s` (60 s by default), the KL303s delivered or not; kernel-lsp sets that for its
    own ray.init. The control's setting is shortened to 5 s: it dies so (proving that Ray takes the setting from
    kernel-lsp). The other, with kernel-lsp's week, gets its KL303, a later Ray executor is refused in one line, it is
    still alive well after the control's death, and it leaves by an ordinary interpreter exit, with status 0, within
    seconds."""
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_gcs_rpc_server_reconnect_timeout_s")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    text = (CORPUS / "ok_add_fp32.py").read_text()
    held = tmp_path / "held.py"
    held.write_text(text.replace("def make_inputs():\n", "def make_inputs():\n    import time\n    time.sleep(3600)\n"))
    head = _Head(env)
    procs: dict[str, subprocess.Popen] = {}
    try:
        for name, wait_s in (("survivor", "-"), ("control", "5")):
            procs[name] = subprocess.Popen([sys.executable, "-c", LOST_HEAD_PROCESS, head.address, wait_s, str(held)],
                                           cwd=tmp_path, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, text=True)
        said = {name: ([], []) for name in procs}  # stdout lines, stderr lines

        def read(name, which):
            for line in (procs[name].stdout, procs[name].stderr)[which]:
                said[name][which].append(line)
        readers = [threading.Thread(target=read, args=(n, w), daemon=True) for n in procs for w in (0, 1)]
        for t in readers:
            t.start()

        def running_jobs():
            return [p for p in head.processes() if _cmdline(p).startswith("ray::run_task")]
        deadline = time.monotonic() + 240
        while len(running_jobs()) < 2:
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs.values()), said
            time.sleep(0.2)
        head.kill("gcs")
        killed = time.monotonic()
        control, survivor = procs["control"], procs["survivor"]
        try:
            control.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the control still ran 30 s after the head was lost: {said['control']}") from None
        control_died = time.monotonic() - killed
        assert control.returncode == 1, said["control"]
        assert any("Failed to connect to GCS within 5 seconds" in line for line in said["control"][1]), said["control"]
        deadline = time.monotonic() + 60
        while len(said["survivor"][0]) < 2:
            assert time.monotonic() < deadline and survivor.poll() is None, said["survivor"]
            time.sleep(0.1)
        try:  # alive well past the deadline that ended the control
            survivor.wait(timeout=max(0.0, control_died + 5 - (time.monotonic() - killed)))
            raise AssertionError(f"the process ended {time.monotonic() - killed:.0f} s after the head was lost, "
                                 f"status {survivor.returncode}: {said['survivor']}")
        except subprocess.TimeoutExpired:
            pass
        alive_for = time.monotonic() - killed
        survivor.stdin.write("\n")
        survivor.stdin.flush()
        asked = time.monotonic()
        survivor.wait(timeout=60)
        exit_s = time.monotonic() - asked
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        head.close()
    assert survivor.returncode == 0, said["survivor"]
    assert exit_s < 10, exit_s
    result, again = (json.loads(line) for line in said["survivor"][0])
    assert result["verdict"] == "error" and result["error"] == "infrastructure", result
    (message,) = result["messages"]
    assert "the Ray cluster's head at " in message and " was lost " in message, message
    assert " was lost " in again["again"] and "restart kernel-lsp" in again["again"], again
    print(f"head (gcs) killed: the control died {control_died:.1f} s later, the other was alive {alive_for:.1f} s "
          f"later and exited in {exit_s:.1f} s")


def _cmdline(p) -> str:
    try:
        return (p.cmdline() or [""])[0]
    except Exception:  # gone meanwhile
        return ""


@needs_ray
def test_ray_head_lost_mid_optimize_ends_it_with_one_clear_line_and_parseable_json(tmp_path):
    """`kernel-lsp optimize --executor ray` on a Ray cluster of its own: the GCS server is killed while the
    file's own check runs there. The proposal says the head was lost (not "nothing to fix"), exit 1, its JSON alone
    on stdout, no traceback, the process ends within seconds, and none of its cluster's processes is left."""
    from tests.propose.fake_llm import FakeLLM
    from tests.propose.test_llm_actions import BROKEN, FIXED_KERNEL
    held = BROKEN.replace("def make_inputs():\n", "def make_inputs():\n    import time\n    time.sleep(3600)\n")
    assert held != BROKEN
    (tmp_path / "scale.py").write_text(held)
    cluster = OwnCluster()
    with FakeLLM([FIXED_KERNEL]) as fake:
        (tmp_path / "pyproject.toml").write_text(
            f'[tool.kernel-lsp]\ntimeout = 600\n\n[tool.kernel-lsp.llm]\nendpoint = "{fake.url}"\n'
            'model = "scripted"\n')
        with open(tmp_path / "stdout", "w+") as stdout, open(tmp_path / "stderr", "w+") as stderr:
            proc = subprocess.Popen([sys.executable, "-m", "kernel_lsp.cli", "optimize", "scale.py", "--mode", "fix",
                                     "--executor", "ray", "--format", "json", "--candidates", "1", "--rounds", "1"],
                                    cwd=tmp_path, env=cluster.env, stdout=stdout, stderr=stderr)
            try:
                with _ended(proc):
                    cluster.wait_for_job(proc, lambda: (tmp_path / "stderr").read_text()[-3000:])
                    cluster.kill_gcs(proc)
                    killed = time.monotonic()
                    code = proc.wait(timeout=60)
                    took = time.monotonic() - killed
                    left = cluster.left()
            finally:
                cluster.close()
            stdout.seek(0)
            stderr.seek(0)
            out, err = stdout.read(), stderr.read()
    assert code == 1, err[-3000:]
    assert not left, f"still running after optimize ended: {left}"
    assert "Traceback" not in err, err[-3000:]
    proposal = json.loads(out)
    assert not proposal["accepted"] and proposal["candidates"] == [], proposal
    summary = proposal["summary"]
    assert summary.startswith("no proposal: ") and "the Ray cluster's head at " in summary, summary
    assert " was lost " in summary and "\n" not in summary, summary
    print(f"head (gcs) killed: optimize ended {took:.1f} s later")


def test_ray_driver_settings_are_set_for_ray_init_alone_and_a_users_own_value_wins(monkeypatch):
    """The week Ray waits for a lost head before ending the process, and the half second its shutdown waits to flush
    to it: set while `ray.init` runs, each unless the user set it."""
    from kernel_lsp.run import ray_head
    ours = {ray_head.DRIVER_GCS_WAIT: str(ray_head.DRIVER_GCS_WAIT_S),
            ray_head.DRIVER_FLUSH_WAIT: str(ray_head.DRIVER_FLUSH_WAIT_MS)}
    for name in ours:
        monkeypatch.delenv(name, raising=False)
    with ray_head._driver_settings():
        assert {name: os.environ.get(name) for name in ours} == ours
    assert not set(ours) & set(os.environ)
    monkeypatch.setenv(ray_head.DRIVER_GCS_WAIT, "90")
    with ray_head._driver_settings():
        assert os.environ[ray_head.DRIVER_GCS_WAIT] == "90"
        assert os.environ[ray_head.DRIVER_FLUSH_WAIT] == ours[ray_head.DRIVER_FLUSH_WAIT]
    assert os.environ[ray_head.DRIVER_GCS_WAIT] == "90" and ray_head.DRIVER_FLUSH_WAIT not in os.environ


HELD_EXECUTOR = '''
import sys, threading
from kernel_lsp import cli, cli_check
from kernel_lsp.run.executor import Executor
from kernel_lsp.run.outcome import WorkerOutcome

class Held(Executor):
    """Every job is held forever (as inside a Ray call that waits on a lost head); the executor is lost 1 s after
    the first job began, and answers every job after that at once."""
    capacity = 2

    def run(self, job, files=None, timeout=60.0, on_event=None, cancel=None):
        if self.lost:
            return WorkerOutcome(start_failed=self.lost + " before this file's job ended")
        threading.Timer(1.0, setattr, (self, "lost", "the test's cluster was lost")).start()
        threading.Event().wait()

cli_check.executor_for = lambda settings, workers=None: Held()  # where cmd_check looks it up
sys.exit(cli.main(sys.argv[1:]))
'''


def test_ray_lost_executor_whose_jobs_stay_held_still_ends_the_run(tmp_path):
    """A file whose job stays inside the lost executor past LOST_GRACE_S is checked again, which the executor answers
    at once: the run ends, its JSON complete, with every file KL303, and no thread held inside joined."""
    from kernel_lsp.cli import LOST_GRACE_S
    cases = [shutil.copy(CORPUS / name, tmp_path / name) for name in ("ok_add_fp32.py", "bug_relu_drops_nan.py")]
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", HELD_EXECUTOR, "check", *map(str, cases), "--format", "json",
                           "--no-cache"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert time.monotonic() - start < LOST_GRACE_S + 30
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    for f in doc["files"]:
        (finding,) = [d for d in f["findings"] if d["severity"] in ("error", "warning")]
        assert finding["code"] == "KL303" and "the test's cluster was lost before this" in finding["message"], finding
    assert "kernel-lsp: the test's cluster was lost: 2 file(s) not finished (KL303)" in proc.stderr, proc.stderr


def test_ray_address_that_does_not_answer_is_a_usage_error(tmp_path):
    case = shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "add.py")
    start = time.monotonic()
    proc = run_cli("check", str(case), "--ray-address", "127.0.0.1:9")  # the discard port: nothing listens
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert time.monotonic() - start < 60
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "ray-address 127.0.0.1:9: no Ray cluster answers there" in lines[0], proc.stderr


class _Listener:
    """A TCP port on loopback that accepts connections and then stays silent (`reply` None) or answers every
    connection with `reply` and closes it."""

    def __init__(self, reply: bytes | None = None):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.reply, self.held, self.stop = reply, [], threading.Event()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        self.server.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                continue
            if self.reply is None:
                self.held.append(conn)  # kept open, never answered
            else:
                conn.recv(4096)
                conn.sendall(self.reply)
                conn.close()

    def close(self):
        self.stop.set()
        for c in self.held:
            c.close()
        self.server.close()


@pytest.mark.parametrize("reply,words", [(None, "accepts connections there but does not answer"),
                                         (b"HTTP/1.1 400 Bad Request\r\n\r\n", "a web server answers there")])
def test_ray_address_that_accepts_but_is_no_ray_head_is_a_usage_error_within_seconds(tmp_path, reply, words):
    """`ray.init` has no deadline: a port that accepted connections and never answered held `check` past 240 s, and
    the dashboard's port (a web server) did too. kernel-lsp asks the port for a gRPC (HTTP/2) answer first."""
    case = shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "add.py")
    listener = _Listener(reply)
    try:
        start = time.monotonic()
        proc = run_cli("check", str(case), "--ray-address", f"127.0.0.1:{listener.port}", "--format", "json")
        took = time.monotonic() - start
    finally:
        listener.close()
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr
    assert took < 30, took
    (line,) = proc.stderr.strip().splitlines()
    assert f"error: ray-address 127.0.0.1:{listener.port}: " in line and words in line and "6379" in line, line


def test_ray_client_address_is_refused_up_front(tmp_path):
    """Ray Client (ray://) does not stream a task's results: it timed out after 31 s or ended in a traceback."""
    case = shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "add.py")
    proc = run_cli("check", str(case), "--ray-address", "ray://127.0.0.1:10001")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "Ray Client (ray://) cannot stream" in line and "host:6379" in line, line


def test_ray_run_keeps_stdout_for_kernel_lsps_own_output():
    """Ray prints on stdout (a dead worker's report from its driver, its processes' logs through descriptor 1), which
    made `--format json` unparseable. With the Ray executor the check's own output goes to a copy of stdout and
    everything else in the process, at the descriptor and in Python, goes to stderr."""
    code = ("import os, sys; from kernel_lsp import cli; out = cli._own_stdout(); os.write(1, b'raylet noise\\n'); "
            "print('driver noise'); sys.stdout.flush(); out.write('{\\\"ours\\\": 1}\\n'); out.flush()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"ours": 1}, proc.stdout
    assert "raylet noise" in proc.stderr and "driver noise" in proc.stderr


@needs_ray
def test_ray_cluster_whose_workers_lack_kernel_lsp_is_one_usage_error(tmp_path):
    """A cluster whose nodes lack kernel-lsp made every file a KL303 with the cause cut off, exit 1. Here the local
    cluster's workers find a kernel_lsp that cannot be imported (first on their PYTHONPATH, as on a node without it)
    while the check itself imports the real one: one exit-2 line with the install command."""
    shadow = tmp_path / "shadow" / "kernel_lsp"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'kernel_lsp'\", name='kernel_lsp')\n")
    case = shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "add.py")
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from kernel_lsp.cli import main; "
            "sys.exit(main(sys.argv[1:]))")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = str(tmp_path / "shadow")
    proc = subprocess.run([sys.executable, "-c", code, "check", str(case), "--executor", "ray", "--format", "json"],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert "cannot import kernel_lsp on its workers" in line and 'pip install "kernel-lsp[ray]"' in line, proc.stderr


def test_ray_not_installed_is_a_usage_error_naming_the_extra(tmp_path):
    case = shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "add.py")
    hide = "import sys; sys.modules['ray'] = None; from kernel_lsp.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.run([sys.executable, "-c", hide, "check", str(case), "--executor", "ray"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert 'pip install "kernel-lsp[ray]"' in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_ray_outcome_travels_as_plain_data():
    """What a Ray task hands back: the outcome, its events typed again on this side."""
    from kernel_lsp.jobs import Device, Done, FindingEvent, Stage, Stat
    from kernel_lsp.model import Finding, Severity, Span
    from kernel_lsp.run.outcome import WorkerOutcome
    from kernel_lsp.run.protocol import outcome_from_dict, outcome_to_dict
    outcome = WorkerOutcome(events=[Device("cpu"), Stage("load", "", 0.1),
                                    FindingEvent(Finding("/a.py", Span(3), Severity.ERROR, "KL200", "wrong")),
                                    Stat("compiles", 2), Done()], returncode=0, seconds=1.5, warm=True)
    plain = outcome_to_dict(outcome)
    assert json.loads(json.dumps(plain)) == plain
    again = outcome_from_dict(plain)
    assert outcome_to_dict(again) == plain and again.completed
    assert [type(e) for e in again.events] == [type(e) for e in outcome.events]
