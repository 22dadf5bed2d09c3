"""Save -> performance diagnostic on a warm GPU worker: `python benchmarks/gpu_latency.py [--json FILE] [TASK ...]`.

What the language server does on a save, through the same engine entry point (`check.check_file` with the editor's
text and a long-lived worker pool), without the cache: verification, then the measure stage. The first check of a
task warms the worker (imports, CUDA context, the device's ceilings, torch.compile of the reference, Triton's
compile); the next ones are what a user waits for after each save. Prints a table; --json writes the samples.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kernel_lsp.check import CheckRequest, check_file  # noqa: E402
from kernel_lsp.config import Settings  # noqa: E402
from kernel_lsp.run.executor import Executor, executor_for  # noqa: E402

DEFAULT = ["Activation/gelu_triton.py", "Normalization/layer_norm_triton.py", "Math/rsqrt_clamp_triton.py"]


def one(path: Path, settings: Settings, executor: Executor, text: str) -> tuple[float, dict]:
    t0 = time.monotonic()
    report = check_file(CheckRequest(path, settings, ROOT / "tasks", source=text, executor=executor))
    seconds = time.monotonic() - t0
    codes = sorted({f.code for f in report.findings})
    measured = any(k.measurement for k in report.kernels.values())
    return seconds, {"codes": codes, "measured": measured, "worker_seconds": report.stats.get("seconds")}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("tasks", nargs="*", default=DEFAULT)
    args = ap.parse_args()
    settings = Settings(device="cuda", timeout=600)
    pool = executor_for(settings)
    rows = []
    try:
        for task in args.tasks:
            path = ROOT / "tasks" / task
            text = path.read_text()
            first, info = one(path, settings, pool, text)
            warm = []
            for i in range(args.repeats):
                # An edit that changes nothing but a comment: a new text, as after a save.
                seconds, info = one(path, settings, pool, text + f"\n# save {i}\n")
                warm.append(seconds)
            rows.append({"task": task, "first_s": round(first, 2), "warm_s": [round(s, 3) for s in warm],
                         "median_s": round(statistics.median(warm), 3), "max_s": round(max(warm), 3), **info})
            print(f"| {task} | {first:.1f} | {statistics.median(warm):.2f} | {max(warm):.2f} | {info['measured']} | "
                  f"{' '.join(info['codes'])} |", flush=True)
    finally:
        pool.close()
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
