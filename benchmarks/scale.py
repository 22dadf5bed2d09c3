"""Files per minute of `kernel-lsp check` by executor: local processes with 1 and 2 workers, and a local Ray cluster.

    python benchmarks/scale.py [--sets corpus,tasks] [--device cpu|cuda] [--runs local-1,local-2,ray]
                               [--ray-cpus 2] [--output benchmarks/results/scale.json] [--keep DIR]
    python benchmarks/scale.py --per-job tasks [--device cpu|cuda]
    python benchmarks/scale.py --calls tasks [--device cpu|cuda] [--limit N] [--order one,batched]

Each run is the CLI as a user runs it (`check SET --format json --no-cache`, plus the run's flags), timed from
start to exit; the Ray runs join a cluster this script starts once beforehand (`ray.init(num_cpus=2)`, or one GPU
with `--device cuda`), so the cluster's own start is reported apart and the CLI's join is in the time. The
overhead of Ray per job is (wall of the Ray run - wall of the local run with as many workers) / files.

- `--device cpu` (default): local-1 (`--jobs 1`), local-2 (`--jobs 2`), ray (tasks on the cluster's CPUs);
- `--device cuda`: local (one long-lived worker per GPU, `--device cuda`), ray (one actor per GPU).

On a shared machine the walls drift with other work; `--per-job SET` measures Ray's cost apart from the checks':
one file at a time through both executors in this process (alternating which goes first), and what each job
costs beyond its worker's own seconds (the child's and the isolated re-run's) is its executor's overhead.

`--calls SET` measures the batch API as a reward pipeline calls it (kernel_lsp.api.evaluate): every kernel file of
the set as an item (its KernelBench problem given as text, as a pipeline holds it), checked one call per item, one
after the other (as verl's default reward manager calls a reward function), and in one batched call, on one warm
executor; it reports each one's wall time and whether the two gave every item the same verdict.

Prints a markdown table and writes the rows into the results file, replacing rows of the same set, run and device
(so a GPU machine's rows join the CPU ones). Triton's disk cache is left as it is: run once before to compare
warm caches (the rows say whether the machine was loaded: its load average before each run).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETS = {"corpus": "tests/corpus", "tasks": "tasks"}


def run_check(target: str, flags: list[str], env: dict[str, str], keep: Path | None = None) -> dict:
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "kernel_lsp.cli", "check", target, "--format", "json", "--no-cache",
                           *flags], capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.monotonic() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"check {target} {' '.join(flags)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    doc = json.loads(proc.stdout)
    if keep is not None:
        keep.write_text(proc.stdout)
    files = doc["files"]
    worker = [f["stats"]["seconds"] for f in files if "seconds" in f["stats"]]
    return {"files": len(files), "wall_s": round(wall, 1), "files_per_min": round(60 * len(files) / wall, 2),
            "median_job_s": round(statistics.median(worker), 2) if worker else None,
            "retried": sum(1 for f in files if f["stats"].get("retried")),
            "verdicts": _digest(files)}


def _digest(files: list[dict]) -> str:
    """A fingerprint of the findings, so runs of one set can be seen to agree."""
    import hashlib
    codes = sorted((f["path"], tuple(sorted(d["code"] for d in f["findings"]))) for f in files)
    return hashlib.sha256(json.dumps(codes).encode()).hexdigest()[:12]


def start_cluster(device: str, cpus: int) -> tuple[str, float]:
    import logging

    import ray
    start = time.monotonic()
    resources = {"num_gpus": 1} if device == "cuda" else {}
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR, **resources)
    return ray.get_runtime_context().gcs_address, round(time.monotonic() - start, 1)


def per_job(name: str, device: str) -> dict:
    """Ray's own cost per job, apart from the check's: every file of the set one at a time through the local
    executor and through Ray (alternating which goes first), each timed around `check_file`; what a job costs
    beyond its worker's time (the child's seconds and the isolated re-run's) is the executor's overhead, and Ray's
    extra is its overhead minus the local one. Insensitive to a load that slows both checks alike."""
    sys.path.insert(0, str(ROOT))
    from kernel_lsp.check import CheckRequest, check_file
    from kernel_lsp.cli import iter_python_files
    from kernel_lsp.config import Settings
    from kernel_lsp.run.executor import executor_for
    from kernel_lsp.run.ray_executor import RayExecutor
    settings = Settings(device=device)
    files = iter_python_files([ROOT / SETS[name]])
    local, remote = executor_for(settings, workers=1), RayExecutor(device=device, max_jobs=1)
    rows = []
    try:
        for i, path in enumerate(files):
            row = {"file": str(path.relative_to(ROOT))}
            for label, executor in ((("local", local), ("ray", remote)) if i % 2 == 0 else
                                    (("ray", remote), ("local", local))):
                start = time.monotonic()
                report = check_file(CheckRequest(path.resolve(), settings, ROOT, executor=executor))
                wall = time.monotonic() - start
                job = report.stats.get("seconds", 0.0)  # the job's stages, the evidence runs included
                row[label] = {"wall_s": round(wall, 3), "overhead_s": round(wall - job, 3),
                              "codes": sorted(f.code for f in report.findings)}
            rows.append(row)
            print(f"  {row}", file=sys.stderr, flush=True)
    finally:
        local.close()
        remote.close()
    extra = [r["ray"]["overhead_s"] - r["local"]["overhead_s"] for r in rows]
    wall = [r["local"]["wall_s"] for r in rows]
    return {"set": name, "device": device, "files": len(rows), "median_local_wall_s": round(statistics.median(wall), 2),
            "ray_extra_per_job_s": {"median": round(statistics.median(extra), 3),
                                    "mean": round(statistics.mean(extra), 3)},
            "ray_extra_percent_of_mean_job": round(100 * statistics.mean(extra) / statistics.mean(wall), 1),
            "same_codes": sum(r["ray"]["codes"] == r["local"]["codes"] for r in rows), "rows": rows,
            "date": time.strftime("%Y-%m-%d")}


def reward_items(name: str, limit: int | None = None) -> tuple[list, list[str]]:
    """The set's kernel files as batch API items, and the files left out: a KernelBench file gets its problem's text
    as `reference`, a native file that links itself is given alone; one linked to a sibling file (which an item
    cannot carry) or to nothing is left out."""
    sys.path.insert(0, str(ROOT))
    from kernel_lsp.api import Item
    from kernel_lsp.cli import iter_python_files
    from kernel_lsp.source.link import link_file
    items, skipped = [], []
    for path in iter_python_files([ROOT / SETS[name]]):
        text = path.read_text(encoding="utf-8")
        link = link_file(path, text).link
        if link is None or (link.kind == "native" and
                            {link.reference, link.inputs_path or link.reference} != {path.resolve()}):
            skipped.append(str(path.relative_to(ROOT)))
            continue
        reference = link.reference.read_text(encoding="utf-8") if link.reference != path.resolve() else None
        items.append(Item(text, reference=reference, name=path.name))
        if limit is not None and len(items) == limit:
            break
    return items, skipped


def calls(name: str, device: str, limit: int | None, order: list[str]) -> dict:
    """One call per item, one after the other, against one batched call of them all, on one warm executor."""
    from kernel_lsp.api import evaluate
    from kernel_lsp.config import Settings
    from kernel_lsp.run.executor import executor_for
    items, skipped = reward_items(name, limit)
    settings = Settings(device=device)
    executor = executor_for(settings)
    runs: dict[str, dict] = {}
    try:
        executor.warm_up()
        for mode in order:
            load = os.getloadavg()[0]
            print(f"{name} {mode}: {len(items)} items ...", file=sys.stderr, flush=True)
            start = time.monotonic()
            if mode == "one":
                verdicts = [r.verdict for item in items for r in evaluate([item], executor=executor, settings=settings)]
            else:
                verdicts = [""] * len(items)
                for r in evaluate(items, executor=executor, settings=settings):
                    verdicts[r.index] = r.verdict
            wall = time.monotonic() - start
            runs[mode] = {"wall_s": round(wall, 1), "items_per_min": round(60 * len(items) / wall, 2),
                          "load_before": round(load, 1), "verdicts": verdicts}
            print(f"  {mode}: {runs[mode]['wall_s']} s", file=sys.stderr, flush=True)
    finally:
        executor.close()
    same = sum(a == b for a, b in zip(runs["one"]["verdicts"], runs["batched"]["verdicts"])) \
        if len(runs) == 2 else None
    return {"set": name, "device": device, "items": len(items), "skipped": skipped, "capacity": executor.capacity,
            "order": order, **{f"{mode}_at_a_time" if mode == "one" else mode: {k: v for k, v in r.items()
                                                                               if k != "verdicts"}
                               for mode, r in runs.items()},
            "batched_speedup": round(runs["one"]["wall_s"] / runs["batched"]["wall_s"], 2) if same is not None
            else None, "same_verdicts": same, "date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count()}


def calls_table(row: dict) -> str:
    lines = ["| set | device | items | calls | wall s | items/min | load |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for key, label in (("one_at_a_time", "one item per call"), ("batched", "one batched call")):
        if key in row:
            r = row[key]
            lines.append(f"| {row['set']} | {row['device']} | {row['items']} | {label} | {r['wall_s']} | "
                         f"{r['items_per_min']} | {r['load_before']} |")
    if row.get("batched_speedup") is not None:
        lines.append(f"\nbatched: {row['batched_speedup']}x the one-at-a-time calls' speed "
                     f"({row['same_verdicts']} of {row['items']} items with the same verdict both ways)")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="corpus,tasks")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--runs", help="comma-separated: local-1, local-2, ray (cpu); local, ray (cuda)")
    ap.add_argument("--ray-cpus", type=int, default=2)
    ap.add_argument("--output", default=str(ROOT / "benchmarks" / "results" / "scale.json"))
    ap.add_argument("--keep", help="a folder to write each run's JSON report into (SET-RUN-DEVICE.json)")
    ap.add_argument("--per-job", metavar="SET", help="instead: Ray's overhead per job, one file at a time (per_job)")
    ap.add_argument("--calls", metavar="SET", help="instead: the batch API, one item per call against one batched call")
    ap.add_argument("--limit", type=int, help="with --calls: the set's first N items only")
    ap.add_argument("--order", default="one,batched", help="with --calls: which goes first (one,batched or batched,one)")
    args = ap.parse_args()
    if args.calls:
        order = args.order.split(",")
        if sorted(order) != ["batched", "one"]:
            ap.error("--order: one,batched or batched,one")
        result = calls(args.calls, args.device, args.limit, order)
        print(calls_table(result))
        path = Path(args.output)
        doc = json.loads(path.read_text()) if path.exists() else {"rows": []}
        doc.setdefault("calls", {})[f"{args.calls}/{args.device}"] = result
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=2) + "\n")
        return 0
    if args.per_job:
        cluster = start_cluster(args.device, 1)
        print(f"Ray cluster started in {cluster[1]} s", file=sys.stderr)
        result = per_job(args.per_job, args.device)
        print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=2))
        path = Path(args.output)
        doc = json.loads(path.read_text()) if path.exists() else {"rows": []}
        doc.setdefault("per_job", {})[f"{args.per_job}/{args.device}"] = result
        path.write_text(json.dumps(doc, indent=2) + "\n")
        return 0
    runs = (args.runs or ("local-1,local-2,ray" if args.device == "cpu" else "local,ray")).split(",")
    flags = {"local-1": ["--jobs", "1", "--device", "cpu"], "local-2": ["--jobs", "2", "--device", "cpu"],
             "local": ["--device", "cuda"], "ray": ["--device", args.device]}
    env = dict(os.environ)
    env.setdefault("PYTHONPATH", str(ROOT))
    keep = Path(args.keep) if args.keep else None
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    cluster = None
    rows = []
    for name in args.sets.split(","):
        for run in runs:
            extra = list(flags[run])
            if run == "ray":
                if cluster is None:
                    cluster = start_cluster(args.device, args.ray_cpus)
                    print(f"Ray cluster started in {cluster[1]} s at {cluster[0]}", file=sys.stderr)
                extra += ["--ray-address", cluster[0]]
            load = os.getloadavg()[0]
            print(f"{name} {run} ...", file=sys.stderr, flush=True)
            row = {"set": name, "run": run, "device": args.device, "load_before": round(load, 1),
                   **run_check(SETS[name], extra, env, keep / f"{name}-{run}-{args.device}.json" if keep else None)}
            rows.append(row)
            print(f"  {row}", file=sys.stderr, flush=True)
    meta = {"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(), "python": sys.version.split()[0],
            "ray_cluster_start_s": cluster[1] if cluster else None}
    for row in rows:
        row.update(meta)
    print(table(rows))
    write(Path(args.output), rows)
    return 0


def overheads(rows: list[dict]) -> dict[tuple, tuple[float, float]]:
    """Per (set, device): Ray's extra seconds per job against the local run with as many workers, and as a share."""
    out = {}
    for r in rows:
        if r["run"] != "ray":
            continue
        base = next((b for b in rows if b["set"] == r["set"] and b["device"] == r["device"]
                     and b["run"] in ("local-2", "local")), None)
        if base:
            extra = (r["wall_s"] - base["wall_s"]) / r["files"]
            out[(r["set"], r["device"])] = (round(extra, 2), round(100 * extra * r["files"] / base["wall_s"], 1))
    return out


