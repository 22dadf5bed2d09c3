"""A side of an `if` on a kernel's constexprs that no launch took is said as not verified (KL104, information)."""

import textwrap

from kernel_lsp.checker.verify.branches import untaken
from tests.checker.verify.test_corpus import CASES
from tests.conftest import CORPUS

KERNEL = textwrap.dedent('''
    @triton.jit
    def k(x_ptr, n, EVEN: tl.constexpr, MODE: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        if EVEN:
            a = 1
        else:
            a = 2
        if MODE == 1 and BLOCK > 64:
            b = 1
        elif MODE == 2:
            b = 2
            if EVEN:
                c = 3
        for i in range(n):
            if i > 3:
                d = 4
        if n > 4:
            e = 5
''')


def test_branches_each_untaken_side_once_with_the_values_seen():
    got = untaken(KERNEL, "k", [{"EVEN": False, "MODE": 1, "BLOCK": 128}, {"EVEN": False, "MODE": 1, "BLOCK": 256}])
    assert [(u.line, u.condition, u.side) for u in got] == [(6, "EVEN", "true"), (11, "MODE == 1 and BLOCK > 64", "false")]
    assert got[0].seen == "EVEN=False"
    # the elif's side was not taken either, but it sits inside a side already reported: said once
    assert all(u.line != 13 for u in got)


def test_branches_all_sides_taken_or_decided_per_program_say_nothing():
    launches = [{"EVEN": True, "MODE": 1, "BLOCK": 128}, {"EVEN": False, "MODE": 2, "BLOCK": 64}]
    assert [u.line for u in untaken(KERNEL, "k", launches)] == []  # `i > 3` and `n > 4` read runtime values
    assert untaken(KERNEL, "other", launches) == [] and untaken("def k(:", "k", launches) == []


def test_branches_a_never_selected_constexpr_path_is_information_on_its_line(corpus_local):
    case = CORPUS / "ok_even_path_never_selected.py"
    assert case in CASES
    paths, doc = corpus_local
    report = next(f for f in doc["files"] if f["path"] == str(case.resolve()))
    (finding,) = [f for f in report["findings"] if f["code"] == "KL104"]
    assert finding["severity"] == "info" and finding["range"]["line"] == 15  # 0-based: the body of `if EVEN:`
    assert "`if EVEN:` never ran (every launch had EVEN=False)" in finding["message"]


def test_branches_a_launch_site_no_variant_reached_is_information_on_its_line(corpus_local):
    """A launcher's `if` on sizes that picks another launch of the same kernel: the launch the inputs never reach
    is said on its own line; the one they reach is not."""
    case = CORPUS / "ok_launch_path_for_huge_inputs.py"
    assert case in CASES
    paths, doc = corpus_local
    report = next(f for f in doc["files"] if f["path"] == str(case.resolve()))
    (finding,) = [f for f in report["findings"] if f["code"] == "KL104"]
    assert finding["severity"] == "info" and finding["range"]["line"] == 23  # 0-based: the BLOCK=4096 launch
    assert finding["message"].startswith("this launch of _scale_kernel ran in no variant")
