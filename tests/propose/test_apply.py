"""Edits a person can trust, through the real `kernel-lsp optimize --mode fix --apply` against a scripted endpoint:
only the implementation's changes are written, everything else stays byte for byte (comments, docstrings,
imports, line endings, the encoding, the file's mode, a symlink); a reply that bloats the file is refused; a file
that changes or vanishes while the proposal is made is a clear error, and the verified edit is still printed."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tests.propose.fake_llm import FakeLLM
from tests.propose.test_llm_actions import BROKEN, FIXED_KERNEL, optimize, workspace

FIXED = BROKEN.lstrip("\n").replace("* factor, mask=mask)", "* 2.0, mask=mask)")

# BROKEN with a module docstring, comments between definitions and a trailing comment.
COMMENTED = BROKEN.lstrip("\n").replace(
    "import torch\n", '"""Scale a vector by two."""\nimport torch\n', 1).replace(
    "\n\ndef ref(x):", "\n\n# The reference: plain PyTorch, never edited by a proposal.\ndef ref(x):").replace(
    "N = 1000\n", "N = 1000  # elements\n")


def fenced(text: str) -> str:
    return "```python\n" + text + "```"


def test_apply_keeps_crlf_line_endings(tmp_path):
    with FakeLLM([FIXED_KERNEL]) as fake:
        path = workspace(tmp_path, fake)
        path.write_bytes(BROKEN.lstrip("\n").replace("\n", "\r\n").encode())
        code, p, _ = optimize(path, "--apply", "--candidates", "1", "--rounds", "1")
    assert code == 0 and p["accepted"]
    assert path.read_bytes() == FIXED.replace("\n", "\r\n").encode()
    assert "\r" not in p["diff"]


def test_apply_keeps_the_file_mode(tmp_path):
    with FakeLLM([FIXED_KERNEL]) as fake:
        path = workspace(tmp_path, fake)
        path.chmod(0o750)
        code, p, _ = optimize(path, "--apply", "--candidates", "1", "--rounds", "1")
    assert code == 0 and p["accepted"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o750
    assert path.read_text() == FIXED


def test_apply_writes_through_a_symlink_and_keeps_the_link(tmp_path):
    with FakeLLM([FIXED_KERNEL]) as fake:
        real = workspace(tmp_path, fake).rename(tmp_path / "real_scale.py")
        link = tmp_path / "scale.py"
        link.symlink_to("real_scale.py")
        code, p, _ = optimize(link, "--apply", "--candidates", "1", "--rounds", "1")
    assert code == 0 and p["accepted"]
    assert link.is_symlink() and os.readlink(link) == "real_scale.py"
    assert real.read_text() == FIXED


def test_apply_keeps_a_declared_encoding(tmp_path):
    original = "# -*- coding: latin-1 -*-\n# Größe: N Elemente\n" + BROKEN.lstrip("\n")
    with FakeLLM([FIXED_KERNEL]) as fake:
        path = workspace(tmp_path, fake)
        path.write_bytes(original.encode("latin-1"))
        code, p, _ = optimize(path, "--apply", "--candidates", "1", "--rounds", "1")
    assert code == 0 and p["accepted"]
    assert path.read_bytes() == original.replace("* factor, mask=mask)", "* 2.0, mask=mask)").encode("latin-1")


def test_apply_whole_file_reply_is_reduced_to_its_changes_in_the_implementation(tmp_path):
    # The reply fixes the kernel, and also drops the docstring and the comments, and reorders the imports.
    reply = COMMENTED.replace('"""Scale a vector by two."""\n', "").replace(
        "# The reference: plain PyTorch, never edited by a proposal.\n", "").replace("  # elements", "").replace(
        "import triton\nimport triton.language as tl\n", "import triton.language as tl\nimport triton\n").replace(
        "* factor, mask=mask)", "* 2.0, mask=mask)")
    with FakeLLM([fenced(reply)]) as fake:
        path = workspace(tmp_path, fake)
        path.write_text(COMMENTED)
        code, p, _ = optimize(path, "--apply", "--candidates", "1", "--rounds", "1")
    assert code == 0 and p["accepted"]
    assert path.read_text() == COMMENTED.replace("* factor, mask=mask)", "* 2.0, mask=mask)")
    assert p["diff"].count("\n-") == 1
    assert any("outside the implementation" in n for n in p["notes"]), p["notes"]


def test_apply_reply_that_bloats_the_file_is_refused(tmp_path):
    reply = FIXED + "# padding\n" * 100_000  # 1 MB of comment lines
    with FakeLLM([fenced(reply)]) as fake:
        path = workspace(tmp_path, fake)
        code, p, _ = optimize(path, "--apply", "--candidates", "1", "--rounds", "1")
    assert code == 1 and not p["accepted"]
    (c,) = p["candidates"]
    assert c["verdict"] == "blocked" and "grows the file" in c["reason"], c
    assert path.read_text() == BROKEN.lstrip("\n")


def test_apply_file_removed_mid_run_is_a_clear_error_and_the_edit_is_printed(tmp_path):
    path = tmp_path / "scale.py"
    with FakeLLM([FIXED_KERNEL], on_request=lambda i: path.unlink()) as fake:
        workspace(tmp_path, fake)
        code, p, stderr = optimize(path, "--apply", "--candidates", "1", "--rounds", "1")
    assert code == 1 and p["accepted"] and "* 2.0, mask=mask)" in p["diff"]
    assert "Traceback" not in stderr and "was removed while" in stderr, stderr[-2000:]
    assert not path.exists()


def test_apply_file_changed_mid_run_is_not_overwritten_and_the_edit_is_printed(tmp_path):
    path = tmp_path / "scale.py"
    with FakeLLM([FIXED_KERNEL], on_request=lambda i: path.write_text(BROKEN.lstrip("\n") + "# mine\n")) as fake:
        workspace(tmp_path, fake)
        code, p, stderr = optimize(path, "--apply", "--candidates", "1", "--rounds", "1")
    assert code == 1 and p["accepted"] and "* 2.0, mask=mask)" in p["diff"]
    assert "changed while" in stderr, stderr[-2000:]
    assert path.read_text() == BROKEN.lstrip("\n") + "# mine\n"
