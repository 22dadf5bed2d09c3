"""Installing kernel-lsp as the README says (issue 27 items 1 to 3): the torch command for a laptop picks the CPU
build, `python -m build` makes a wheel and an sdist that install and run outside the clone (the VS Code extension
tells users to install from a clone or such a wheel: kernel-lsp is not on a package index), a wheel user gets the
bundled tasks, and the Python versions the README states are those pyproject.toml allows, and start."""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import subprocess
import sys
import tarfile
import tomllib
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pytest

from tests.conftest import CORPUS, ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    pytest.importorskip("build")
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    warned = [ln for ln in (proc.stdout + proc.stderr).splitlines()
              if "would be ignored" in ln or "project.license" in ln]
    assert not warned, warned  # issue 43 item 8: the build is clean (test_packaging_setup_names_every_folder)
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
    tasks = {p.relative_to(ROOT / "tasks").as_posix() for p in (ROOT / "tasks").rglob("*")
             if p.is_file() and "__pycache__" not in p.parts}
    assert {n.split("kernel_lsp/bundled_tasks/", 1)[1] for n in names if "/bundled_tasks/" in n} == tasks
    py = _venv(tmp_path / "venv", wheel)
    _runs(py, tmp_path)
    _main_job_from_the_wheel(py, tmp_path)


def _main_job_from_the_wheel(py, tmp_path):
    """Issue 27 item 2: a wheel user copies the bundled tasks out and checks one (all of them take minutes)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([str(py), "-m", "kernel_lsp.cli", "init-tasks", "my-tasks"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0 and "kernel-lsp check my-tasks" in proc.stdout, proc.stderr
    task = tmp_path / "my-tasks" / "Activation" / "leaky_relu_triton.py"
    proc = subprocess.run([str(py), "-m", "kernel_lsp.cli", "check", str(task), "--no-cache", "--no-measure",
                           "--require-reference"], cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0 and "1 verified" in proc.stdout, proc.stdout + proc.stderr[-2000:]
    again = subprocess.run([str(py), "-m", "kernel_lsp.cli", "init-tasks", "my-tasks"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120, env=env)
    assert again.returncode == 2 and "nothing was copied" in again.stderr  # never over a user's edits


def test_packaging_sdist_installs_and_runs(dist, tmp_path):
    (sdist,) = dist.glob("kernel_lsp-*.tar.gz")
    names = tarfile.open(sdist).getnames()
    assert any(n.endswith("kernel_lsp/schemas/check-output.schema.json") for n in names)
    assert any(n.endswith("README.md") for n in names) and any(n.endswith("/CHANGELOG.md") for n in names)
    assert {Path(n).name for n in names if "/docs/" in n} >= {"linking.md", "diagnostics.md", "verification.md"}
    assert any(n.endswith("/tasks/index.json") for n in names)
    _runs(_venv(tmp_path / "venv", sdist, isolated=True), tmp_path)


def test_packaging_the_readme_installs_build_before_building():
    """Issue 27 item 2: `python -m build` after the README's install failed with "No module named build"."""
    commands = [c.strip() for line in re.findall(r"`([^`]*-m build[^`]*)`", README) for c in line.split("&&")]
    assert commands, "the README gives no build command"
    build_at = next(i for i, c in enumerate(commands) if c.endswith("-m build"))
    assert any(re.search(r"-m pip install (.* )?build\b", c) for c in commands[:build_at]), commands


# Issue 27 item 1: what the documented torch commands resolve to, as a fresh machine's pip would resolve them
# (--isolated: this machine's pip configuration, which may point at a local copy of the CPU build, is ignored).

def _readme_command(cpu: bool) -> list[str]:
    """The README's `pip install torch==...` command for a laptop (with PyTorch's CPU index) or for a GPU machine
    (without it), as pip arguments."""
    for block in re.findall(r"```sh\n(.*?)```", README, re.S) + re.findall(r"`([^`\n]+)`", README):
        for part in block.split("&&"):
            if "pip install torch==" in part and (CPU_INDEX in part) == cpu:
                words = shlex.split(part.strip())
                return words[words.index("install") + 1:]
    raise AssertionError(f"the README has no `pip install torch==` command {'with' if cpu else 'without'} {CPU_INDEX}")


