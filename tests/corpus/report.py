"""Print the corpus table per bug class: caught, missed, false alarms. `python tests/corpus/report.py`.

Also prints, for the clean cases, how close each came to its error budget (max error / PyTorch's own error).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent


def on_gpu() -> bool:
    try:
        import torch
        return bool(torch.cuda.is_available())
    except ImportError:
        return False


def cases(gpu: bool | None = None) -> list[Path]:
    """Every case; those marked `# device: cuda` (tests/corpus/catalog: cheats that only show on a GPU) only where
    a GPU is."""
    gpu = on_gpu() if gpu is None else gpu
    found = ([p for p in HERE.glob("*.py") if p.name != "report.py"] + list(HERE.glob("*/impl.py"))
             + list(HERE.glob("sibling_ref/*_impl.py")) + list(HERE.glob("catalog/*.py")))
    return sorted(p for p in found if gpu or not re.search(r"^# device: cuda$", p.read_text(), re.M))


def alternatives(text: str) -> list[set[str]]:
    """The code sets a case's `# expect:` line allows: one set, or several separated by `|` (a race in the cheat
    itself decides which); an empty set for `clean`."""
    exp = re.search(r"^# expect: (.+)$", text, re.M).group(1).strip()
    if exp == "clean":
        return [set()]
    return [{c.split(":")[0] for c in alt.split() if c != "clean"} for alt in exp.split("|")]


def may_add(text: str) -> set[str]:
    """Codes a case's `# may-add:` line allows beside any alternative (a cheat whose codes the allocator's addresses
    decide: a stale result is KL206 on one run, a wrong value from a call that launched nothing, KL200 KL205, on
    another)."""
    m = re.search(r"^# may-add: (.+)$", text, re.M)
    return set(m.group(1).split()) if m else set()


def matches(text: str, got: set[str]) -> bool:
    """`got` is what the case expects: one of its alternatives, plus codes its `# may-add:` line allows."""
    extra = may_add(text)
    return any(alt <= got and got - alt <= extra for alt in alternatives(text))


# Codes that name one class of cheat, any of which catches it: which one fires is decided by a race in the cheat
# itself (a kernel on a stream the timer never waits for is below the copy rate, KL403, or seen outside the
# stream, KL406; an implementation that behaves only while watched is wrong when timed, KL405, or in the evidence
# runs, KL220). tests/test_gpu.py accepts a catalog cheat caught by any code of its class.
CLASSES = ({"KL403", "KL406"}, {"KL220", "KL405"})


def caught_by_class(text: str, got: set[str]) -> bool:
    """`got` catches the case the way `matches` asks, or with another code of each expected code's class: every
    expected code has a code of its class in `got`, and `got` holds nothing outside the expected codes, the
    `# may-add:` ones and those classes. A clean case is never caught by class."""
    extra = may_add(text)
    for alt in alternatives(text):
        if not alt:
            continue
        kin = set().union(*(c for c in CLASSES if c & alt)) if any(c & alt for c in CLASSES) else set()
        if all(code in got or any(code in c and c & got for c in CLASSES) for code in alt) \
                and got - alt - extra <= kin:
            return True
    return matches(text, got)


def label(path: Path) -> tuple[set[str], str]:
    """(the codes the case expects at least: every alternative's common part, which report() counts as a catch
    when found; the bug class)."""
    text = path.read_text()
    cls = re.search(r"^# class: (.+)$", text, re.M).group(1).strip()
    alts = alternatives(text)
    return (set() if alts == [set()] else set.intersection(*alts) or {"any"}), cls


def main() -> int:
    files = cases()
    proc = subprocess.run([sys.executable, "-m", "kernel_lsp.cli", "check", *map(str, files), "--format", "json",
                           "--no-cache", "--jobs", "2"], capture_output=True, text=True, cwd=HERE)
    doc = json.loads(proc.stdout)
    by_path = {f["path"]: f for f in doc["files"]}
    table = defaultdict(lambda: [0, 0, 0, 0])  # cases, caught, missed, false alarms
    margins = []
    wrong: list[str] = []
    for p in files:
        expected, cls = label(p)
        report = by_path[str(p.resolve())]
        got = {f["code"] for f in report["findings"] if f["severity"] in ("error", "warning")}
        row = table["correct kernels" if not expected else cls]
        row[0] += 1
        if expected:
            if expected == {"any"}:  # alternatives with nothing in common: any non-empty one found is a catch
                caught = any(alt and alt <= got for alt in alternatives(p.read_text()))
            else:
                caught = expected <= got
            row[1 if caught else 2] += 1
            if not caught:
                wrong.append(f"missed: {p.relative_to(HERE)} expects {' '.join(sorted(expected))}, got "
                             f"{' '.join(sorted(got)) or 'nothing'}")
        elif got:
            row[3] += 1
            wrong.append(f"false alarm: {p.relative_to(HERE)}: {' '.join(sorted(got))}")
        for k in report["kernels"].values():
            for v in k.get("verification", {}).get("variants", []):
                if not expected and v.get("max_abs") and v.get("ref_max_abs"):
                    margins.append(v["max_abs"] / v["ref_max_abs"])
    print("| bug class | cases | caught | missed | false alarms |")
    print("| --- | --- | --- | --- | --- |")
    for cls in sorted(table, key=lambda c: (c == "correct kernels", c)):
        n, caught, missed, fa = table[cls]
        print(f"| {cls} | {n} | {caught if cls != 'correct kernels' else '-'} | "
              f"{missed if cls != 'correct kernels' else '-'} | {fa} |")
    for line in wrong:
        print(line)
    if margins:
        margins.sort()
        print(f"\nclean cases: {len(margins)} variant results; max error / PyTorch's own error: median "
              f"{margins[len(margins) // 2]:.2f}, max {margins[-1]:.2f} (the budget allows 3 plus ulp floors)")
    print(f"wall time: {doc['stats']['seconds']} s for {len(files)} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
