"""Time CPU verification per file and per variant: `python benchmarks/verify_times.py [PATHS...]`.

Runs `kernel-lsp check --no-cache --jobs 1` (one file at a time, so times do not overlap) and prints, per file,
the wall time of its worker (interpreter start, torch/triton import, capture, compile, verification) and the
time of each verification variant. Defaults to tests/corpus and tasks/.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    paths = argv or [str(ROOT / "tests" / "corpus"), str(ROOT / "tasks")]
    proc = subprocess.run([sys.executable, "-m", "kernel_lsp.cli", "check", *paths, "--format", "json",
                           "--no-cache", "--jobs", "1"], capture_output=True, text=True)
    doc = json.loads(proc.stdout)
    variant_totals: dict[str, list[float]] = {}
    print("| file | worker s | verify s | variants | slowest variant |")
    print("| --- | --- | --- | --- | --- |")
    for f in doc["files"]:
        ver = next((k["verification"] for k in f["kernels"].values() if "verification" in k), None)
        rows = ver["variants"] if ver else []
        for r in rows:
            variant_totals.setdefault(r["variant"], []).append(r.get("seconds", 0.0))
        slow = max(rows, key=lambda r: r.get("seconds", 0), default=None)
        name = Path(f["path"]).relative_to(ROOT) if f["path"].startswith(str(ROOT)) else f["path"]
        print(f"| {name} | {f['stats'].get('seconds', 0):.2f} | {ver['seconds'] if ver else 0:.2f} | {len(rows)} | "
              f"{slow['variant'] + ' ' + format(slow.get('seconds', 0), '.3f') if slow else '-'} |")
    print("\n| variant | files | median s | max s |")
    print("| --- | --- | --- | --- |")
    for name, times in variant_totals.items():
        times.sort()
        print(f"| {name} | {len(times)} | {times[len(times) // 2]:.3f} | {times[-1]:.3f} |")
    print(f"\ntotal wall time {doc['stats']['seconds']} s for {len(doc['files'])} files (jobs=1)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
