"""The one classification (kernel_lsp/verdict.py): a file's verdict and each kernel's, from made-up reports."""

from kernel_lsp.model import FileReport, Finding, KernelFacts, Severity, Span, VariantRow, Verification
from kernel_lsp.verdict import coverage, file_verdict, kernel_verdicts, lets_evidence_run, unacceptable


def _report(findings=(), verified=("k",), plain=()):
    row = VariantRow("seed-1", "the problem's own distribution", "(8,)", "ok")
    kernels = {name: KernelFacts(verification=Verification(variants=[row])) for name in verified}
    kernels.update({name: KernelFacts() for name in plain})
    return FileReport(path="k.py", findings=list(findings), kernels=kernels)


def _finding(code, severity=Severity.ERROR, **data):
    return Finding(code=code, message="m", severity=severity, span=Span(0, 0), path="k.py", source="t", data=data)


def test_verdict_a_file_and_its_kernels_agree():
    assert file_verdict(_report()) == "verified" and kernel_verdicts(_report()) == {"k": "verified"}
    wrong = _report([_finding("KL200")])
    assert file_verdict(wrong) == "failed" and kernel_verdicts(wrong) == {"k": "failed"}
    assert file_verdict(_report(verified=(), plain=("k",))) == "unverified"
    assert kernel_verdicts(_report([_finding("KL002")], verified=(), plain=("k",))) == {"k": "unlinked"}
    assert kernel_verdicts(_report([_finding("KL100", kernel="k")])) == {"k": "compile_failed"}
    assert file_verdict(_report([_finding("KL303")])) == "error"
    assert coverage([_report(), wrong]) == {"files": 2, "kernels": 2, "verified": 1, "failed": 1, "unlinked": 0,
                                            "compile_failed": 0, "unverified": 0}


def test_verdict_evidence_and_candidates_follow_the_same_severities():
    slower = _finding("KL401", Severity.WARNING)
    assert not lets_evidence_run([slower]) and lets_evidence_run([_finding("KL104", Severity.INFO)])
    assert unacceptable(_report([slower])) == []  # performance aside for a candidate
    assert [f.code for f in unacceptable(_report([_finding("KL209", Severity.WARNING)]))] == ["KL209"]


def test_verdict_what_blocks_timing_and_what_fix_and_optimize_start_from():
    """The reporter's timing gate and the language server's code actions ask verdict.py, not a code prefix of their
    own: a verifier warning blocks the timing unless it is about inputs outside the problem's own distribution; a
    verified file whose only problem is its speed can be optimized, one with a verification warning cannot."""
    from kernel_lsp.verdict import blocks_timing, fixable, optimizable, performance
    assert blocks_timing(_finding("KL300")) and blocks_timing(_finding("KL201", Severity.WARNING))
    assert not blocks_timing(_finding("KL201", Severity.WARNING, outside_distribution=True))
    assert not blocks_timing(_finding("KL104", Severity.INFO)) and not blocks_timing(_finding("KL400", Severity.WARNING))
    assert [c for c in ("KL100", "KL201", "KL300", "KL400") if fixable(c)] == ["KL100", "KL201"]
    assert [c for c in ("KL201", "KL400", "KL404") if performance(c)] == ["KL400", "KL404"]
    assert optimizable(_report([_finding("KL400", Severity.WARNING)]))
    assert not optimizable(_report([_finding("KL209", Severity.WARNING)]))
    assert not optimizable(_report([_finding("KL303")])) and not optimizable(_report(verified=(), plain=("k",)))
