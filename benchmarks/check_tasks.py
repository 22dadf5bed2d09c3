"""Wall time of `kernel-lsp check tasks/` cold and warm, and compile time per kernel per target.

`python benchmarks/check_tasks.py [--targets sm_80,sm_90,sm_100]`: runs the CLI twice on tasks/ with a fresh
cache directory (cold: every file compiled and verified; warm: every file from the cache), then once more with
`--no-verify` over the given targets to time compilation alone. Prints markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(args: list[str], env: dict) -> tuple[float, dict, int]:
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "kernel_lsp.cli", "check", *args, "--format", "json"],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    return time.monotonic() - start, json.loads(proc.stdout), proc.returncode


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--targets", default="sm_80,sm_90,sm_100")
    args = ap.parse_args()
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as cache:
        cfg = Path(cache) / "pyproject.toml"
        cfg.write_text(f'[tool.kernel-lsp]\ncache-dir = "{cache}/c"\n')
        cold, doc, rc_cold = run(["tasks", "--config", str(cfg)], env)
        warm, doc_w, rc_warm = run(["tasks", "--config", str(cfg)], env)
    print(f"cpus: {os.cpu_count()}, date: {time.strftime('%Y-%m-%d')}\n")
    print("| run | wall s | files | workers | compiles | cache hits | exit |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, t, d, rc in (("cold", cold, doc, rc_cold), ("warm", warm, doc_w, rc_warm)):
        s = d["stats"]
        print(f"| {name} | {t:.1f} | {s['files']} | {s['workers_spawned']} | {s['compiles']} | {s['cache_hits']} | {rc} |")
    per_file = sorted((f["stats"].get("seconds", 0), Path(f["path"]).relative_to(ROOT / "tasks").as_posix())
                      for f in doc["files"])
    print(f"\nper file (worker seconds, cold): median {statistics.median(t for t, _ in per_file):.1f}, "
          f"max {per_file[-1][0]:.1f} ({per_file[-1][1]})")
    t_compile, doc_c, _ = run(["tasks", "--no-verify", "--no-cache", "--target", args.targets], env)
    times: dict[str, list[float]] = {}
    for f in doc_c["files"]:
        for k in f["kernels"].values():
            for c in k.get("compile", []):
                times.setdefault(c["target"], []).append(c["seconds"])
    print(f"\ncompile only, {args.targets}: {t_compile:.1f} s wall for {doc_c['stats']['files']} files\n")
    print("| target | kernels | median s | max s |")
    print("| --- | --- | --- | --- |")
    for target, ts in times.items():
        print(f"| {target} | {len(ts)} | {statistics.median(ts):.3f} | {max(ts):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
