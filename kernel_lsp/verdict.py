"""The one classification of a checked file and its kernels: every front end (the CLI's summary and its JSON stats,
the batch API's results, the language server's code actions) and the proposer read a report through these
functions, and the pipeline asks them what lets the evidence runs follow a verification and what blocks the timing.

A file's verdict (`file_verdict`) is one of:
- "verified": no error or warning, and every kernel was verified against the reference;
- "failed": an error or warning about the implementation (a wrong result, a crash, its own timeout, a cheat);
- "unverified": nothing wrong was found, but not every kernel was verified;
- "error": the file could not be judged, and `error_of` says whose fault that is, never the implementation's:
  "caller", "reference" or "infrastructure".

A kernel's (`kernel_verdicts`): "verified" (the verifier judged it on some variant, not only hit the interpreter's
limits, and nothing wrong was found), "failed" (a wrong result, or a timed output that was wrong or impossibly
fast), "compile_failed" (KL100, whatever the interpreter made of it), "unlinked" (no usable reference) or
"unverified". Helper kernels (called only from other kernels) have none.
"""

from __future__ import annotations

from .model import FileReport, Finding, Severity

# Codes that say the file could not be judged, and whose fault that is (never the implementation's).
ERROR_CODES = {"KL006": "caller", "KL003": "reference", "KL303": "infrastructure", "KL900": "infrastructure"}
# Codes that say the implementation games the check rather than computing the result: a PyTorch fallback, a cached
# or checker-aware result, work done outside the kernels, tampering, impossible or warmed-up-only speed.
CHEAT_CODES = {"KL205", "KL206", "KL220", "KL221", "KL223", "KL403", "KL405"}
# Codes that say the implementation did not get as far as running compiled kernels.
NOT_COMPILED = {"KL001", "KL005", "KL100", "KL101", "KL103"}
# Codes that leave a file without a usable reference.
NO_REFERENCE = ("KL002", "KL003", "KL004", "KL007")


def problems(findings: list[Finding]) -> list[Finding]:
    """The findings of warning severity or worse: any of them fails a file."""
    return [f for f in findings if f.severity <= Severity.WARNING]


def fixable(code: str) -> bool:
    """A compile or verification finding (KL1xx, KL2xx): what "fix" targets."""
    return code.startswith(("KL1", "KL2"))


def performance(code: str) -> bool:
    """A performance finding (KL4xx): what "optimize" and "tune" answer."""
    return code.startswith("KL4")


def blocks_timing(finding: Finding) -> bool:
    """Whether a finding stops the kernels from being timed: an error, or a warning of the verifier, except one
    about inputs outside the problem's own distribution (a scale made negative): the kernel is verified on every
    input the problem gives it, and those are the inputs timed."""
    return finding.severity == Severity.ERROR or (finding.severity == Severity.WARNING and finding.code.startswith("KL2")
                                                  and not finding.data.get("outside_distribution"))


def optimizable(report: FileReport) -> bool:
    """A kernel was verified and nothing but performance is wrong with the file: what optimize and tune start from."""
    return ("verified" in kernel_verdicts(report).values()
            and not [f for f in problems(report.findings) if not performance(f.code)])


def lets_evidence_run(findings: list[Finding]) -> bool:
    """The evidence runs follow a verification that passed: no error and no warning so far (any warning fails the
    file already, and one such as KL210 says the verifier could not run the kernel, so neither could they)."""
    return not problems(findings)


def unacceptable(report: FileReport) -> list[Finding]:
    """What makes a candidate edit unacceptable to the proposer: errors, and warnings of the checks that judge
    correctness (KL1xx, KL2xx); performance findings (KL4xx) aside."""
    return [f for f in report.findings if not f.code.startswith("KL4") and
            (f.severity == Severity.ERROR or (f.severity == Severity.WARNING and f.code.startswith(("KL1", "KL2"))))]


def waiting(finding: Finding) -> bool:
    """A timeout (KL301) that passed before the checked code started (the worker's start) or while the check
    waited for something that is not the checked code (a GPU another check was timing, the compile warmer)."""
    stage = finding.data.get("stage") if isinstance(finding.data, dict) else None
    return not stage or bool(stage.get("wait"))  # set by the worker's Sink.wait alone, never from a detail's text


def error_of(report: FileReport) -> str | None:
    """Whose fault it is that the report judges nothing ("caller", "reference", "infrastructure"), or None."""
    found = problems(report.findings)
    kinds = [ERROR_CODES[f.code] for f in found if f.code in ERROR_CODES]
    kinds += ["reference" for f in found if f.code == "KL002" and f.data.get("reference") == "caller"]
    kinds += ["infrastructure" for f in found if f.code == "KL301" and waiting(f)]
    for kind in ("infrastructure", "caller", "reference"):
        if kind in kinds:
            return kind
    return None


def file_verdict(report: FileReport) -> str:
    """The file's verdict (the module's docstring says what each means)."""
    if error_of(report) is not None:
        return "error"
    if problems(report.findings):
        return "failed"
    kernels = [k for k in report.kernels.values() if not k.helper]
    if kernels and all(k.verification is not None for k in kernels):
        return "verified"
    return "unverified"


def kernel_verdicts(report: FileReport) -> dict[str, str]:
    """Each kernel's verdict (helpers aside), by name (the module's docstring says what each means)."""
    no_reference = any(f.code in NO_REFERENCE for f in report.findings)
    wrong = any((f.code.startswith("KL2") or f.code in ("KL403", "KL405")) and f.severity <= Severity.ERROR
                for f in report.findings)
    not_compiled = {f.data.get("kernel") for f in report.findings if f.code == "KL100"}
    out: dict[str, str] = {}
    for name, k in report.kernels.items():
        if k.helper:
            continue
        if name in not_compiled or (k.qualname is not None and k.qualname in not_compiled):
            out[name] = "compile_failed"
        elif k.verification is not None and any(row.verdict != "cpu-limit" for row in k.verification.variants):
            out[name] = "failed" if wrong else "verified"
        elif no_reference:
            out[name] = "unlinked"
        else:
            out[name] = "unverified"
    return out


def coverage(reports: list[FileReport]) -> dict[str, int]:
    """What was and was not checked: files, and kernels by verdict (kernel_verdicts)."""
    counts = {"files": len(reports), "kernels": 0, "verified": 0, "failed": 0, "unlinked": 0, "compile_failed": 0,
              "unverified": 0}
    for r in reports:
        for verdict in kernel_verdicts(r).values():
            counts["kernels"] += 1
            counts[verdict] += 1
    return counts
