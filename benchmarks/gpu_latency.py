"""Save -> performance diagnostic on a warm GPU worker: `python benchmarks/gpu_latency.py [--json FILE] [TASK ...]`.

What the language server does on a save, through the same engine entry point (`check.check_file` with the editor's
text and a long-lived worker pool), without the cache: verification, then the measure stage. The first check of a
task warms the worker (imports, CUDA context, the device's ceilings, torch.compile of the reference, Triton's
compile); the next ones are what a user waits for after each save. Prints a table (task | first check s | median s
to the verification's verdict (its "verdict" stage) | to the evidence runs' end | to the performance diagnostics | max | measured |
codes); --json writes the samples, --timeline each task's last save stage by stage.

Saves come `--pause` seconds (default 2) after the previous check's end, as saves between edits do: the worker
starts the next check's players in that time (run/players.py, spare players). `--pause 0` measures saves back to
back, where a check may find its players still starting.
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
from kernel_lsp.jobs import Stage  # noqa: E402
from kernel_lsp.run.executor import Executor, executor_for  # noqa: E402

DEFAULT = ["Activation/gelu_triton.py", "Normalization/layer_norm_triton.py", "Math/rsqrt_clamp_triton.py"]


def one(path: Path, settings: Settings, executor: Executor, text: str) -> tuple[float, dict]:
    t0 = time.monotonic()
    arrived: dict[str, float] = {}  # when each stage's first event reached this process, as a front end sees it

    def on_event(event) -> None:
        if isinstance(event, Stage):
            arrived.setdefault(event.stage, time.monotonic() - t0)
    report = check_file(CheckRequest(path, settings, ROOT / "tasks", source=text, executor=executor,
                                     on_event=on_event))
    seconds = time.monotonic() - t0
    codes = sorted({f.code for f in report.findings})
    measured = any(k.measurement for k in report.kernels.values())
    return seconds, {"codes": codes, "measured": measured, "worker_seconds": report.stats.get("seconds"),
                     # the verification's verdict (the server's first status), then the evidence runs' end
                     "verdict_s": round(arrived["verdict"], 3) if "verdict" in arrived else None,
                     "evidence_s": round(arrived.get("measure", seconds), 3),
                     "timeline": report.stats.get("timeline", [])}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--timeline", action="store_true", help="print the last save's stages to stderr")
    ap.add_argument("--pause", type=float, default=2.0, help="seconds between a check's end and the next save")
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
            warm, verdicts, evidence = [], [], []
            for i in range(args.repeats):
                time.sleep(args.pause)  # the time between saves (an edit), not a wait on anything of the checker's
                # An edit that changes nothing but a comment: a new text, as after a save.
                seconds, info = one(path, settings, pool, text + f"\n# save {i}\n")
                warm.append(seconds)
                verdicts.append(info["verdict_s"] or seconds)
                evidence.append(info["evidence_s"])
            rows.append({"task": task, "pause_s": args.pause, "first_s": round(first, 2), "warm_s": [round(s, 3) for s in warm],
                         "median_s": round(statistics.median(warm), 3), "max_s": round(max(warm), 3),
                         "verdict_median_s": round(statistics.median(verdicts), 3),
                         "evidence_median_s": round(statistics.median(evidence), 3), **info})
            print(f"| {task} | {first:.1f} | {statistics.median(verdicts):.2f} | {statistics.median(evidence):.2f} | "
                  f"{statistics.median(warm):.2f} | {max(warm):.2f} | {info['measured']} | {' '.join(info['codes'])} |",
                  flush=True)
            if args.timeline:  # where the last save's time went, stage by stage (the worker's own clock)
                for at, stage, detail in info["timeline"]:
                    print(f"    {at:7.3f} s  {stage}: {detail}", file=sys.stderr, flush=True)
    finally:
        pool.close()
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
