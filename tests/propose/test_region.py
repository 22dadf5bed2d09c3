"""The contract's rules and the reduction to the implementation, as pure functions of texts (no worker):
propose/contract.py and propose/region.py, and the line handling they rely on in edits.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_lsp.propose.contract import freeze_file
from kernel_lsp.propose.edits import restyle, split_lines
from kernel_lsp.propose.region import reduce
from tests.propose.test_llm_actions import BROKEN

USER = BROKEN.lstrip("\n")
RIGHT = USER.replace("* factor, mask=mask)", "* 2.0, mask=mask)")


@pytest.fixture
def contract(tmp_path):
    path = tmp_path / "scale.py"
    path.write_text(USER)
    return freeze_file(path, USER, None, tmp_path, {})


@pytest.mark.parametrize("candidate, words", [
    (USER.replace("import torch\nimport triton\n", "import triton\nimport torch\n"), None),
    (USER + "\n\ndef len(x):\n    return 0\n", None),  # the reference does not read len
    (USER.replace("def ref(x):\n    return x * 2.0", "def ref(x):\n    return abs(x) * 2.0")
     + "\n\ndef abs(x):\n    return x\n", "changes ref"),
    (USER + "\nref.__code__ = (lambda x: x).__code__\n", "assigns ref.__code__"),
    (USER.replace("def scale(x):\n", "def scale(x):\n    global N\n    N = 16\n"), "declares `global N`"),
    (USER.replace("N = 1000", "N = 64"), "changes N, which the reference reads"),
    (USER + "\nN = 64\n", "rebinds N"),
    (USER.replace("    _scale_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)\n", ""),
     "launches no Triton kernel"),
    (USER.replace("_scale_kernel", "_other_kernel"), "deletes the Triton kernel _scale_kernel"),
    (USER.replace("def scale(x):", "def scale2(x):"), "deletes scale, the entry"),
    (USER.replace("# kernel-lsp: entry=scale reference=ref inputs=make_inputs\n", "")
     .replace("N = 1000\n", "N = 1000\n# kernel-lsp: entry=scale reference=ref inputs=make_inputs\n"), None),
])
def test_region_contract_rules(contract, candidate, words):
    refused = contract.refusals(candidate)
    if words is None:
        assert refused == []
    else:
        assert any(words in r for r in refused), refused


def test_region_contract_ignore_moved_onto_other_code_is_refused(tmp_path):
    user = USER.replace("    mask = offs < n\n", "    mask = offs < n  # kernel-lsp: ignore[KL207]\n")
    path = tmp_path / "scale.py"
    path.write_text(user)
    c = freeze_file(path, user, None, tmp_path, {})
    moved = user.replace("  # kernel-lsp: ignore[KL207]", "").replace(
        "    tl.store(out_ptr", "    tl.store(out_ptr").replace("* factor, mask=mask)\n",
                                                               "* factor, mask=mask)  # kernel-lsp: ignore[KL207]\n")
    assert any("moves the ignore pragma on line" in r for r in c.refusals(moved))


def test_region_reply_identical_to_the_file_is_the_file(contract):
    assert reduce(contract, USER).text == USER


def test_region_new_helper_goes_before_its_user_and_its_import_after_the_imports(contract):
    reply = RIGHT.replace("import triton.language as tl\n", "import triton.language as tl\nimport math\n").replace(
        "def scale(x):\n", "def _grid(n):\n    return (math.ceil(n / 256),)\n\n\ndef scale(x):\n").replace(
        "(triton.cdiv(x.numel(), 256),)", "_grid(x.numel())")
    reduced = reduce(contract, reply)
    assert reduced.text == reply and reduced.left_out == 0


def test_region_changes_outside_the_implementation_are_left_out(contract):
    user = contract.text
    reply = ('"""A docstring the model added."""\n' + RIGHT.replace("N = 1000\n", "N = 1000  # a comment\n")
             + "\n\nif __name__ == '__main__':\n    print(scale(torch.ones(3)))\n")
    reduced = reduce(contract, reply)
    assert reduced.text == user.replace("* factor, mask=mask)", "* 2.0, mask=mask)")
    assert reduced.left_out == 6  # the docstring, the comment, and the two blank and two lines of the __main__ block


def test_region_a_definition_the_reply_deletes_goes(tmp_path):
    user = USER.replace("def scale(x):\n",
                        "def _unused_helper():\n    return 1\n\n\ndef scale(x):\n    _unused_helper()\n")
    path = tmp_path / "scale.py"
    path.write_text(user)
    c = freeze_file(path, user, None, tmp_path, {})
    reply = user.replace("def _unused_helper():\n    return 1\n\n\n", "").replace("    _unused_helper()\n", "")
    assert reduce(c, reply).text == reply


def test_region_lines_end_only_at_line_breaks():
    assert split_lines("a\x0cb\nc\r\nd\re") == ["a\x0cb\n", "c\r\n", "d\r", "e"]


def test_region_restyle_keeps_crlf_and_unchanged_lines():
    original = "a\r\nb\r\nc\n"  # mixed: the unchanged lines keep theirs, new lines get the usual one
    assert restyle(original, "a\nB\nc\nd\n") == "a\r\nB\r\nc\nd\r\n"
    assert restyle("x\ny\n", "x\nz\n") == "x\nz\n"


def test_region_contract_a_file_holding_its_reference_may_not_mark_it_random(contract):
    refused = contract.refusals(USER.replace("N = 1000\n", "N = 1000\nKERNEL_LSP_RANDOM = True\n"))
    assert refused == ["adds KERNEL_LSP_RANDOM, part of the reference"]
