"""Where kernels can run, as the parent sees it without importing torch: the device names a user may ask for,
and whether this machine has a GPU at all (the device nodes of NVIDIA's and AMD's drivers)."""

from __future__ import annotations

import glob
import os

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
