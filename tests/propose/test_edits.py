"""Replies to candidates, minimal edits, and the static screen: pure functions, no worker (kernel_lsp/propose)."""

from __future__ import annotations

import pytest

from kernel_lsp.propose.edits import (ReplyError, apply_hunks, candidate_from_reply, hunks, splice_definitions,
                                      unified_diff)
from kernel_lsp.propose.screen import screen

ORIGINAL = '''# kernel-lsp: reference=problem.py
"""A module docstring that must survive."""
import torch
import triton
import triton.language as tl


@triton.jit
def _k(x_ptr, n, BLOCK: tl.constexpr):
    # a comment inside the kernel
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)


def helper():
    return 1  # unrelated code


class ModelNew(torch.nn.Module):
    def forward(self, x):
        _k[(1,)](x, x.numel(), BLOCK=128)
        return x
'''

NEW_KERNEL = '''@triton.jit
def _k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)
'''


def test_edits_a_single_function_reply_replaces_only_that_definition():
    reply = f"Here is the fix:\n```python\n{NEW_KERNEL}```\nThe mask guards the tail."
    text = candidate_from_reply(ORIGINAL, reply)
    assert "mask = offs < n" in text and "def helper():\n    return 1  # unrelated code" in text
    assert text.startswith('# kernel-lsp: reference=problem.py\n"""A module docstring that must survive."""')
    changed = hunks(ORIGINAL, text)
    assert all(8 <= h.start <= 12 for h in changed)  # only the kernel's lines
    assert apply_hunks(ORIGINAL, changed) == text


def test_edits_a_whole_file_reply_replaces_the_file_with_a_minimal_diff():
    whole = ORIGINAL.replace("BLOCK=128", "BLOCK=256")
    text = candidate_from_reply(ORIGINAL, f"```python\n{whole}```")
    assert text == whole
    (h,) = hunks(ORIGINAL, text)
    assert h.start == 20 and h.end == 21
    assert "-        _k[(1,)](x, x.numel(), BLOCK=128)" in unified_diff(ORIGINAL, text, "k.py")


def test_edits_search_replace_blocks_apply_only_where_they_match_once():
    reply = "<<<<<<< SEARCH\n        _k[(1,)](x, x.numel(), BLOCK=128)\n=======\n        _k[(1,)](x, x.numel(), BLOCK=64)\n>>>>>>> REPLACE"
    assert "BLOCK=64)" in candidate_from_reply(ORIGINAL, reply)
    with pytest.raises(ReplyError, match="does not occur"):
        candidate_from_reply(ORIGINAL, reply.replace("BLOCK=128", "BLOCK=999"))


def test_edits_a_new_helper_goes_before_the_first_replaced_definition():
    code = "def _scale():\n    return 2\n\n\n" + NEW_KERNEL
    text = splice_definitions(ORIGINAL, code)
    assert text.index("def _scale") < text.index("def _k") and text.count("@triton.jit") == 1


@pytest.mark.parametrize("reply, says", [
    ("I cannot help with that.", "no Python code block"),
    ("```python\ndef _k(:\n```", "does not parse"),
    ("```python\ndef unknown():\n    pass\n```", "none of which is in the file"),
])
def test_edits_replies_that_are_not_usable_code_are_reply_errors(reply, says):
    with pytest.raises(ReplyError, match=says):
        candidate_from_reply(ORIGINAL, reply)


@pytest.mark.parametrize("addition, says", [
    ("import subprocess\n", "imports subprocess"),
    ("from os import system\n", "imports os.system"),
    ("import os\nos.system('rm -rf /')\n", "calls os.system()"),
    ("open('/tmp/x', 'w').write('1')\n", "calls open()"),
    ("eval('1')\n", "calls eval()"),
    ("import threading\n", "imports threading"),
    ("torch.cuda.synchronize = lambda: None\n", "assigns torch.cuda.synchronize (monkey-patching)"),
    ("import time\ntime.perf_counter = lambda: 0\n", "assigns time.perf_counter"),
    ("s = torch.cuda.Stream()\n", "uses torch.cuda.Stream()"),
    ("import socket\n", "imports socket"),
])
def test_screen_blocks_what_a_candidate_adds(addition, says):
    assert any(says in v for v in screen(ORIGINAL, ORIGINAL + addition))


def test_screen_does_not_hold_the_users_own_code_against_a_candidate():
    mine = ORIGINAL + "import os\nos.makedirs('/tmp/out', exist_ok=True)\n"
    assert screen(mine, mine.replace("BLOCK=128", "BLOCK=256")) == []
    assert screen(ORIGINAL, ORIGINAL.replace("BLOCK=128", "BLOCK=256")) == []
