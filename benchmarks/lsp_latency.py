"""Latency of `kernel-lsp serve` as an editor feels it, over stdio with raw JSON-RPC.

`python benchmarks/lsp_latency.py [--rounds 5] [--requests 200] [--out benchmarks/results/lsp-latency.json]`

1. Save to compile diagnostics (verify = "off"), warm worker: an edit that changes the file's text (a cache
   miss: the worker compiles) and one that restores text checked before (a cache hit).
2. Save to verification diagnostics (verify = "save") for a tasks/ kernel on the CPU.
3. Hover and codeAction round trips while a verification runs: `--requests` of each, one after another,
   reported as median, p95, p99 and max.
Times are measured from the moment didSave is written to the server's stdin to the moment the matching
publishDiagnostics (or response) has been read. Prints markdown and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.lsp.rawclient import RawClient  # noqa: E402  (the tests' bare JSON-RPC peer)

TASK = ROOT / "tasks" / "Normalization" / "layer_norm_triton.py"


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def summary(values: list[float]) -> dict:
    ms = [v * 1000 for v in values]
    return {"n": len(ms), "median_ms": round(statistics.median(ms), 1), "p95_ms": round(pct(ms, 0.95), 1),
            "p99_ms": round(pct(ms, 0.99), 1), "max_ms": round(max(ms), 1)}


class Session:
    def __init__(self, root: Path, verify: str):
        (root / "pyproject.toml").write_text(f'[tool.kernel-lsp]\ntargets = ["sm_90"]\nverify = "{verify}"\n'
                                             f'timeout = 300\n')
        self.client = RawClient(root)
        self.client.initialize(root)
        self.version = 1
        self.seen = 0

    def _after(self, match, timeout: float = 600.0) -> dict:
        """The first message after the last one consumed that matches; consumes up to it."""
        m = self.client.wait(match, timeout, start=self.seen)
        with self.client._lock:
            self.seen = next(i for i in range(self.seen, len(self.client.messages)) if self.client.messages[i] is m) + 1
        return m

    def open(self, path: Path, text: str) -> str:
        uri = self.client.open(path, text=text, version=self.version)
        self._idle(uri)
        return uri

    def _idle(self, uri: str) -> dict:
        return self._after(lambda m: m.get("method") == "kernelLsp/status" and m["params"].get("uri") == uri
                           and m["params"].get("state") == "idle" and m["params"].get("version") == self.version
                           and not m["params"].get("cancelled"))

    def save(self, path: Path, uri: str, text: str) -> float:
        """Change and save `text`; seconds until the diagnostics for that version are published."""
        self.version += 1
        path.write_text(text)
        self.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": self.version},
                                                      "contentChanges": [{"text": text}]})
        start = time.monotonic()
        self.client.notify("textDocument/didSave", {"textDocument": {"uri": uri}, "text": text})
        # The run's diagnostics are published just before its "idle" status: time to that status.
        self._idle(uri)
        elapsed = time.monotonic() - start
        with self.client._lock:
            assert any(m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
                       and m["params"].get("version") == self.version for m in self.client.messages[:self.seen])
        return elapsed

    def close(self) -> None:
        self.client.proc.stdin.close()
        self.client.proc.wait(timeout=30)


def compile_latency(root: Path, rounds: int) -> dict:
    s = Session(root, "off")
    path = root / TASK.name
    base = TASK.read_text()
    uri = s.open(path, base)
    miss, hit = [], []
    for i in range(rounds):
        miss.append(s.save(path, uri, base + f"\n# edit {i} {time.time()}\n"))
        hit.append(s.save(path, uri, base))  # checked before: from the cache
    s.close()
    return {"cache_miss": summary(miss), "cache_hit": summary(hit)}


def verify_latency(root: Path, rounds: int) -> dict:
    s = Session(root, "save")
    path = root / TASK.name
    base = TASK.read_text()
    uri = s.open(path, base)
    times = [s.save(path, uri, base + f"\n# edit {i} {time.time()}\n") for i in range(rounds)]
    s.close()
    return summary(times)


def request_latency(root: Path, requests: int) -> dict:
    s = Session(root, "save")
    path = root / TASK.name
    base = TASK.read_text()
    uri = s.open(path, base)
    line = next(i for i, t in enumerate(base.splitlines()) if t.startswith("def ") and "kernel" in t)
    # Start a verification (a cache miss) and query while it runs.
    s.version += 1
    text = base + f"\n# busy {time.time()}\n"
    path.write_text(text)
    s.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": s.version},
                                               "contentChanges": [{"text": text}]})
    s.client.notify("textDocument/didSave", {"textDocument": {"uri": uri}, "text": text})
    s._after(lambda m: m.get("method") == "kernelLsp/status" and m["params"].get("state") == "verify")
    hover, action, during = [], [], 0
    for _ in range(requests):
        for kind, bucket in (("textDocument/hover", hover), ("textDocument/codeAction", action)):
            params = {"textDocument": {"uri": uri}, "position": {"line": line, "character": 5}}
            if kind == "textDocument/codeAction":
                params = {"textDocument": {"uri": uri}, "range": {"start": {"line": line, "character": 0},
                                                                   "end": {"line": line, "character": 5}},
                          "context": {"diagnostics": []}}
            start = time.monotonic()
            rid = s.client.request(kind, params)
            s.client.response(rid, timeout=30)
            bucket.append(time.monotonic() - start)
        with s.client._lock:
            busy = not any(m.get("method") == "kernelLsp/status" and m["params"].get("state") == "idle"
                           and m["params"].get("version") == s.version for m in s.client.messages)
        during += busy
    s.close()
    return {"hover": summary(hover), "codeAction": summary(action), "pairs_sent_while_verifying": during,
            "pairs": requests}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "lsp-latency.json"))
    args = ap.parse_args()
    results = {"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(), "task": str(TASK.relative_to(ROOT)),
               "warm_workers": os.environ.get("KERNEL_LSP_WARM", "1") != "0"}
    for name, fn, arg in (("save_to_compile", compile_latency, args.rounds),
                          ("save_to_verify", verify_latency, args.rounds),
                          ("requests_during_verification", request_latency, args.requests)):
        with tempfile.TemporaryDirectory() as tmp:
            for f in (TASK, TASK.with_name("layer_norm.py")):  # the kernel and its reference
                shutil.copy(f, Path(tmp) / f.name)
            results[name] = fn(Path(tmp), arg)
            print(name, json.dumps(results[name]), flush=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    c, v, r = results["save_to_compile"], results["save_to_verify"], results["requests_during_verification"]
    print("\n| measurement | n | median | p95 | p99 | max |\n| --- | --- | --- | --- | --- | --- |")
    for label, d in (("save -> compile diagnostics, cache miss", c["cache_miss"]),
                     ("save -> compile diagnostics, cache hit", c["cache_hit"]),
                     ("save -> verification diagnostics", v),
                     ("hover during verification", r["hover"]),
                     ("codeAction during verification", r["codeAction"])):
        print(f"| {label} | {d['n']} | {d['median_ms']} ms | {d['p95_ms']} ms | {d['p99_ms']} ms | {d['max_ms']} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
