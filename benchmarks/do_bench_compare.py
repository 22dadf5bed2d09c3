"""kernel-lsp's times against independent timers on the same tasks, sides and inputs (issue: timing a shared GPU).
On a GPU: `python benchmarks/do_bench_compare.py --json OUT` (tests/test_gpu_measure.py runs it).

For each task: `kernel-lsp check TASK --device cuda --format json` first (the product's numbers: each side's
back-to-back `wall_us`, GPU time `gpu_us` and host issue time `host_us`; with `--from-check REPORT`, taken from a check
of all tasks instead). Then, in this process, the implementation, the reference and torch.compile of the reference,
built as kernel-lsp builds them (the measure stage's inputs, seed 1), each timed four ways one after another:
- `do_bench_us`: `triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")` (L2 flushed before each
  call, an event pair around it, no synchronize between calls);
- `loop_us`: a plain loop, 200 calls between two synchronizes by the host clock, median of five: what a loop pays
  (these two read twice, before and after kernel-lsp's timer, the lower reading kept; both under `readings`);
- `kl_gpu_us`, `kl_wall_us`, `kl_issue_us`: kernel-lsp's own timer (checker/measure/timing.py: `time_sides` and
  `time_back_to_back` on a `CudaClock`), here, on the same callables.
A side is `host`-bound when kernel-lsp's issue time is over 0.8 of its GPU time. Where the GPU bounds a side, every
timer reads its GPU time; where the host does, do_bench does not read what a loop pays: its flush (about 61 us on an
H200) runs while the host issues the next call, so a wrapper up to that much slower than its kernels reads as the
kernels' time (docs/performance-method.md). `--probe` adds where each do_bench call's time goes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
HOST_BOUND = 0.8  # issue time over this fraction of the GPU time: the host may bound a loop
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


def plain_loop_us(fn, calls: int = 200, repeats: int = 5) -> float:
    """What a loop pays per call: `calls` calls between two synchronizes by the host clock, median of `repeats`."""
    import statistics
    import time

    import torch
    walls = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        walls.append((time.perf_counter() - t0) * 1e6 / calls)
    return statistics.median(walls)


def probe(fn, calls: int = 400) -> dict:
    """Where a do_bench call's time goes, on the GPU's and the host's clocks: do_bench's loop (flush, start event,
    call, end event) with an extra event before each flush and the host's time inside each call; the same loop with
    no flush; a plain loop (no flush, no events) timed by the host; the call's host time with the GPU idle; and the
    synchronizations PyTorch reports inside one call. Medians over the second half (the steady state) and over
    calls 4-24 (kernel-lsp's batches)."""
    import time
    import warnings

    import torch
    flush = torch.empty(256 << 18, dtype=torch.int32, device="cuda")
    ev = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731
    med = lambda xs: round(sorted(xs)[len(xs) // 2], 2)  # noqa: E731
    out = {}
    for mode in ("flush", "noflush"):
        e0, s, e = [ev() for _ in range(calls)], [ev() for _ in range(calls)], [ev() for _ in range(calls)]
        host = []
        torch.cuda.synchronize()
        for i in range(calls):
            e0[i].record()
            if mode == "flush":
                flush.zero_()
            s[i].record()
            t = time.perf_counter()
            fn()
            host.append((time.perf_counter() - t) * 1e6)
            e[i].record()
        torch.cuda.synchronize()
        call = [a.elapsed_time(b) * 1e3 for a, b in zip(s, e)]
        pre = [a.elapsed_time(b) * 1e3 for a, b in zip(e0, s)]
        idle = [e[i - 1].elapsed_time(e0[i]) * 1e3 for i in range(1, calls)]
        half = calls // 2
        out[mode] = {"call_us": med(call[half:]), "call_us_4_24": med(call[4:24]), "flush_us": med(pre[half:]),
                     "idle_before_us": med(idle[half:]), "host_in_loop_us": med(host[half:]),
                     "host_in_loop_4_24_us": med(host[4:24])}
    out["plain_loop_us"] = round(plain_loop_us(fn), 2)
    idle_host = []
    for _ in range(21):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        idle_host.append((time.perf_counter() - t) * 1e6)
    torch.cuda.synchronize()
    out["issue_idle_us"] = med(idle_host)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode(1)
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode(0)
    out["syncs"] = [str(w.message)[:160] for w in caught]
    torch.cuda.synchronize()
    return out


def _implementation(path: Path, link, problem):
    """The implementation imported into this process, built as kernel-lsp builds it (KernelBench's seeding rule)."""
    import importlib.util

    import torch
    spec = importlib.util.spec_from_file_location(f"bench_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if link.kind != "kernelbench":
        return getattr(module, link.entry)
    torch.manual_seed(0)
    model = module.ModelNew(*(problem.init() or []))
    return model.eval().to("cuda") if isinstance(model, torch.nn.Module) else model


def independent_times(path: Path, probes: dict | None = None) -> dict[str, dict]:
    """Per side: do_bench, a plain loop and kernel-lsp's timer, in this process, on the same inputs."""
    import statistics

    import torch
    import triton.testing

    from kernel_lsp.source.link import link_file
    from kernel_lsp.checker.problem.loader import load_problem
    from kernel_lsp.checker.measure.stage import INPUT_SEED
    from kernel_lsp.checker.measure.timing import CudaClock, time_back_to_back, time_sides
    from kernel_lsp.checker.verify.plan.variants import clone_inputs
    source = path.read_text()
    link = link_file(path, source, root=ROOT / "tasks").link
    problem = load_problem(link.to_spec(), str(path), 0, None, "cuda")  # the reference side (kernel-lsp's own way)
    ref, _ = problem.callables()
    impl = _implementation(path, link.to_spec(), problem)  # here, in this process: the independent timer's view
    pristine = problem.make_inputs(INPUT_SEED)
    torch.set_grad_enabled(False)
    compiled = torch.compile(ref)
    sides = {"triton": impl, "eager": ref, "torch.compile": compiled}
    clock = CudaClock()
    out = {}
    for name, fn in sides.items():
        inputs = clone_inputs(pristine)
        call = lambda fn=fn, inputs=inputs: fn(*inputs)  # noqa: E731
        call()  # compile, load
        torch.cuda.synchronize()
        # Each independent timer reads twice, before and after kernel-lsp's, and its lower reading counts: one
        # reading of a GPU-bound side once came 25-40% above every other timer's (H100, pointwise_conv2d's
        # torch.compile: do_bench 214.8 us, loop 192.9 us, kernel-lsp 148.7-168.9 us, 153 us the day before).
        readings = {"do_bench_us": [], "loop_us": []}

        def independent(call=call):
            readings["do_bench_us"].append(
                triton.testing.do_bench(call, warmup=25, rep=100, return_mode="median") * 1e3)
            readings["loop_us"].append(plain_loop_us(call))
        independent()
        events = time_sides({name: [call]}, clock, budget_s=0.5)[name]
        back = time_back_to_back({name: [call]}, clock)[name]
        independent()
        row = {k: min(v) for k, v in readings.items()}
        row["kl_gpu_us"] = statistics.median(events.event_us)
        row["kl_wall_us"] = statistics.median(back.loop_us())
        row["kl_issue_us"] = statistics.median(back.issue_us)
        out[name] = {k: round(v, 2) for k, v in row.items()}
        out[name]["readings"] = {k: [round(x, 2) for x in v] for k, v in readings.items()}
        if probes is not None:
            probes[name] = probe(call)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--from-check", metavar="JSON",
                    help="take kernel-lsp's times from this `check tasks --device cuda --format json` report "
                         "instead of checking each task again")
    ap.add_argument("--probe", action="store_true",
                    help="also take each side's time apart (`probe`): flush, GPU idle, host time in the loop")
    ap.add_argument("tasks", nargs="*", default=DEFAULT)
    args = ap.parse_args()
    rows = []
    print("| task | side | bound | do_bench | loop | kernel-lsp here: wall | gpu | issue | check: wall | gpu | host |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    report = json.loads(Path(args.from_check).read_text()) if args.from_check else None
    for task in args.tasks:
        path = ROOT / "tasks" / task
        ours = kernel_lsp_times(path, report)
        if "error" in ours:
            rows.append({"task": task, "error": ours["error"]})
            print(f"{task}: not measured: {ours['error']}", flush=True)
            continue
        probes = {} if args.probe else None
        here = independent_times(path, probes)
        for side, t in here.items():
            s = ours["sides"].get(side, {})
            row = {"task": task, "side": side, **t,
                   "bound": "host" if t["kl_issue_us"] > HOST_BOUND * t["kl_gpu_us"] else "gpu",
                   "wall_us": s.get("wall_us"), "gpu_us": s.get("gpu_us"), "host_us": s.get("host_us"),
                   "launch_bound": ours["launch_bound"]}
            if probes is not None:
                row["probe"] = probes[side]
            rows.append(row)
            print(f"| {task} | {side} | {row['bound']} | {t['do_bench_us']} | {t['loop_us']} | {t['kl_wall_us']} | "
                  f"{t['kl_gpu_us']} | {t['kl_issue_us']} | {row['wall_us']} | {row['gpu_us']} | {row['host_us']} |",
                  flush=True)
            if probes is not None:
                print("    probe:", json.dumps(probes[side]), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
