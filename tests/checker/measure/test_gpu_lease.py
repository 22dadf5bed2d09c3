"""One process times per GPU (checker/measure/gpu_lease.py), and another process busy on the GPU is named (neighbours.py):
both tested without a GPU, with real processes contending for the lease and a stand-in for NVML."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import types

from kernel_lsp.checker.measure import gpu_lease, neighbours

HOLD = r'''
import sys, time
from kernel_lsp.checker.measure.gpu_lease import lease
with lease("GPU-test", "timing a.py", folder=sys.argv[1]):
    print("holding", flush=True)
    time.sleep(float(sys.argv[2]))
'''


def _holder(folder, seconds) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(folder), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "holding"
    return proc


def test_gpu_lease_a_second_process_waits_and_says_for_whom(tmp_path):
    holder = _holder(tmp_path, 1.5)
    told: list[str] = []
    start = time.monotonic()
    with gpu_lease.lease("GPU-test", "timing b.py", told.append, folder=str(tmp_path)) as waited:
        assert open(tmp_path / "GPU-test.lock").read() == f"pid {os.getpid()}: timing b.py"
    assert told == [f"pid {holder.pid}: timing a.py"] and waited > 0.5 and time.monotonic() - start >= waited
    holder.wait()


def test_gpu_lease_says_when_the_wait_ended(tmp_path):
    """What the waiting callback returns is called once the lease is held (jobs.Sink.wait: the worker says the wait
    ended, and the job's time limit counts on from there), not before and not when nothing was waited for."""
    from kernel_lsp.checker.pipeline import StageTracker
    from kernel_lsp.jobs import ListSink, Stage
    from kernel_lsp.run.outcome import TimeLimit
    holder = _holder(tmp_path, 1.5)
    said, limit = ListSink(), TimeLimit(1.0)
    sink = StageTracker(said)  # the worker's sink, which keeps the current stage
    sink.stage("measure", "inputs and baselines")
    with gpu_lease.lease("GPU-test", "timing b.py", lambda who: sink.wait("measure", f"waiting for GPU 0 ({who})"),
                         folder=str(tmp_path)) as waited:
        stages = [(e.stage, e.detail) for e in said.events if isinstance(e, Stage)]
        assert stages == [("measure", "inputs and baselines"),
                          ("measure", f"waiting for GPU 0 (pid {holder.pid}: timing a.py)"),
                          ("measure", "inputs and baselines")], stages  # the stage before the wait, again
    holder.wait()
    assert waited > 0.5
    with gpu_lease.lease("GPU-test", "timing c.py", lambda who: sink.wait("measure", "waiting for GPU 0"),
                         folder=str(tmp_path)):
        pass
    assert len(said.events) == 3  # nothing waited for: nothing said
    assert [bool(e.wait) for e in said.events] == [False, True, False]  # marked by Sink.wait, not by the words
    # A stage whose text only reads like a wait (a kernel may be named "waiting for the GPU": compile stages carry
    # its qualname) is the checked code's time.
    words = TimeLimit(1.0)
    words.saw(Stage("compile", "waiting for the GPU for sm_90"), now=words.start)
    assert words.passed(now=words.start + 1.5)
    # The parent's limit (1 s here) leaves the said wait out, and counts the time after it.
    t0 = limit.start
    limit.saw(Stage("load"), now=t0 + 0.1)
    limit.saw(Stage("load", "waiting for GPU 0: another check is timing on it", wait=True), now=t0 + 0.5)
    assert not limit.passed(now=t0 + 30.0) and abs(limit.left_out(now=t0 + 30.0) - 29.5) < 1e-9
    limit.saw(Stage("load"), now=t0 + 30.0)  # the wait ended: 0.5 s of the checked code's time so far
    assert not limit.passed(now=t0 + 30.4) and limit.passed(now=t0 + 30.6)
    limit.saw(Stage("verify", "waiting for the GPU before variant seed-2: another check is timing on it", wait=True),
              now=t0 + 30.2)
    # 0.7 s of the checked code's own so far; waits are left out up to MAX_WAITED_S (600 s) in all, so a wait that
    # never ends (a worker's bug) still ends the job: at 600 + 1 s.
    assert not limit.passed(now=t0 + 600.9) and limit.passed(now=t0 + 601.1)


def test_gpu_lease_a_holder_that_dies_releases_the_gpu(tmp_path):
    holder = _holder(tmp_path, 60)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    with gpu_lease.lease("GPU-test", "timing b.py", folder=str(tmp_path)) as waited:
        assert waited < 1.0


def test_gpu_lease_other_gpus_do_not_wait(tmp_path):
    holder = _holder(tmp_path, 30)
    try:
        with gpu_lease.lease("GPU-other", "timing c.py", folder=str(tmp_path)) as waited:
            assert waited < 1.0
    finally:
        holder.kill()
        holder.wait()


def _fake_nvml(samples, processes):
    class Sample:
        def __init__(self, pid, sm, ts):
            self.pid, self.smUtil, self.timeStamp = pid, sm, ts

    class Proc:
        def __init__(self, pid):
            self.pid = pid
    return types.SimpleNamespace(
        nvmlInit=lambda: None, nvmlDeviceGetHandleByUUID=lambda uuid: "handle",
        nvmlDeviceGetComputeRunningProcesses=lambda h: [Proc(p) for p in processes],
        nvmlDeviceGetGraphicsRunningProcesses=lambda h: [],
        nvmlDeviceGetProcessUtilization=lambda h, since: [Sample(*s) for s in samples])


def test_neighbours_a_busy_process_during_the_timing_is_named(monkeypatch):
    me = os.getpid()
    later = int(time.time() * 1e6) + 10**7  # samples taken during the timing, after the watch began
    fake = _fake_nvml([(me, 99, later), (4242, 0, later), (4343, 61, later), (4444, 80, later - 10**8)],
                      [me, 4242, 4343])
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    watch = neighbours.start("GPU-abc")
    assert [n.pid for n in watch.before] == [4242, 4343]
    busy = neighbours.disturbers(watch)
    assert [(n.pid, n.sm_percent) for n in busy] == [(4343, 61)]  # idle 4242, this process and old samples aside


def test_neighbours_without_nvml_claim_nothing(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    watch = neighbours.start("GPU-abc")
    assert watch.handle is None and "NVML" in watch.note and neighbours.disturbers(watch) == []


VERIFY = r'''
import sys, time
from kernel_lsp.checker.measure.gpu_lease import verifying
with verifying("GPU-test", folder=sys.argv[1]):
    print("verifying", time.monotonic(), flush=True)
    time.sleep(float(sys.argv[2]))
'''


def _verifier(folder, seconds) -> tuple[subprocess.Popen, float]:
    """A process verifying on the GPU for `seconds`, once it has begun; and when it began (time.monotonic())."""
    proc = subprocess.Popen([sys.executable, "-c", VERIFY, str(folder), str(seconds)], stdout=subprocess.PIPE,
                            text=True)
    word, at = proc.stdout.readline().split()
    assert word == "verifying"
    return proc, float(at)


def test_gpu_lease_verifications_run_together_and_a_timing_waits_for_them(tmp_path):
    first, began = _verifier(tmp_path, 1.5)
    second, _ = _verifier(tmp_path, 0.1)  # beside the first: it began while the first verifies
    told: list[str] = []
    with gpu_lease.lease("GPU-test", "timing a.py", told.append, folder=str(tmp_path)) as waited:
        assert time.monotonic() >= began + 1.5  # the timing began only once the verification in flight had ended
    assert told == ["verifications in flight"] and waited > 0.5
    first.wait()
    second.wait()


def test_gpu_lease_no_verification_begins_while_a_side_is_timed_or_a_timing_waits(tmp_path):
    import threading
    flight, _ = _verifier(tmp_path, 1.5)
    waiting, ended = threading.Event(), []

    def timing():
        with gpu_lease.lease("GPU-test", "timing a.py", lambda holder: waiting.set(), folder=str(tmp_path)):
            time.sleep(0.5)
            ended.append(time.monotonic())
    t = threading.Thread(target=timing)
    t.start()
    assert waiting.wait(30)  # the timing waits for the verification in flight
    late, began = _verifier(tmp_path, 0.0)  # arrives after the timing began to wait: it goes after it
    t.join()
    assert began >= ended[0], (began, ended)
    flight.wait()
    late.wait()
    told: list[int] = []
    with gpu_lease.lease("GPU-test", "timing b.py", folder=str(tmp_path)):  # a verification waits for the timing
        proc = subprocess.Popen([sys.executable, "-c", "import sys, time\n"
                                 "from kernel_lsp.checker.measure.gpu_lease import verifying\n"
                                 "told = []\n"
                                 "with verifying('GPU-test', folder=sys.argv[1], on_wait=lambda: told.append(1)):\n"
                                 "    print(len(told), flush=True)\n", str(tmp_path)], stdout=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert proc.poll() is None  # still waiting at the turnstile while the side is timed
    told.append(int(proc.stdout.readline()))
    proc.wait()
    assert told == [1]  # and it said that it waited


STEPS = r'''
import sys, time
from kernel_lsp.checker.measure.gpu_lease import let_timing_in, verifying
with verifying("GPU-test", folder=sys.argv[1]):
    print("verifying", flush=True)
    for step in range(int(sys.argv[2])):  # a verification's variants, a timing let in between them
        let_timing_in()
        print("step", time.monotonic(), flush=True)
        time.sleep(0.1)
print("done", time.monotonic(), flush=True)
'''


def test_gpu_lease_a_timing_waits_for_one_step_of_a_verification_not_all_of_it(tmp_path):
    """A verification that lets a timing in between its steps (variants, stages) gives the GPU up after the step
    in flight: the timing begins long before the verification ends, and no step runs while the side is timed."""
    proc = subprocess.Popen([sys.executable, "-c", STEPS, str(tmp_path), "60"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "verifying"
    assert proc.stdout.readline().split()[0] == "step"  # it is inside its steps
    with gpu_lease.lease("GPU-test", "timing a.py", folder=str(tmp_path)):
        began = time.monotonic()
        time.sleep(0.5)
        ended = time.monotonic()
    lines = [line.split() for line in proc.stdout.read().splitlines()]
    proc.wait()
    steps = [float(at) for word, at in lines if word == "step"]
    done = float(lines[-1][1])
    assert done > ended + 1.0  # the verification had most of its 60 steps of 0.1 s left when the timing began
    assert not any(began <= at <= ended for at in steps)  # nothing verified while the side was timed
    assert any(at > ended for at in steps)  # and it went on after the timing


def test_gpu_lease_letting_a_timing_in_outside_a_verification_does_nothing(tmp_path):
    assert gpu_lease.let_timing_in() == 0.0
    with gpu_lease.verifying("GPU-test", folder=str(tmp_path)):
        assert gpu_lease.let_timing_in() == 0.0  # no timing waits: it goes on at once
