"""Time every task in tasks/index.json against PyTorch eager on a CUDA GPU: `python benchmarks/gpu_tasks.py`.

Method (docs/benchmarks.md): both sides built with the same seed on the GPU at the task's large shape; one
correctness check of ModelNew against Model (max abs error, and the reference's own dtype error vs float64 is
not re-derived here: `kernel-lsp check --device cuda` does that); then `triton.testing.do_bench` with
`return_mode="median"` (25 ms warm-up, 100 ms of repetitions, L2 flushed before each call) for each side.
Prints a markdown table; `--json FILE` also writes the raw numbers.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

import torch
import triton
import triton.testing

ROOT = Path(__file__).resolve().parent.parent
TASKS = ROOT / "tasks"


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    spec.loader.exec_module(module)
    return module


def _to_cuda(x):
    return x.cuda() if isinstance(x, torch.Tensor) else x


def _max_err(a, b) -> float:
    if isinstance(a, (list, tuple)):
        return max(_max_err(x, y) for x, y in zip(a, b))
    if not isinstance(a, torch.Tensor):
        return 0.0
    if "float8" in str(a.dtype):
        a, b = a.float(), b.float()
    d = (a.double() - b.double()).abs()
    d = torch.where(torch.isnan(d) & torch.isnan(a.double()) & torch.isnan(b.double()), torch.zeros_like(d), d)
    return float(d.max()) if d.numel() else 0.0


def bench_task(task: dict) -> dict:
    ref = _load(TASKS / task["reference"], f"ref_{task['name']}")
    impl = _load(TASKS / task["implementation"], f"impl_{task['name']}")
    init = ref.get_init_inputs()
    torch.manual_seed(0)
    model = ref.Model(*init).cuda().eval()
    torch.manual_seed(0)
    model_new = impl.ModelNew(*init).cuda().eval()
    torch.manual_seed(1)
    inputs = [_to_cuda(x) for x in ref.get_inputs()]
    with torch.no_grad():
        expected = model(*inputs)
        got = model_new(*inputs)
        torch.cuda.synchronize()
        err = _max_err(got, expected) if task["category"] != "Random" else float("nan")
        t_ref = triton.testing.do_bench(lambda: model(*inputs), return_mode="median")
        t_new = triton.testing.do_bench(lambda: model_new(*inputs), return_mode="median")
    seconds = t_new / 1e3
    return {"name": task["name"], "category": task["category"], "dtype": task["dtype"], "eager_ms": t_ref,
            "triton_ms": t_new, "speedup": t_ref / t_new, "max_abs_err": err,
            "tflops": task["flops"] / seconds / 1e12 if task["flops"] else 0.0,
            "tbps": task["bytes"] / seconds / 1e12}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    tasks = json.loads((TASKS / "index.json").read_text())["tasks"]
    if args.names:
        tasks = [t for t in tasks if t["name"] in args.names]
    props = torch.cuda.get_device_properties(0)
    print(f"device: {props.name}, torch {torch.__version__}, triton {triton.__version__}, "
          f"date {time.strftime('%Y-%m-%d')}\n")
    print("| category | task | dtype | eager ms | triton ms | speedup | TFLOP/s | TB/s | max abs err |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    rows = []
    for task in tasks:
        try:
            row = bench_task(task)
        except Exception as e:  # one broken task must not hide the others' numbers
            print(f"| {task['category']} | {task['name']} | {task['dtype']} | failed: {type(e).__name__}: "
                  f"{str(e).splitlines()[0][:120]} | | | | | |", flush=True)
            continue
        rows.append(row)
        print(f"| {row['category']} | {row['name']} | {row['dtype']} | {row['eager_ms']:.4f} | {row['triton_ms']:.4f} | "
              f"{row['speedup']:.2f}x | {row['tflops']:.1f} | {row['tbps']:.2f} | {row['max_abs_err']:.3g} |", flush=True)
        torch.cuda.empty_cache()
    if args.json:
        Path(args.json).write_text(json.dumps({"device": props.name, "torch": torch.__version__,
                                               "triton": triton.__version__, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
