"""kernel-lsp's back-to-back time per call against an independent timer, triton.testing.do_bench, on the same
tasks, sides and inputs (issue: timing a shared GPU). On a GPU: `python benchmarks/do_bench_compare.py --json OUT`.

For each task: `kernel-lsp check TASK --device cuda --format json` first (its measurement: each side's back-to-back
`wall_us` and GPU time `gpu_us`; with `--from-check REPORT`, taken from a check of all tasks instead), then, in this
process, the implementation, the reference and torch.compile of the reference built as kernel-lsp builds them
(KernelBench's seeding rule, the measure stage's inputs, seed 1), each timed with `do_bench(fn, warmup=25, rep=100, return_mode="median")`: L2 flushed before each call, events per call,
no synchronize between calls. Prints a table and writes the rows as JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEFAULT = ["Activation/gelu_triton.py", "Normalization/layer_norm_triton.py", "Normalization/rms_norm_triton.py",
           "Index/index_add_triton.py", "Convolution/pointwise_conv2d_triton.py"]


def kernel_lsp_times(path: Path, report: dict | None = None) -> dict:
    """The task's measurement from `report` (a `check --format json` of a run that included it), else from a
    check of the task alone."""
    if report is None:
        proc = subprocess.run([sys.executable, "-m", "kernel_lsp.cli", "check", str(path), "--device", "cuda",
                               "--format", "json", "--no-cache"], capture_output=True, text=True, timeout=600)
        report = json.loads(proc.stdout)
    doc = {"files": [f for f in report["files"] if Path(f["path"]).resolve() == path.resolve()
                     or f["path"].endswith("/" + str(path.relative_to(ROOT / "tasks")))],
           "diagnostics": [d for d in report["diagnostics"] if Path(d["path"]).resolve() == path.resolve()
                           or d["path"].endswith("/" + str(path.relative_to(ROOT / "tasks")))]}
    if not doc["files"]:
        return {"error": "not in the report"}
    m = next((k["measurement"] for k in doc["files"][0]["kernels"].values() if "measurement" in k), None)
    if m is None:
        return {"error": "; ".join(d["message"][:200] for d in doc["diagnostics"])}
    return {"sides": {s["side"]: s for s in m["sides"]},
            "codes": sorted({d["code"] for d in doc["diagnostics"]}),
            "launch_bound": [d["message"] for d in doc["diagnostics"] if d["code"] == "KL404"]}


def do_bench_times(path: Path) -> dict[str, float]:
    import torch
    import triton.testing

    from kernel_lsp.engine.link import link_file
    from kernel_lsp.engine.loader import load_problem
    from kernel_lsp.engine.measure import INPUT_SEED
    from kernel_lsp.engine.variants import clone_inputs
    source = path.read_text()
    link = link_file(path, source, root=ROOT / "tasks").link
    problem = load_problem(link.to_spec(), str(path), 0, None, "cuda")
    ref, impl = problem.callables()
    pristine = problem.make_inputs(INPUT_SEED)
    torch.set_grad_enabled(False)
    compiled = torch.compile(ref)
    sides = {"triton": impl, "eager": ref, "torch.compile": compiled}
    out = {}
    for name, fn in sides.items():
        inputs = clone_inputs(pristine)
        fn(*inputs)  # compile, load
        torch.cuda.synchronize()
        out[name] = triton.testing.do_bench(lambda fn=fn, inputs=inputs: fn(*inputs), warmup=25, rep=100,
                                            return_mode="median") * 1e3
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--from-check", metavar="JSON",
                    help="take kernel-lsp's times from this `check tasks --device cuda --format json` report "
                         "instead of checking each task again")
    ap.add_argument("tasks", nargs="*", default=DEFAULT)
    args = ap.parse_args()
    rows = []
    report = json.loads(Path(args.from_check).read_text()) if args.from_check else None
    for task in args.tasks:
        path = ROOT / "tasks" / task
        ours = kernel_lsp_times(path, report)
        if "error" in ours:
            rows.append({"task": task, "error": ours["error"]})
            print(f"{task}: not measured: {ours['error']}", flush=True)
            continue
        bench = do_bench_times(path)
        for side, us in bench.items():
            s = ours["sides"].get(side, {})
            row = {"task": task, "side": side, "do_bench_us": round(us, 2), "wall_us": s.get("wall_us"),
                   "gpu_us": s.get("gpu_us"), "host_us": s.get("host_us"),
                   "ratio": round(s["wall_us"] / us, 3) if s.get("wall_us") else None,
                   "launch_bound": ours["launch_bound"]}
            rows.append(row)
            print(f"| {task} | {side} | {row['do_bench_us']} | {row['wall_us']} | {row['gpu_us']} | {row['host_us']} | "
                  f"{row['ratio']} |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
