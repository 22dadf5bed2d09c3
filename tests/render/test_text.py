"""Text output a person reads (issue 27 item 4): a short lead line per problem (what, where, how big), the details
below it, one problem per code and line with `also on:`, while the JSON keeps every finding."""


from kernel_lsp.model import FileReport, Finding, Severity, Span
from kernel_lsp.render.text import LEAD_WIDTH, render_text
from tests.conftest import CORPUS, corpus_file, run_cli


def test_text_one_lead_line_per_problem_with_also_on_and_the_json_keeps_every_finding(corpus_local):
    case = "bug_half_sum_and_strides.py"  # three KL200 findings at one store: values, layout, size
    text = run_cli("check", case, "--no-cache", cwd=CORPUS).stdout
    lines = text.splitlines()
    leads = [line for line in lines if line.startswith(f"{case}:19:")]
    assert len(leads) == 1, text
    assert leads[0].startswith(f"{case}:19:5: KL200 [error] 1018 of 1024 elements (99.4%) out of budget"), leads[0]
    assert all(len(line) <= LEAD_WIDTH for line in lines), max(lines, key=len)
    details = "\n".join(lines[1:])
    assert "output[0, 17] = -3.20703, truth -3.2052" in details and "variant seed-1" in details
    at = next(i for i, line in enumerate(lines) if line.startswith("    also on:"))
    also = " ".join(line.strip() for line in lines[at:at + 3] if line.startswith("    "))
    assert all(v in also for v in ("seed-2", "transposed", "strided", "odd-size", "larger-size")), also
    assert "(3 findings at this line in --format json)" in also
    assert "Checked 1 file, 1 kernel (0 verified, 1 failed verification; 0 from cache): 1 error, 0 warnings" in text
    # The session's `check --format json` of the corpus (conftest.corpus_local) keeps every row.
    assert [f["code"] for f in corpus_file(corpus_local, case)["findings"]] == ["KL200"] * 3
    path = str((CORPUS / case).resolve())
    assert [d["code"] for d in corpus_local[1]["diagnostics"] if d["path"] == path] == ["KL200"] * 3


def test_text_a_long_message_leads_with_a_short_line_and_loses_nothing(tmp_path):
    message = ("_conv1d_kernel autotune configs 1, 2, 3 and 4 of 5 (BO=128, BL=64, BC=32, num_warps=4, num_stages=1; "
               "BO=128, BL=128, BC=32, num_warps=8, num_stages=2) only: output[4, 66, 63] = -2.59547, truth -2.59775 "
               "(abs error 0.00227, rel 0.000875); PyTorch's own float32 error is at most 2.55e-06; 1954602 of "
               "1996059 elements (97.9%) out of budget; variant config-1-odd: autotune config 1 of 5 of "
               "_conv1d_kernel, odd sizes, inputs (31, 63, 511) (also on: config-2-odd, config-3-odd)")
    path = str(tmp_path / "conv1d_triton.py")
    f = Finding(path, Span(40, 8), Severity.ERROR, "KL200", message, data={"variants": ["config-1-odd"]})
    lines = render_text([FileReport(path, [f])], str(tmp_path)).splitlines()
    assert lines[0].startswith("conv1d_triton.py:41:9: KL200 [error] 1954602 of 1996059 elements (97.9%) out of "
                               "budget") and len(lines[0]) <= LEAD_WIDTH, lines[0]
    body = " ".join(lines)
    for part in ("autotune configs 1, 2, 3 and 4 of 5", "PyTorch's own float32 error is at most 2.55e-06",
                 "inputs (31, 63, 511)", "also on: config-2-odd, config-3-odd"):
        assert part in body, (part, lines)


def test_text_never_splits_inside_code_the_link_hint_and_the_encoding_message_keep_their_colons(tmp_path):
    """KL004's hint was printed as `# kernel-lsp` on the lead line and `reference=problem.py` on the next: the
    colon the user must type was lost at the cut. So was the non-UTF-8 message's `# -*- coding: ... -*-`."""
    kernel = (CORPUS / "ok_add_fp32.py").read_text().replace("# kernel-lsp: entry=", "# was: entry=")  # unlinked
    (tmp_path / "k.py").write_text(kernel)
    (tmp_path / "latin.py").write_bytes(b"import triton\nx = '\xe9'\n")
    proc = run_cli("check", "k.py", "latin.py", "--no-cache", cwd=tmp_path)
    lines = proc.stdout.splitlines()
    assert any("`# kernel-lsp: reference=problem.py`" in line for line in lines), proc.stdout
    assert any("`# kernel-lsp: entry=fn reference=ref_fn inputs=make_inputs`" in line for line in lines), proc.stdout
    assert any("`# -*- coding: ... -*-`" in line for line in lines), proc.stdout
    assert not any(line.rstrip().endswith("`# kernel-lsp") for line in lines), proc.stdout


def test_text_a_cut_lands_outside_backticks():
    code = "`# kernel-lsp: reference=problems/a_rather_long_name_for_a_problem_file.py`"
    message = f"no PyTorch reference is linked to this kernel file at all: add {code} (KernelBench) or more"
    f = Finding("k.py", Span(0), Severity.HINT, "KL004", message)
    text = render_text([FileReport("k.py", [f])])
    assert code in text and text.count("`") == 2, text


def test_text_the_summary_counts_information_apart_from_advice():
    """Issue 43 item 11: `[info]` lines (what was measured, or could not be judged) were counted as "advice"; the
    summary counts each severity by the label its lead lines show."""
    findings = [Finding("k.py", Span(3), Severity.INFO, "KL210", "the CPU interpreter cannot judge this part"),
                Finding("k.py", Span(9), Severity.INFO, "KL222", "the isolated re-run could not be made"),
                Finding("k.py", Span(0), Severity.HINT, "KL004", "no PyTorch reference is linked")]
    lines = render_text([FileReport("k.py", findings)]).splitlines()
    assert lines[-1].endswith(": 0 errors, 0 warnings, 2 info, 1 hint"), lines[-1]
    assert "advice" not in lines[-1]


def test_text_a_variant_list_names_each_variant_once():
    """Issue 43 item 11: "special" twice in a variant list. The rows of several kernels (or autotune configs) share
    variant names; the lists a person reads name each once."""
    from kernel_lsp.model import Proposal, VariantRow
    from kernel_lsp.render.text import render_proposal
    rows = [VariantRow(v, "", "(8,)", "ok") for v in ("seed-1", "special", "special", "strided")]
    text = render_proposal(Proposal("fix", "k.py", True, "fixes KL200", variants=rows))
    assert "4 of 4 input variants pass (seed-1, special, strided)" in text, text
    same_line = [Finding("k.py", Span(7), Severity.ERROR, "KL200", f"wrong on {v} (also on: special)",
                         data={"variant": v, "variants": [v, "special", "special"]}) for v in ("seed-1", "odd-size")]
    also = [line for line in render_text([FileReport("k.py", same_line)]).splitlines() if "also on:" in line]
    assert len(also) == 1 and also[0].count("special") == 1, also

