"""job_imports: a long-lived worker forgets the user's modules a job imported, and keeps the installation's."""

import sys

from kernel_lsp.run.job_imports import JobImports


def test_a_jobs_own_modules_and_path_are_forgotten_and_installed_ones_kept(tmp_path):
    (tmp_path / "kl_helper_module.py").write_text("VALUE = 1\n")
    (tmp_path / "kl_helper_pkg").mkdir()
    (tmp_path / "kl_helper_pkg" / "__init__.py").write_text("")
    (tmp_path / "kl_helper_pkg" / "sub.py").write_text("VALUE = 2\n")
    path_before = list(sys.path)
    imports = JobImports()
    sys.path.insert(0, str(tmp_path))
    import kl_helper_module  # noqa: F401
    import kl_helper_pkg.sub  # noqa: F401
    assert "colorsys" not in imports.modules
    import colorsys  # noqa: F401  (the standard library's, a new top-level name: kept)
    dropped = imports.forget()
    assert set(dropped) == {"kl_helper_module", "kl_helper_pkg", "kl_helper_pkg.sub"}
    assert "kl_helper_module" not in sys.modules and "colorsys" in sys.modules
    assert sys.path == path_before
    (tmp_path / "kl_helper_module.py").write_text("VALUE = 3\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import kl_helper_module as again
        assert again.VALUE == 3  # imported afresh, the file as it is now
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("kl_helper_module", None)
