"""A second check of unchanged code compiles nothing; a change invalidates exactly that file."""

import json
import shutil
import subprocess
from pathlib import Path

import kernel_lsp
from tests.conftest import CORPUS, run_cli


def _check(path, cache):
    proc = run_cli("check", str(path), "--format", "json", "--no-verify")
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def test_cache_second_run_compiles_nothing(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.kernel-lsp]\ntargets = [\"sm_80\", \"sm_90\"]\n")
    shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "a.py")
    shutil.copy(CORPUS / "ok_relu_fp16.py", tmp_path / "b.py")
    first = _check(tmp_path, None)
    assert first["stats"]["compiles"] == 4 and first["stats"]["workers_spawned"] == 2
    second = _check(tmp_path, None)
    assert second["stats"] == {**second["stats"], "compiles": 0, "workers_spawned": 0, "cache_hits": 2}
    assert [f["findings"] for f in second["files"]] == [f["findings"] for f in first["files"]]
    assert all(f["cached"] for f in second["files"])
    # Editing one file re-checks that file only.
    text = (tmp_path / "b.py").read_text().replace("BLOCK=1024", "BLOCK=512")
    (tmp_path / "b.py").write_text(text)
    third = _check(tmp_path, None)
    assert third["stats"]["compiles"] == 2 and third["stats"]["cache_hits"] == 1
    assert (tmp_path / ".kernel_lsp_cache").is_dir()


def test_cache_directory_ignores_itself_for_git(tmp_path):
    from kernel_lsp.cache import Cache
    from kernel_lsp.model import FileReport
    cache = Cache(tmp_path / ".kernel_lsp_cache")
    cache.put("ab" * 32, FileReport("/x.py"))
    assert (tmp_path / ".kernel_lsp_cache" / ".gitignore").read_text().splitlines()[-1] == "*"


def test_cache_a_changed_rule_invalidates_cached_verdicts(tmp_path):
    """Issue 27 item 9: a verdict cached by other rules is never served as current, even when the version number
    has not moved (a development checkout). The package is copied and one rule module edited, as an upgrade would."""
    package = tmp_path / "pkg"
    shutil.copytree(Path(kernel_lsp.__file__).parent, package / "kernel_lsp",
                    ignore=shutil.ignore_patterns("__pycache__"))
    work = tmp_path / "work"
    work.mkdir()
    (work / "pyproject.toml").write_text("[tool.kernel-lsp]\n")
    shutil.copy(CORPUS / "ok_add_fp32.py", work / "a.py")
    env = {"PYTHONPATH": str(package)}

    def check():
        proc = run_cli("check", "a.py", "--format", "json", "--no-verify", env=env, cwd=work)
        assert proc.returncode in (0, 1), proc.stderr
        return json.loads(proc.stdout)["stats"]

    assert check()["cache_hits"] == 0
    assert check()["cache_hits"] == 1  # unchanged rules: served from the cache
    rules = package / "kernel_lsp" / "checker" / "verify" / "rules.py"
    rules.write_text(rules.read_text().replace("KS_ALPHA = 1e-6", "KS_ALPHA = 1e-7"))
    assert check()["cache_hits"] == 0  # a changed rule: checked again


def test_cache_outside_a_project_goes_to_the_user_cache_and_inside_git_to_its_root(tmp_path):
    """Issue 27 item 8: `cd /tmp && kernel-lsp check ...` made /tmp/.kernel_lsp_cache. Without a pyproject.toml the
    cache goes to the git checkout's root; outside both, to the user's cache directory, never the current one."""
    here, xdg = tmp_path / "here", tmp_path / "xdg"
    here.mkdir()
    kernel = tmp_path / "loose" / "a.py"
    kernel.parent.mkdir()
    shutil.copy(CORPUS / "ok_add_fp32.py", kernel)
    env = {"XDG_CACHE_HOME": str(xdg)}
    first = run_cli("check", str(kernel), "--format", "json", "--no-verify", cwd=here, env=env)
    assert first.returncode == 0, first.stderr
    assert not (here / ".kernel_lsp_cache").exists() and not (kernel.parent / ".kernel_lsp_cache").exists()
    assert list((xdg / "kernel-lsp" / "results").rglob("*.json"))
    second = run_cli("check", str(kernel), "--format", "json", "--no-verify", cwd=here, env=env)
    assert json.loads(second.stdout)["stats"]["cache_hits"] == 1

    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    shutil.copy(CORPUS / "ok_add_fp32.py", repo / "sub" / "b.py")
    proc = run_cli("check", str(repo / "sub" / "b.py"), "--no-verify", cwd=here, env=env)
    assert proc.returncode == 0, proc.stderr
    assert (repo / ".kernel_lsp_cache" / ".gitignore").is_file() and not (here / ".kernel_lsp_cache").exists()
