"""Other processes on the GPU while it is timed, from NVML (nvidia-ml-py, where installed). Worker side.

`Watch` is started before the timed calls and read after them: it lists the GPU's compute processes other than this
one, and, where the driver keeps per-process utilization samples, which of them kept the GPU's multiprocessors busy
during the window. A process that was busy is named in the report ("timing disturbed by another process on GPU 0
(pid 1234, python)") and the timing is taken again once; it is information, never a finding that fails a check.
Where NVML is missing or cannot see processes (a container without the host's pid namespace), nothing is claimed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field


@dataclass
class Neighbour:
    pid: int
    name: str
    sm_percent: int | None = None  # the largest utilization sample in the window, when the driver keeps them

    def describe(self) -> str:
        busy = f", {self.sm_percent}% of the SMs" if self.sm_percent else ""
        return f"pid {self.pid}, {self.name}{busy}"


@dataclass
class Watch:
    handle: object = None
    start_us: int = 0
    before: list[Neighbour] = field(default_factory=list)
    note: str = ""  # why nothing can be said, when NVML cannot help


def _nvml():
    try:
        import pynvml
        pynvml.nvmlInit()
        return pynvml
    except Exception:
        return None


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8") as f:
            return f.read().strip() or "?"
    except OSError:
        return "?"


def _others(nvml, handle, mine: set[int]) -> list[Neighbour]:
    found = {}
    for getter in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
        try:
            for p in getattr(nvml, getter)(handle):
                if p.pid not in mine:
                    found[p.pid] = Neighbour(p.pid, _name(p.pid))
        except Exception:
            continue
    return list(found.values())


def start(uuid: str | None, mine: set[int] | None = None) -> Watch:
    """Begin watching the GPU named by its UUID (gpu_lease.gpu_identity)."""
    nvml = _nvml()
    if nvml is None:
        return Watch(note="NVML is not available (pip install nvidia-ml-py)")
    try:
        handle = nvml.nvmlDeviceGetHandleByUUID(uuid.removeprefix("GPU-") if uuid and uuid.startswith("GPU-GPU")
                                                else uuid)
    except Exception:
        return Watch(note="NVML does not know this GPU")
    import time
    mine = mine or {os.getpid()}
    return Watch(handle, int(time.time() * 1e6), _others(nvml, handle, mine))


def disturbers(watch: Watch, mine: set[int] | None = None) -> list[Neighbour]:
    """The other processes that used the GPU's multiprocessors since `start`, as far as NVML can tell."""
    if watch.handle is None:
        return []
    nvml = _nvml()
    if nvml is None:
        return []
    mine = mine or {os.getpid()}
    busy: dict[int, int] = {}
    try:
        for sample in nvml.nvmlDeviceGetProcessUtilization(watch.handle, watch.start_us):
            if sample.pid not in mine and sample.timeStamp >= watch.start_us and sample.smUtil > 0:
                busy[sample.pid] = max(busy.get(sample.pid, 0), int(sample.smUtil))
    except Exception:
        return []  # no samples kept (or none in the window): nothing to claim
    return [Neighbour(pid, _name(pid), sm) for pid, sm in sorted(busy.items())]
