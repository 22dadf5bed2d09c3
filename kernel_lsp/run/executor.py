"""Where checks run: the seam every front end uses. The CLI, the language server, the proposers and the batch API
ask `executor_for(settings)` for an `Executor` and hand it to `check.CheckRequest`; none of them builds worker pools.

`executor_for` builds one from `Settings.executor_settings()` alone: this machine's executors (local.py: children
forked from the warm zygote, a long-lived worker per GPU or per runner command), or a Ray cluster's
(ray_executor.py, `executor = "ray"`). The Executor interface and this machine's executors are in local.py; they
are importable from here too.
"""

from __future__ import annotations

import logging

from ..config import ExecutorSettings, Settings
from ..device import gpu_present
from .local import Executor, HostExecutor, LocalExecutor, OnEvent, WorkerPoolExecutor
from .persistent import visible_gpus
from .ray_executor import RayExecutor
from .sandbox import options_from

__all__ = ["Executor", "HostExecutor", "LocalExecutor", "OnEvent", "RayExecutor", "WorkerPoolExecutor",
           "build_executor", "check_gpus", "chosen_gpus", "executor_for", "NoSuchGPU"]

log = logging.getLogger(__name__)


def executor_for(settings: Settings, workers: int | None = None) -> Executor:
    """The executor these settings ask for: built from `settings.executor_settings()` alone (build_executor), so a
    front end that keeps its executor (the language server) knows when to build a new one. `workers` (the CLI's
    --jobs) overrides `settings.workers` for local children."""
    return build_executor(settings.executor_settings(), workers)


def build_executor(chosen: ExecutorSettings, workers: int | None = None) -> Executor:
    """The executor `chosen` describes:

    - a runner (or several): one long-lived worker behind each command (jobs and their files travel over its stdio);
    - a local GPU (and device not cpu): `gpu_workers` long-lived workers per visible GPU (CUDA cannot be used in a
      forked child, and a fresh process per file pays seconds of imports and CUDA start-up); KERNEL_LSP_WARM=0 turns
      them off, and files then run one at a time in fresh processes, as parallel ones would share the GPU's memory;
    - else local children forked from the warm zygote, `workers` at a time;
    - `executor = "ray"`: a Ray cluster instead (ray_executor.py; `workers` then caps its CPU jobs at once).
    """
    options = options_from(chosen.sandbox)
    if chosen.executor == "ray":
        return RayExecutor(chosen.ray_address or None, chosen.device, options, chosen.retries, max_jobs=workers,
                           per_gpu=chosen.gpu_workers)
    capacity = workers or chosen.workers
    on_gpu = chosen.device != "cpu" and gpu_present()
    if on_gpu and not chosen.warm and workers is None:
        capacity = 1
    cpu = LocalExecutor(capacity, chosen.device, sandbox=options)  # the zygote says per job whether it can fork it
    if chosen.runners:
        return HostExecutor(cpu, WorkerPoolExecutor.runners([list(c) for c in chosen.runners], chosen.device,
                                                            options, chosen.secrets))
    if on_gpu and chosen.warm:
        try:
            gpus = chosen_gpus(chosen.gpus if isinstance(chosen.gpus, str) else list(chosen.gpus))
        except NoSuchGPU as e:  # front ends check this first (check_gpus) and say it; here, every GPU serves
            log.warning("%s; using every GPU", e)
            gpus = None
        return HostExecutor(cpu, WorkerPoolExecutor.local_gpus("cuda" if chosen.device == "cuda" else "auto",
                                                               gpus, options, per_gpu=chosen.gpu_workers))
    return HostExecutor(cpu)


class NoSuchGPU(ValueError):
    """`gpus` names a GPU this process cannot use."""


def check_gpus(settings: Settings) -> str | None:
    """What is wrong with the `gpus` setting on this machine, or None (front ends say it as a usage error)."""
    if settings.gpus == "all" or settings.runner or settings.runners or settings.device == "cpu":
        return None  # every GPU, or none of this machine's is used
    if not gpu_present():
        return "gpus: this machine has no GPU to choose from (use a runner, or leave gpus at \"all\")"
    try:
        chosen_gpus(settings.gpus)
    except NoSuchGPU as e:
        return str(e)
    return None


def chosen_gpus(gpus) -> list[str]:
    """The GPUs the `gpus` setting picks among the visible ones: "all", or indices into that list."""
    visible = visible_gpus() or ["0"]
    if gpus == "all":
        return visible
    missing = [g for g in gpus if g >= len(visible)]
    if missing:
        raise NoSuchGPU(f"gpus: GPU {missing[0]} is not among the {len(visible)} this process can use "
                        f"({', '.join(visible)})")
    return [visible[g] for g in gpus]
