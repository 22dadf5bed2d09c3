"""The device's ceilings, measured once per GPU and driver and cached on disk. Runs in a worker on a GPU.

- copy: a 2 GiB device-to-device copy, counting bytes read plus bytes written, in GB/s;
- write: a 2 GiB memset (`zero_`), bytes written only, in GB/s. A stream that only writes moves faster than a
  copy's mix of reads and writes (on the H200 torch.compile's outer product writes at about 4.47 TB/s, a copy at
  4.22), so a write-bound kernel above the copy rate is not impossible: the impossible-speed rule takes the faster;
- matmul DTYPE: an 8192^3 product through torch (cuBLAS) on random data, in TFLOP/s: fp32 (TF32 off), tf32,
  bf16, fp16, and fp8 (e4m3, through torch._scaled_mm) where the GPU has it.
Each is repeated; the value is the median and the spread is max / median - 1, the margin a claim of beating the
ceiling must exceed (roofline.impossible). Datasheet numbers are not used: they are not what this card, at its
clocks and temperature, does.

Cached as JSON in ~/.cache/kernel-lsp/ceilings (or $KERNEL_LSP_CEILINGS_DIR), one file per GPU name and driver,
so every later check on the same card reads it instead of spending a second measuring.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from pathlib import Path

from ...model import Ceiling, Ceilings
from .stats import median, relative_spread

REPEATS = 7
COPY_BYTES = 2 << 30
MATMUL_N = 8192
REQUIRED = ("copy", "write")  # a cached file without one of these was written by an older version


def cache_dir() -> Path:
    return Path(os.environ.get("KERNEL_LSP_CEILINGS_DIR") or Path.home() / ".cache" / "kernel-lsp" / "ceilings")


def device_identity() -> tuple[str, str]:
    import torch
    name = torch.cuda.get_device_name()
    driver = ""
    try:
        import pynvml  # nvidia-ml-py, where installed
        pynvml.nvmlInit()
        driver = pynvml.nvmlSystemGetDriverVersion()
        driver = driver.decode() if isinstance(driver, bytes) else driver
    except Exception:
        driver = f"cuda {torch.version.cuda}"
    return name, driver


def _time_ms(fn, repeats: int) -> list[float]:
    import torch
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return times


def _ceiling(name: str, rates: list[float]) -> Ceiling:
    return Ceiling(name, round(median(rates), 3), round(relative_spread(rates), 4))


def measure_copy() -> Ceiling:
    import torch
    src = torch.empty(COPY_BYTES // 4, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    times = _time_ms(lambda: dst.copy_(src), REPEATS)
    return _ceiling("copy", [2 * COPY_BYTES / (t * 1e-3) / 1e9 for t in times])


def measure_write() -> Ceiling:
    import torch
    dst = torch.empty(COPY_BYTES // 4, dtype=torch.float32, device="cuda")
    times = _time_ms(dst.zero_, REPEATS)  # a memset: the fastest way CUDA writes memory
    return _ceiling("write", [COPY_BYTES / (t * 1e-3) / 1e9 for t in times])


def measure_matmuls() -> list[Ceiling]:
    import torch
    n = MATMUL_N
    flops = 2.0 * n * n * n
    out = []
    for name, dtype, tf32 in (("fp32", torch.float32, False), ("tf32", torch.float32, True),
                              ("bf16", torch.bfloat16, False), ("fp16", torch.float16, False)):
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        b = torch.randn(n, n, device="cuda", dtype=dtype)
        previous = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        try:
            times = _time_ms(lambda: a @ b, REPEATS)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = previous
        out.append(_ceiling(f"matmul {name}", [flops / (t * 1e-3) / 1e12 for t in times]))
    if torch.cuda.get_device_capability() >= (8, 9) and hasattr(torch, "_scaled_mm"):
        try:
            a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
            b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn).t()
            one = torch.tensor(1.0, device="cuda")
            times = _time_ms(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
                             REPEATS)
            out.append(_ceiling("matmul fp8", [flops / (t * 1e-3) / 1e12 for t in times]))
        except Exception:
            pass  # no fp8 ceiling: fp8 kernels are judged against bandwidth alone
    torch.cuda.empty_cache()
    return out


def measure() -> Ceilings:
    import torch
    name, driver = device_identity()
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    ceilings = [measure_copy(), measure_write()] + measure_matmuls()
    torch.cuda.empty_cache()
    return Ceilings(name, driver, int(getattr(props, "L2_cache_size", 0) or 0), ceilings, time.strftime("%Y-%m-%d"))


def _cache_file(name: str, driver: str) -> Path:
    """Per GPU model and driver, per torch build and CUDA version (its cuBLAS sets the matmul ceilings; a pip
    cuBLAS wheel's version too, where one is installed) and per version of the measuring code (this module and
    stats.py): ceilings measured otherwise are measured again, not served."""
    import hashlib
    from importlib import metadata

    import torch
    from . import stats
    cublas = []
    for wheel in ("nvidia-cublas-cu12", "nvidia-cublas-cu13", "nvidia-cublas"):
        try:
            cublas.append(metadata.version(wheel))
        except metadata.PackageNotFoundError:
            pass
    code = hashlib.sha256(Path(__file__).read_bytes() + Path(stats.__file__).read_bytes()).hexdigest()
    build = hashlib.sha256(repr((torch.__version__, torch.version.cuda, cublas)).encode()).hexdigest()
    return cache_dir() / (re.sub(r"[^A-Za-z0-9._-]+", "_", f"{name}-{driver}-{build[:10]}-{code[:10]}") + ".json")


def load_or_measure() -> tuple[Ceilings, bool]:
    """The ceilings of this GPU: from the on-disk cache, else measured now and stored. Returns (ceilings, cached)."""
    name, driver = device_identity()
    path = _cache_file(name, driver)
    try:
        cached = Ceilings.from_dict(json.loads(path.read_text(encoding="utf-8")))
        if all(cached.get(n) is not None for n in REQUIRED):
            return cached, True
    except (OSError, ValueError, KeyError, TypeError):
        pass  # none cached, or from a version that measured fewer ceilings: measured again
    ceilings = measure()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(ceilings.to_dict(), f, indent=2)
        os.replace(tmp, path)
    except OSError:
        pass  # measured again next time: a cache that cannot be written only costs time
    return ceilings, False
