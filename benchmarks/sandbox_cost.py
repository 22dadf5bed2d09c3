"""What the sandbox and the evidence runs cost per check: `python benchmarks/sandbox_cost.py --out
benchmarks/results/sandbox-cost-cpu.json` on the CPU, `--device cuda --out benchmarks/results/sandbox-cost-h200.json`
on a GPU, where each check also times its kernels (docs/performance.md).

Three settings, each a project folder holding copies of the same corpus files and a pyproject.toml:
- `default`: the sandbox and the evidence runs (kernel-lsp's defaults);
- `no-sandbox`: `sandbox = false`, the evidence runs kept;
- `neither`: `sandbox = false` and `isolated-rerun = false`.
Per round, one `kernel-lsp check FILES --no-cache --format json --jobs 1` per setting, the settings' order rotated
between rounds so a change of the machine's load hits all alike. Reported per setting: the median over rounds of
the run's wall time per file (the workers' start, where the sandbox is entered, included), of the worker's seconds
per file (`stats.seconds`: load, capture, compile, verify, evidence) and of the evidence runs' seconds (from the
file's `stats.timeline`: the evidence stage's start to the next stage, or to the job's end; files that passed).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
# Single-file cases with their reference in the file: five correct kernels (each is re-run) and three bugs.
FILES = ["ok_add_fp32.py", "ok_softmax_fp32.py", "ok_row_sum_bf16.py", "ok_sgd_momentum_inplace.py", "ok_dropout.py",
         "bug_softmax_no_max.py", "bug_relu_drops_nan.py", "bug_launch_discarded.py"]
SETTINGS = {"default": "", "no-sandbox": "sandbox = false\n",
            "neither": "sandbox = false\nisolated-rerun = false\n"}


def evidence_seconds(stats: dict) -> float | None:
    """The evidence stage's seconds, read off the job's timeline ([seconds since the job started, stage, detail]):
    None where it did not run (a file that failed the verifier)."""
    timeline = stats.get("timeline") or []
    starts = [at for at, stage, _ in timeline if stage == "evidence"]
    if not starts:
        return None
    later = [at for at, stage, _ in timeline if at >= starts[0] and stage != "evidence"]
    return round((min(later) if later else stats.get("seconds", starts[0])) - starts[0], 3)


def run(folder: Path) -> dict:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "kernel_lsp.cli", "check", *FILES, "--no-cache", "--format", "json",
                           "--jobs", "1"], cwd=folder, capture_output=True, text=True, timeout=1800)
    wall = time.monotonic() - t0
    doc = json.loads(proc.stdout)
    files = doc["files"]
    evidence = [s for s in (evidence_seconds(f["stats"]) for f in files) if s is not None]
    return {"wall_per_file_s": wall / len(files), "worker_s": [f["stats"]["seconds"] for f in files
                                                                 if f["stats"].get("seconds") is not None],
            "evidence_s": evidence, "codes": {Path(f["path"]).name: sorted({d["code"] for d in f["findings"]})
                                              for f in files}}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out")
    ap.add_argument("--device", default="cpu", help="cuda: the checks time on the GPU too (the measure stage)")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp())
    try:
        folders = {}
        for name, extra in SETTINGS.items():
            folder = base / name
            folder.mkdir()
            (folder / "pyproject.toml").write_text(f'[tool.kernel-lsp]\ndevice = "{args.device}"\n' + extra)
            for f in FILES:
                shutil.copy(CORPUS / f, folder / f)
            folders[name] = folder
        names = list(SETTINGS)
        runs: dict[str, list[dict]] = {n: [] for n in names}
        for r in range(args.rounds):
            for k in range(len(names)):
                name = names[(r + k) % len(names)]
                runs[name].append(run(folders[name]))
                print(f"round {r + 1} {name}: {runs[name][-1]['wall_per_file_s']:.2f} s per file", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    med = lambda xs: round(statistics.median(xs), 3) if xs else None  # noqa: E731
    rows = {}
    for name in names:
        rs = runs[name]
        rows[name] = {"wall_per_file_s": med([r["wall_per_file_s"] for r in rs]),
                      "worker_s": med([statistics.median(r["worker_s"]) for r in rs if r["worker_s"]]),
                      "evidence_s": med([statistics.median(r["evidence_s"]) for r in rs if r["evidence_s"]]),
                      "codes": rs[-1]["codes"]}
    print("| setting | wall per file s | worker per file s (median) | evidence runs per passing file s |")
    print("| --- | --- | --- | --- |")
    for name, row in rows.items():
        print(f"| {name} | {row['wall_per_file_s']} | {row['worker_s']} | {row['evidence_s']} |")
    # The sandbox must change no verdict; without the evidence runs, bug_launch_discarded's KL221 is lost.
    same = rows["default"]["codes"] == rows["no-sandbox"]["codes"]
    lost = sorted(n for n, c in rows["default"]["codes"].items() if c != rows["neither"]["codes"].get(n))
    print("the same findings with and without the sandbox" if same else "FINDINGS DIFFER with the sandbox")
    print(f"without the evidence runs, findings change on: {', '.join(lost) or 'none'}")
    if args.out:
        Path(args.out).write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "device": args.device, "files": FILES,
                                              "rounds": args.rounds, "settings": rows,
                                              "evidence_only_findings": lost}, indent=1) + "\n")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