def table(rows: list[dict]) -> str:
    over = overheads(rows)
    lines = ["| set | device | run | files | wall s | files/min | median job s | Ray overhead per job | load |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        o = over.get((r["set"], r["device"])) if r["run"] == "ray" else None
        ov = f"{o[0]:+.2f} s ({o[1]:+.1f}%)" if o else ""
        lines.append(f"| {r['set']} | {r['device']} | {r['run']} | {r['files']} | {r['wall_s']} | "
                     f"{r['files_per_min']} | {r['median_job_s']} | {ov} | {r['load_before']} |")
    return "\n".join(lines)


def write(path: Path, rows: list[dict]) -> None:
    kept = json.loads(path.read_text()).get("rows", []) if path.exists() else []
    new = {(r["set"], r["run"], r["device"]) for r in rows}
    merged = [r for r in kept if (r["set"], r["run"], r["device"]) not in new] + rows
    path.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(path.read_text()) if path.exists() else {}
    doc = {"command": "python benchmarks/scale.py", "rows": merged, "per_job": previous.get("per_job", {}),
           "calls": previous.get("calls", {}),
           "overhead": {f"{s}/{d}": {"seconds_per_job": v[0], "percent": v[1]}
                        for (s, d), v in overheads(merged).items()}}
    path.write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
