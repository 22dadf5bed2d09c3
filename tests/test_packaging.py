"""`python -m build` makes a wheel and an sdist that install and run outside the clone (the VS Code extension
tells users to install from a clone or such a wheel: kernel-lsp is not on a package index)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile

import pytest

from tests.conftest import CORPUS, ROOT


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    pytest.importorskip("build")
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return out


def _venv(path, artifact, isolated: bool = False):
    """A venv that sees this interpreter's packages (torch, triton, pygls), with only kernel-lsp installed from
    `artifact`: what it runs is the artifact, not the clone."""
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(path)], check=True, timeout=300)
    py = path / "bin" / "python"
    # Without PYTHONPATH: a checkout on it (with the egg-info a build leaves there) reads to pip as kernel-lsp
    # already installed, and the artifact would be skipped.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([str(py), "-m", "pip", "uninstall", "-y", "-q", "kernel-lsp"], capture_output=True, timeout=300,
                   env=env)
    # A wheel installs as is; an sdist is built first, in pip's isolated build environment (setuptools from the
    # index, as a user's pip would).
    flags = [] if isolated else ["--no-build-isolation"]
    proc = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", *flags, str(artifact)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return py


def _runs(py, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the installed copy, never a checkout
    case = tmp_path / "case.py"
    case.write_text((CORPUS / "bug_relu_drops_nan.py").read_text())
    where = subprocess.run([str(py), "-c", "import kernel_lsp, sys; print(kernel_lsp.__file__)"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120, env=env).stdout
    assert str(ROOT) not in where, where  # the installed copy, not the clone
    proc = subprocess.run([str(py), "-m", "kernel_lsp.cli", "check", str(case), "--format", "json", "--no-cache"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 1 and '"KL201"' in proc.stdout, proc.stderr[-2000:]


def test_packaging_wheel_installs_and_runs(dist, tmp_path):
    (wheel,) = dist.glob("kernel_lsp-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "kernel_lsp/schemas/check-output.schema.json" in names and "kernel_lsp/schemas/settings.json" in names
    assert not any(n.startswith(("tests/", "tasks/")) for n in names)
    _runs(_venv(tmp_path / "venv", wheel), tmp_path)


def test_packaging_sdist_installs_and_runs(dist, tmp_path):
    (sdist,) = dist.glob("kernel_lsp-*.tar.gz")
    names = tarfile.open(sdist).getnames()
    assert any(n.endswith("kernel_lsp/schemas/check-output.schema.json") for n in names)
    assert any(n.endswith("README.md") for n in names)
    _runs(_venv(tmp_path / "venv", sdist, isolated=True), tmp_path)
