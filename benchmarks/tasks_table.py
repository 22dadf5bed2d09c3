"""The tasks/ table from `kernel-lsp check tasks/ --device cuda --format json -o FILE`:
`python benchmarks/tasks_table.py FILE [--before OLD.json]` prints markdown with the run's provenance and the
geomeans; docs/benchmarks.md holds its output. Each side has two times: back to back per call (host launch
included, the verdicts' time by default) and the GPU time from an idle GPU; speedups are given on both.
`--headroom N` prints instead what the GPU-time geomean over torch.compile would be if every task below 100% of
its roofline ran at it, and then with the N furthest from it kept as they are, one more at a time."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernel_lsp.checker.measure.perf_rules import side_launch_bound  # noqa: E402  (the rule KL404 uses)


def rows_of(doc: dict) -> dict[str, dict]:
    out = {}
    for f in doc["files"]:
        name = Path(f["path"]).name.removesuffix("_triton.py")
        m = next((k["measurement"] for k in f["kernels"].values() if k.get("measurement")), None)
        note = next((k.get("performance_note") for k in f["kernels"].values() if k.get("performance_note")), None)
        bad = sorted({d["code"] for d in f["findings"] if d["severity"] in ("error", "warning")})
        out[name] = {"category": Path(f["path"]).parent.name, "m": m, "note": note, "bad": bad}
    return out


def side(m: dict, name: str) -> dict | None:
    return next((s for s in m["sides"] if s["side"] == name), None)


def speedup(m: dict, against: str) -> dict | None:
    return next((s for s in m["speedups"] if s["against"] == against), None)


def fmt_us(x: float | None) -> str:
    return "-" if x is None else (f"{x:.1f}" if x < 1000 else f"{x:.0f}")


def both(sd: dict) -> str:
    """"116.0 / 63.8": back to back, then GPU time (the verdicts' median when the run has only one)."""
    if not sd:
        return "-"
    wall, gpu = sd.get("wall_us"), sd.get("gpu_us")
    if wall is None and gpu is None:
        return fmt_us(sd.get("median_us"))
    return f"{fmt_us(wall)} / {fmt_us(gpu)}"


def fmt_ratio(s: dict | None) -> str:
    return "-" if s is None else f"{s['ratio']:.2f}x ({s['low']:.2f}-{s['high']:.2f})"


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def headroom(rows: dict[str, dict], keep: int) -> list[str]:
    """The GPU-time geomean over torch.compile now, with every task below 100% of its roofline at it (a task at or
    past it as it is: the roofline is the reference's minimal work at the copy or matmul ceiling, which a kernel can
    pass, docs/benchmarks.md), and then with the `keep` tasks furthest below it kept as they are, one at a time."""
    times = {}  # task -> (Triton GPU us, torch.compile GPU us, the roofline's least time, its percent)
    for name, r in rows.items():
        m = r["m"]
        t, cp = (side(m, "triton"), side(m, "torch.compile")) if m else (None, None)
        roof = ((m or {}).get("roofline") or {})
        if t and cp and t.get("gpu_us") and cp.get("gpu_us") and roof.get("floor_us"):
            times[name] = (t["gpu_us"], cp["gpu_us"], roof["floor_us"], roof["percent"])

    def mean(kept: set[str]) -> float:
        return geomean([c / (t if n in kept else min(t, floor)) for n, (t, c, floor, _) in times.items()])
    furthest = sorted(times, key=lambda n: times[n][3])[:keep]
    out = [f"{len(times)} tasks, GPU time over torch.compile's: {mean(set(times)):.3f}x now, "
           f"{mean(set()):.3f}x with every task below its roofline at it"]
    for i, name in enumerate(furthest):
        out.append(f"  and {name} ({times[name][3]:.0f}% of its roofline) as it is: {mean(set(furthest[:i + 1])):.3f}x")
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("json")
    ap.add_argument("--before", help="an earlier run, for a 'before' column against torch.compile")
    ap.add_argument("--headroom", type=int, metavar="N",
                    help="the GPU-time geomean over torch.compile with every task at its roofline, then with the N "
                         "tasks furthest from it kept as they are")
    args = ap.parse_args()
    rows = rows_of(json.loads(Path(args.json).read_text()))
    if args.headroom is not None:
        for line in headroom(rows, args.headroom):
            print(line)
        return 0
    before = rows_of(json.loads(Path(args.before).read_text())) if args.before else {}
    prov = next((r["m"]["provenance"] for r in rows.values() if r["m"]), None)
    if prov:
        print(f"GPU {prov['gpu']} (SM clock {prov.get('sm_clock_mhz')} MHz at measurement), driver {prov['driver']}, "
              f"torch {prov['torch']}, triton {prov['triton']}, {prov['cache']} L2, {prov['timer']}, {prov['date']}\n")
    head = ("| category | task | Triton us (b2b / GPU) | eager us (b2b / GPU) | torch.compile us (b2b / GPU) | "
            "vs eager (95% CI) | vs torch.compile (95% CI) | vs compile, GPU time | % roofline | launch-bound |")
    head += " before vs compile |" if before else ""
    print(head)
    print("|" + " --- |" * (head.count("|") - 1))
    eager_r, compile_r, compile_gpu = [], [], []
    for name in sorted(rows, key=lambda n: (rows[n]["category"], n)):
        r = rows[name]
        m = r["m"]
        if m is None:
            print(f"| {r['category']} | {name} | {r['note'] or ', '.join(r['bad']) or '?'} |" +
                  " |" * (head.count("|") - 4))
            continue
        e, c = speedup(m, "eager"), speedup(m, "torch.compile")
        if e:
            eager_r.append(e["ratio"])
        if c:
            compile_r.append(c["ratio"])
        roof = m.get("roofline") or {}
        t, eg, cp = side(m, "triton"), side(m, "eager") or {}, side(m, "torch.compile") or {}
        gpu_ratio = (cp["gpu_us"] / t["gpu_us"]) if cp.get("gpu_us") and t.get("gpu_us") else None
        if gpu_ratio:
            compile_gpu.append(gpu_ratio)
        bound = ", ".join(label for label, sd in (("Triton", t), ("eager", eg), ("compile", cp))
                          if sd and side_launch_bound(SimpleNamespace(**{k: sd.get(k) for k in
                                                                         ("host_us", "gpu_us", "wall_us")})))
        line = (f"| {r['category']} | {name} | {both(t)} | {both(eg)} | {both(cp)} | {fmt_ratio(e)} | "
                f"{fmt_ratio(c)} | {f'{gpu_ratio:.2f}x' if gpu_ratio else '-'} | "
                f"{roof.get('percent', float('nan')):.0f}% | {bound or '-'} |")
        if before:
            b = before.get(name, {}).get("m")
            line += f" {fmt_ratio(speedup(b, 'torch.compile')) if b else '-'} |"
        print(line)
    print(f"\nGeomean over {len(eager_r)} measured tasks ({prov.get('verdict_time', 'gpu') if prov else '?'} time): "
          f"{geomean(eager_r):.2f}x eager, {geomean(compile_r):.2f}x torch.compile "
          f"({geomean(compile_gpu):.2f}x on GPU time); below torch.compile (whole CI < 1): "
          f"{sum(1 for r in rows.values() if r['m'] and (speedup(r['m'], 'torch.compile') or {}).get('high', 9) < 1)}"
          f"; below eager: {sum(1 for r in rows.values() if r['m'] and (speedup(r['m'], 'eager') or {}).get('high', 9) < 1)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