def _reachable(url: str) -> bool:
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=20).close()
        return True
    except urllib.error.HTTPError:
        return True  # it answered
    except (urllib.error.URLError, OSError):
        return False


def _resolve(args: list[str], tmp_path) -> dict[str, tuple[str, str]]:
    """name -> (version, url) of what `pip install --isolated --dry-run` picks for `args` on this interpreter."""
    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--isolated", "--dry-run", "--ignore-installed",
                           "--quiet", "--report", str(report), *args], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    picks = json.loads(report.read_text())["install"]
    return {p["metadata"]["name"].lower(): (p["metadata"]["version"], p["download_info"]["url"]) for p in picks}


def _megabytes(urls: list[str], enough: float = float("inf")) -> float:
    """The download size of `urls`, largest first, asked of their servers; summing stops once above `enough`."""
    total = 0
    for url in sorted(urls, key=lambda u: "torch-" not in u):
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=60) as r:
            total += int(r.headers["Content-Length"])
        if total / 1e6 > enough:
            break
    return total / 1e6


def test_packaging_the_documented_laptop_command_picks_the_cpu_build(tmp_path):
    args = _readme_command(cpu=True)
    if not _reachable(f"{CPU_INDEX}/torch/"):
        pytest.skip(f"{CPU_INDEX} cannot be reached from this machine, so what the README's laptop command picks "
                    "cannot be resolved here")
    picks = _resolve(args, tmp_path)
    cuda = sorted(n for n in picks if n.startswith(("nvidia-", "cuda-")))
    assert not cuda, cuda
    version, url = picks["torch"]
    if sys.platform == "linux":
        assert version.endswith("+cpu"), (version, url)
    size = _megabytes([u for _, u in picks.values()])
    assert size < 400, f"the laptop command downloads {size:.0f} MB"


def test_packaging_the_documented_gpu_command_picks_the_cuda_build(tmp_path):
    """The other half of item 1: the README's command for a GPU machine is PyPI's torch, the CUDA build (and what
    the laptop command avoids)."""
    args = _readme_command(cpu=False)
    if sys.platform != "linux":
        pytest.skip("PyPI's torch is a CUDA build on Linux only")
    if not _reachable("https://pypi.org/simple/torch/"):
        pytest.skip("PyPI cannot be reached from this machine")
    picks = _resolve(args, tmp_path)
    assert "torch" in picks and not picks["torch"][0].endswith("+cpu")
    assert {"cuda-toolkit", "nvidia-cudnn-cu13", "nvidia-nccl-cu13"} <= set(picks), sorted(picks)
    assert _megabytes([u for _, u in picks.values()], enough=1000) > 1000


# Issue 27 item 3: the Python versions the README states are the ones pyproject.toml allows, and both ends start.

def _stated_versions() -> tuple[tuple[int, int], tuple[int, int]]:
    m = re.search(r"with Python 3\.(\d+) to 3\.(\d+)", README)
    assert m, "the README states no Python versions"
    return (3, int(m.group(1))), (3, int(m.group(2)))


def test_packaging_the_readme_and_pyproject_state_the_same_python_versions():
    low, high = _stated_versions()
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert {s.strip() for s in spec.split(",")} == {f">={low[0]}.{low[1]}", f"<{high[0]}.{high[1] + 1}"}, spec
    classifiers = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["classifiers"]
    assert [f"Programming Language :: Python :: 3.{m}" for m in range(low[1], high[1] + 1)] == \
        [c for c in classifiers if c.startswith("Programming Language :: Python :: 3.")]


def _interpreter(version: tuple[int, int]) -> str | None:
    name = f"python{version[0]}.{version[1]}"
    if sys.version_info[:2] == version:
        return sys.executable
    found = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version[0]}.{version[1]}.*/bin/{name}")))
    return found[-1] if found else __import__("shutil").which(name)


