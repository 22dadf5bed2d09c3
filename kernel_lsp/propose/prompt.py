"""What the model is shown: what a kernel engineer would want in front of them before touching the kernel.

The file as it is (kernel and wrapper, with line numbers), the PyTorch reference it must match, every diagnostic
with its numbers (failing variant, element, truth against value, PyTorch's own error), the compile errors at
their lines, the resources per target, the timings and the share of the roofline with the GPU and its measured
ceilings, techniques that made verified kernels faster where the file shows their pattern (optimize only:
hints.py), and what earlier candidates got wrong. The reply format asks for the whole file in one fenced block
(edits.py also takes SEARCH/REPLACE blocks or single functions).
"""

from __future__ import annotations

from ..model import Candidate, FileReport, Finding, KernelFacts, split_lines
from .hints import optimization_hints

MAX_FILE_CHARS = 40_000

SYSTEM = """You are an expert GPU kernel engineer who writes Triton kernels.
You change a Triton implementation so that it is {goal}.
Rules:
- It must compute what the PyTorch reference computes, for every input the reference accepts: odd sizes, strided
  and transposed inputs, NaN, infinities, large and tiny magnitudes. A checker verifies every candidate against a
  float64 truth on such inputs and rejects any that is wrong, cached, or does not launch the Triton kernel.
- Keep the file's public names (ModelNew or the entry function, their signatures), its imports and comments.
- Do not use subprocesses, threads, extra CUDA streams or events, file or network access, eval/exec, or
  assignments to attributes of torch, triton or time: candidates that do are rejected unread.
- Answer with the complete new file in one ```python fenced block, and nothing after it but, optionally, one
  short paragraph on what you changed and why."""

GOALS = {"fix": "correct (the diagnostics below say what is wrong)",
         "optimize": "faster, toward the hardware's roofline, while staying exactly as correct"}


def numbered(text: str) -> str:
    lines = split_lines(text)
    width = len(str(len(lines)))
    return "\n".join(f"{i + 1:>{width}}| {line}" for i, line in enumerate(lines))


def _clip(text: str, limit: int = MAX_FILE_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "\n... (cut)"


def finding_line(f: Finding) -> str:
    keep = {k: v for k, v in f.data.items() if k in ("variant", "variants", "max_abs", "max_rel", "ref_max_abs",
                                                     "worst_index", "bad_count", "bad_fraction", "target", "config",
                                                     "shared", "limit", "registers", "spill_bytes", "input")}
    extra = f" {keep}" if keep else ""
    return f"- {f.code} ({f.severity.label}) at line {f.span.line + 1}: {f.message}{extra}"


def facts_lines(name: str, k: KernelFacts) -> list[str]:
    out = []
    for c in k.compile:
        out.append(f"- {name} on {c.target} ({c.config}): {c.registers} registers, {c.spill_bytes} bytes spilled, "
                   f"{c.shared} bytes of shared memory" if c.ok else f"- {name} on {c.target}: does not compile")
    m = k.measurement
    if m is not None:
        for s in m.sides:
            out.append(f"- time of {s.side}: median {s.median_us:.1f} us (95% CI {s.low_us:.1f}-{s.high_us:.1f})"
                       + (f", {s.graph_us:.1f} us as a CUDA graph" if s.graph_us else ""))
        for sp in m.speedups:
            out.append(f"- speedup over {sp.against}: {sp.ratio:.2f}x (95% CI {sp.low:.2f}-{sp.high:.2f})")
        r = m.roofline
        if r is not None:
            out.append(f"- roofline: {r.bound}-bound, {r.percent:.0f}% of {r.ceiling} ({r.ceiling_value:.0f} "
                       f"{'GB/s' if r.ceiling == 'copy' else 'TFLOP/s'}); minimal traffic {r.bytes / 1e6:.1f} MB, "
                       f"achieved {r.gbps:.0f} GB/s" + (f", {r.tflops:.1f} TFLOP/s" if r.tflops else ""))
        if m.device is not None:
            ceilings = ", ".join(f"{c.name} {c.value:.0f}" for c in m.device.ceilings)
            out.append(f"- GPU: {m.device.gpu}, L2 {m.device.l2_bytes >> 20} MiB; measured ceilings: {ceilings} "
                       "(GB/s for copy, TFLOP/s for matmuls)")
    elif k.performance_note:
        out.append(f"- {name}: {k.performance_note}")
    if k.verification is not None:
        bad = [r for r in k.verification.variants if r.verdict != "ok"]
        out.append(f"- verification on {k.verification.device}: {len(k.verification.variants) - len(bad)} of "
                   f"{len(k.verification.variants)} input variants pass"
                   + (": failing " + ", ".join(f"{r.variant} ({r.inputs}: {r.verdict})" for r in bad[:6]) if bad else ""))
    return out


def messages(mode: str, path: str, text: str, reference: str | None, report: FileReport | None,
             failures: list[Candidate], kernel: str | None = None) -> list[dict]:
    goal = GOALS["fix" if mode == "fix" else "optimize"]
    parts = [f"## Task\nMake `{path}` {goal}" + (f", working on the kernel `{kernel}`." if kernel else ".")]
    parts.append(f"## The file: {path}\n```python\n{_clip(numbered(text))}\n```\n(Line numbers are for reference; "
                 "do not include them in your answer.)")
    if reference is not None:
        parts.append(f"## The PyTorch reference it must match\n```python\n{_clip(reference, 20_000)}\n```")
    if report is not None:
        findings = [f for f in report.findings if f.severity <= 3]
        if findings:
            parts.append("## Diagnostics of the current file\n" + "\n".join(finding_line(f) for f in findings[:30]))
        facts = [line for name, k in report.kernels.items() for line in facts_lines(name, k)]
        if facts:
            parts.append("## Compile, verification and performance facts\n" + "\n".join(facts[:60]))
    if mode != "fix":
        hints = optimization_hints(text)
        if hints:
            parts.append("## Techniques that made verified Triton kernels faster (offered because this file shows "
                         "the pattern each one improves; the checker still verifies every candidate)\n"
                         + "\n".join(f"- {h.name}: {h.text}" for h in hints))
    if failures:
        lines = []
        for c in failures[-6:]:
            lines.append(f"- {c.origin}: {c.verdict}: {c.reason}")
            lines += [f"  - {f}" for f in c.findings[:4]]
        parts.append("## Earlier candidates that were rejected (do not repeat their mistakes)\n" + "\n".join(lines))
    return [{"role": "system", "content": SYSTEM.format(goal=goal)},
            {"role": "user", "content": "\n\n".join(parts)}]
