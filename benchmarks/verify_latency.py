"""How long a user waits for verification in the editor: `python benchmarks/verify_latency.py [--out FILE]`.

One warm `kernel-lsp serve` over stdio (raw JSON-RPC), one file at a time, every case of tests/corpus and every
task of tasks/, copied to a scratch workspace. Each file is opened with a unique trailing comment (a cache miss,
so the worker really verifies) and timed from didOpen to:
- the first published diagnostic of the verifier (`kernel-lsp.verify`, error or warning): what a user waits for
  to learn a kernel is wrong (the buggy corpus cases);
- the run's `idle` status: the full verdict (the correct kernels: tasks/ and the corpus's clean cases).
Prints markdown and writes JSON (medians, p90, per file).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.lsp.rawclient import RawClient  # noqa: E402  (the tests' bare JSON-RPC peer)


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def cases(root: Path) -> list[tuple[Path, str]]:
    """(file, kind): kind is "bug" or "clean" from the corpus label; tasks are "clean"."""
    out = []
    corpus = root / "corpus"
    for p in sorted(list(corpus.glob("*.py")) + list(corpus.glob("*/impl.py")) + list(corpus.glob("sibling_ref/*_impl.py"))):
        m = re.search(r"^# expect: (.+)$", p.read_text(), re.M)
        if m:
            out.append((p, "clean" if m.group(1).strip() == "clean" else "bug"))
    out += [(p, "clean") for p in sorted((root / "tasks").rglob("*_triton.py"))]
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    parser.add_argument("--limit", type=int, default=0, help="only the first N files (a quick look)")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda (the server's `device` setting)")
    parser.add_argument("--stride", type=int, default=1, help="every Nth file only (a sample across kinds)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kl-verify-latency-"))
    shutil.copytree(ROOT / "tests" / "corpus", root / "corpus")
    shutil.copytree(ROOT / "tasks", root / "tasks")
    # The verdict only: the measure stage (GPU timing, docs/performance.md) has its own benchmark.
    (root / "pyproject.toml").write_text('[tool.kernel-lsp]\ntargets = ["sm_90"]\nverify = "save"\ntimeout = 300\n'
                                         f'cache-dir = "{root / "cache"}"\ndevice = "{args.device}"\n'
                                         '[tool.kernel-lsp.measure]\nmode = "off"\n')
    client = RawClient(root)
    client.initialize(root)
    rows = []
    todo = cases(root)
    todo = todo[:: max(1, args.stride)]
    if args.limit:
        todo = todo[: args.limit]
    warm = todo[0][0]  # the first check starts the warm workers: not timed
    for i, (path, kind) in enumerate([(warm, "warm-up")] + todo):
        text = path.read_text() + f"\n# latency run {i} {time.time()}\n"
        start_index = len(client.messages)
        t0 = time.monotonic()
        uri = client.open(path, text=text, version=1000 + i)
        first = None
        while True:
            m = client.wait(lambda m: m.get("params", {}).get("uri") == uri and m.get("method") in (
                "textDocument/publishDiagnostics", "kernelLsp/status"), timeout=900, start=start_index)
            start_index = client.messages.index(m) + 1
            if m["method"] == "textDocument/publishDiagnostics" and first is None and any(
                    d.get("source") == "kernel-lsp.verify" and d.get("severity") in (1, 2)
                    for d in m["params"]["diagnostics"]):
                first = time.monotonic() - t0
            if m["method"] == "kernelLsp/status" and m["params"]["state"] == "idle" and m["params"].get("verified"):
                done = time.monotonic() - t0
                break
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        if kind == "warm-up":
            continue
        rows.append({"file": str(path.relative_to(root)), "kind": kind,
                     "first_finding_s": None if first is None else round(first, 2), "verdict_s": round(done, 2)})
        print(f"{rows[-1]['file']}: {kind} first {rows[-1]['first_finding_s']} verdict {rows[-1]['verdict_s']}",
              file=sys.stderr)
    client.proc.stdin.close()
    client.proc.wait(timeout=60)

    firsts = [r["first_finding_s"] for r in rows if r["kind"] == "bug" and r["first_finding_s"] is not None]
    verdicts = [r["verdict_s"] for r in rows if r["kind"] == "clean"]
    result = {"date": time.strftime("%Y-%m-%d"), "files": len(rows), "device": args.device,
              "bug_first_finding": {"n": len(firsts), "median_s": round(statistics.median(firsts), 2),
                                    "p90_s": round(pct(firsts, 0.9), 2), "max_s": max(firsts)} if firsts else None,
              "clean_verdict": {"n": len(verdicts), "median_s": round(statistics.median(verdicts), 2),
                                "p90_s": round(pct(verdicts, 0.9), 2), "max_s": max(verdicts)} if verdicts else None,
              "rows": rows}
    print("| measurement | files | median s | p90 s | max s |")
    print("| --- | --- | --- | --- | --- |")
    for name, key in (("buggy kernel: save -> first verification finding", "bug_first_finding"),
                      ("correct kernel: save -> full verdict", "clean_verdict")):
        r = result[key]
        if r:
            print(f"| {name} | {r['n']} | {r['median_s']} | {r['p90_s']} | {r['max_s']} |")
    slow = sorted(rows, key=lambda r: -r["verdict_s"])[:8]
    print("\nslowest verdicts: " + ", ".join(f"{r['file']} {r['verdict_s']} s" for r in slow))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
