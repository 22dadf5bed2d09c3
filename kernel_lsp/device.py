"""Where kernels can run, as the parent sees it without importing torch: the device names a user may ask for,
and whether this machine has a GPU at all (the device nodes of NVIDIA's and AMD's drivers)."""

from __future__ import annotations

import functools
import glob
import os
import re
import subprocess

DEVICES = ("auto", "cpu", "cuda")  # auto: a GPU when torch sees one, else the CPU interpreter


def gpu_present() -> bool:
    return os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/kfd")


def gpu_models() -> list[str]:
    """The NVIDIA GPU models the driver lists (/proc/driver/nvidia), for the cache key: a timing from one card is
    not a result for another."""
    models = []
    for info in sorted(glob.glob("/proc/driver/nvidia/gpus/*/information")):
        try:
            with open(info, encoding="utf-8", errors="replace") as f:
                for line in f:
                    if line.startswith("Model:"):
                        models.append(line.split(":", 1)[1].strip())
        except OSError:
            continue
    return models


def visible_gpus() -> list[str]:
    """Indices of the NVIDIA GPUs this process may use, without importing torch: CUDA_VISIBLE_DEVICES when set,
    else the /dev/nvidiaN device nodes."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [v.strip() for v in visible.split(",") if v.strip() and v.strip() != "-1"]
    try:
        return sorted((m.group(1) for n in os.listdir("/dev") if (m := re.fullmatch(r"nvidia(\d+)", n))), key=int)
    except OSError:
        return []


# `gpu-workers = "auto"`: long-lived workers per GPU where the GPU's memory and the host's cores allow them. On an
# 80 GB H100 with 16 cores (docs/performance.md), three verified tasks/ with no file out of memory, four in less time
# but with two optimizer files out of memory beside the others (each then checked again alone): 24 GiB a worker
# keeps three there and gives four to a 141 GB H200. Each worker's check holds a CUDA context and its variants'
# tensors, and one core or more while it verifies.
AUTO_GPU_WORKERS_MAX = 4
GIB_PER_GPU_WORKER = 24
CORES_PER_GPU_WORKER = 4


def gpu_memory_gib() -> list[float]:
    """The memory in GiB of each NVIDIA GPU this process may use (visible_gpus), as the driver reports it
    (`nvidia-smi`); empty where nothing answers."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=5).stdout
        mib = [float(line) for line in out.split() if line.strip()]
    except (OSError, subprocess.SubprocessError, ValueError):
        return []
    if os.environ.get("CUDA_VISIBLE_DEVICES") is not None:  # unset: nvidia-smi lists the GPUs this process may use
        visible = visible_gpus()
        if all(i.isdigit() for i in visible):  # else UUIDs: every GPU's memory
            mib = [mib[int(i)] for i in visible if int(i) < len(mib)]
    return [m / 1024 for m in mib]


@functools.lru_cache(maxsize=1)
def auto_gpu_workers() -> int:
    """Long-lived workers per GPU for `gpu-workers = "auto"`: a GiB budget of GIB_PER_GPU_WORKER each on the
    smallest GPU, CORES_PER_GPU_WORKER of the cores this process may use per GPU each, at most
    AUTO_GPU_WORKERS_MAX and at least one (one where the GPUs' memory cannot be read)."""
    memory = gpu_memory_gib()
    if not memory:
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    by_memory = int(min(memory) // GIB_PER_GPU_WORKER)
    by_cores = cores // (CORES_PER_GPU_WORKER * len(memory))
    return max(1, min(AUTO_GPU_WORKERS_MAX, by_memory, by_cores))
