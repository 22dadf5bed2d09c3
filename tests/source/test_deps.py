"""Workspace modules a check depends on: found transitively, part of the cache key, listed in the JSON."""

from __future__ import annotations

import shutil

from kernel_lsp.source.deps import dependencies
from tests.conftest import CORPUS, check_json, write


def test_dependencies_follow_workspace_imports_only(tmp_path):
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "ops.py", "from .util import helper\n")
    write(tmp_path / "pkg" / "util.py", "import math\nhelper = 1\n")
    write(tmp_path / "lib.py", "import torch\n")
    impl = write(tmp_path / "impl.py", "import torch, triton\nimport lib\nfrom pkg import ops\nfrom pkg.util import helper\n")
    deps = dependencies(impl.read_text(), impl, tmp_path)
    names = sorted(str(p.relative_to(tmp_path)) for p in deps)
    assert names == ["lib.py", "pkg/__init__.py", "pkg/ops.py", "pkg/util.py"]  # never torch or triton


def test_editing_an_imported_helper_is_a_cache_miss(tmp_path):
    src = (CORPUS / "ok_add_fp32.py").read_text()
    marker = "# kernel-lsp:"
    assert marker in src
    write(tmp_path / "helpers.py", "SCALE = 1.0\n")
    impl = tmp_path / "impl.py"
    impl.write_text("import helpers  # noqa: F401\n" + src, encoding="utf-8")
    shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "unused.py")
    _, first = check_json(impl, cwd=tmp_path)
    (entry,) = first["files"]
    assert str(tmp_path / "helpers.py") in entry["dependencies"] and not entry["cached"]
    _, second = check_json(impl, cwd=tmp_path)
    assert second["files"][0]["cached"]
    (tmp_path / "helpers.py").write_text("SCALE = 2.0\n")
    _, third = check_json(impl, cwd=tmp_path)
    assert not third["files"][0]["cached"], "a changed dependency returned a stale cached result"


def test_a_helper_beside_a_reference_in_another_folder_is_a_dependency(tmp_path):
    """The reference's folder is first on the path when it is imported: a helper there is what it imports, and an
    edit to it must not return the cached result of the helper as it was."""
    case = CORPUS / "kb_rmsnorm_ok"
    write(tmp_path / "refs" / "helper.py", "EPS = 1e-6\n")
    write(tmp_path / "refs" / "problem.py", "import helper  # noqa: F401\n" + (case / "problem.py").read_text())
    impl = write(tmp_path / "kern" / "impl.py",
                 (case / "impl.py").read_text().replace("reference=problem.py", "reference=../refs/problem.py"))
    assert dependencies(impl.read_text(), impl, tmp_path / "kern", [tmp_path / "refs" / "problem.py"]) == [
        (tmp_path / "refs" / "helper.py").resolve(), (tmp_path / "refs" / "problem.py").resolve()]
    _, first = check_json(impl, cwd=tmp_path / "kern")
    (entry,) = first["files"]
    assert str((tmp_path / "refs" / "helper.py").resolve()) in entry["dependencies"], entry["dependencies"]
    (tmp_path / "refs" / "helper.py").write_text("EPS = 1e-5\n")
    _, second = check_json(impl, cwd=tmp_path / "kern")
    assert not second["files"][0]["cached"], "an edit to the reference's helper returned a stale cached result"