@pytest.mark.parametrize("end", ["lowest", "highest"])
def test_packaging_kernel_lsp_starts_on_the_stated_python_versions(end, tmp_path):
    """Every module compiles under that Python, and the parent side (configuration, discovery, linking, the CLI)
    imports and runs there; the worker needs torch and triton, which that interpreter may not have."""
    version = _stated_versions()[0 if end == "lowest" else 1]
    python = _interpreter(version)
    if python is None:
        pytest.skip(f"no Python {version[0]}.{version[1]} on this machine (looked on PATH and in ~/.pyenv)")
    script = (
        "import pathlib, sys\n"
        "for f in sorted(pathlib.Path('kernel_lsp').rglob('*.py')):\n"
        "    compile(f.read_text(encoding='utf-8'), str(f), 'exec', dont_inherit=True)\n"
        "import kernel_lsp.cli, kernel_lsp.check, kernel_lsp.config, kernel_lsp.source.link\n"
        "sys.exit(kernel_lsp.cli.main(['--version']))\n")
    proc = subprocess.run([python, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0 and proc.stdout.startswith("kernel-lsp "), proc.stderr[-2000:]


# Issue 43 item 7: what a newcomer reads first, and what they can ask the install.

def test_packaging_the_readme_makes_the_venv_first_and_installs_torch_before_the_wheel():
    first = re.search(r"```sh\n(.*?)```", README, re.S).group(1)
    assert first.splitlines()[0].startswith("python3 -m venv .venv"), first  # before any pip install
    assert first.index("-m venv") < first.index("pip install torch==")
    wheel = README.index("pip install dist/kernel_lsp-")
    assert "install torch first" in README[:wheel], "the README installs the wheel without torch first"


def test_packaging_version_says_which_torch_build_and_triton_without_importing_them():
    from importlib.metadata import version
    script = ("import sys, kernel_lsp.cli as cli\n"
              "try:\n    cli.main(['--version'])\nexcept SystemExit:\n    pass\n"
              "print('imported:', sorted(m for m in ('torch', 'triton') if m in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("kernel-lsp "), proc.stdout + proc.stderr
    import torch
    build = f"CUDA {torch.version.cuda} build" if torch.version.cuda else "CPU build"
    assert any(line.startswith(f"torch {torch.__version__} ({build}") for line in lines), proc.stdout
    assert f"triton {version('triton')}" in lines, proc.stdout
    assert lines[-1] == "imported: []", proc.stdout  # read from their files: --version costs no import of seconds


# Issue 43 item 8: `python -m build` warned about `project.license` as a table (setuptools stops accepting it) and
# "Package would be ignored" 16 times (kernel_lsp/schemas and the task folders). Read from the configuration, fast.

def _setup_packages() -> list[str]:
    """The packages setup.py hands to setuptools, as it computes them (setup() replaced by a recorder)."""
    script = ("import json, runpy, setuptools\n"
              "setuptools.setup = lambda **kw: print(json.dumps(kw['packages']))\n"
              "runpy.run_path('setup.py')\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_packaging_setup_names_every_folder_that_ships_and_the_license_is_an_spdx_string():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert isinstance(config["project"]["license"], str), config["project"]["license"]  # "Apache-2.0", not a table
    assert any(re.fullmatch(r"setuptools>=(\d+)", r) and int(r.split(">=")[1]) >= 77
               for r in config["build-system"]["requires"]), config["build-system"]  # SPDX strings need 77
    packages = set(_setup_packages())

    def folders(top: Path, name: str) -> set[str]:
        return {".".join([name, *d.relative_to(top).parts]) for d in [top, *top.rglob("*")]
                if d.is_dir() and not any(p == "__pycache__" or p.startswith(".") for p in d.relative_to(top).parts)
                and any(f.is_file() for f in d.iterdir())}
    shipped = folders(ROOT / "kernel_lsp", "kernel_lsp") | folders(ROOT / "tasks", "kernel_lsp.bundled_tasks")
    assert not sorted(shipped - packages), "folders setuptools would warn about and ignore"
    assert not [p for p in packages if "__pycache__" in p]
