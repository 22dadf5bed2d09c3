"""`kernel-lsp optimize --mode tune` over every task slower than torch.compile in a tasks table:
`python benchmarks/tune_tasks.py TASKS.json --out DIR [--candidates N] [--rounds R] [--gpus G]`.

TASKS.json is `kernel-lsp check tasks --device cuda --format json`; a task is tuned when its speedup over
torch.compile has its whole 95% interval below 1, or, with `--below-roofline PCT`, when it reaches less than PCT% of
its roofline (a task far faster than torch.compile can still be far from what the GPU allows: embedding_bag_sum,
2.83x torch.compile at 28% of its roofline, gained 1.43x from its constants alone). Tasks run G at a time, one GPU each (CUDA_VISIBLE_DEVICES); each
proposal goes to DIR/<task>.json (with the diff of an accepted change; nothing is applied here), and a table is
printed: what tune lifted, by how much, and how long it took.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def slow_tasks(doc: dict, below_roofline: float | None = None) -> list[str]:
    """The tasks to tune: slower than torch.compile beyond doubt, or under `below_roofline` percent of roofline."""
    out = []
    for f in doc["files"]:
        m = next((k["measurement"] for k in f["kernels"].values() if k.get("measurement")), None)
        s = next((s for s in (m or {}).get("speedups", []) if s["against"] == "torch.compile"), None)
        percent = ((m or {}).get("roofline") or {}).get("percent")
        if ((s is not None and s["high"] < 1.0)
                or (below_roofline is not None and percent is not None and percent < below_roofline)):
            out.append(f["path"])
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("tasks_json")
    ap.add_argument("--out", required=True)
    ap.add_argument("--candidates", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--gpus", type=int, default=1)
    ap.add_argument("--first-gpu", type=int, default=0, help="GPU index of the first slot")
    ap.add_argument("--part", default="1/1", help="I/N: this run takes every N-th task, from the I-th")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--below-roofline", type=float, metavar="PCT",
                    help="also tune the tasks under PCT%% of their roofline, however they compare to torch.compile")
    args = ap.parse_args()
    doc = json.loads(Path(args.tasks_json).read_text())
    root = Path(__file__).resolve().parent.parent
    paths = [root / "tasks" / Path(p).parent.name / Path(p).name for p in slow_tasks(doc, args.below_roofline)]
    if args.only:
        paths = [p for p in paths if any(o in p.name for o in args.only)]
    i, n = (int(x) for x in args.part.split("/"))
    paths = paths[i - 1::n]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    slots = list(range(args.first_gpu, args.first_gpu + args.gpus))

    def run(i_path):
        i, path = i_path
        gpu = slots[i % len(slots)]
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "kernel_lsp.cli", "optimize", str(path), "--mode", "tune",
                               "--device", "cuda", "--candidates", str(args.candidates), "--rounds", str(args.rounds),
                               "--timeout", "300", "--format", "json", "-q"], capture_output=True, text=True,
                              env=dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu)), timeout=1800)
        seconds = time.monotonic() - t0
        try:
            p = json.loads(proc.stdout)
        except json.JSONDecodeError:
            p = {"accepted": False, "summary": f"failed: {proc.stderr[-500:]}", "candidates": []}
        p["wall_seconds"] = round(seconds, 1)
        (out / f"{path.stem}.json").write_text(json.dumps(p, indent=2))
        return path.stem, p

    # Tasks are handed out in order; with G GPUs, G run at once, each pinned to its own GPU.
    results = []
    with ThreadPoolExecutor(max_workers=len(slots)) as pool:
        for name, p in pool.map(run, list(enumerate(paths))):
            results.append((name, p))
            win = next((c for c in p.get("candidates", []) if c.get("verdict") == "accepted"), None)
            gain = (f"{win['speedup']['ratio']:.2f}x ({win['speedup']['low']:.2f}-{win['speedup']['high']:.2f})"
                    if win and win.get("speedup") else "-")
            print(f"| {name} | {'yes' if p.get('accepted') else 'no'} | {gain} | {len(p.get('candidates', []))} | "
                  f"{p.get('wall_seconds')} | {p.get('summary', '')[:120]} |", flush=True)
    lifted = sum(1 for _, p in results if p.get("accepted"))
    print(f"\n{lifted} of {len(results)} tasks lifted by tune")
    return 0


if __name__ == "__main__":
    sys.exit(main())
