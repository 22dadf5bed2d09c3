"""job_imports: a long-lived worker forgets the user's modules a job imported, and keeps the installation's and
those of folders on its own path as it started (PYTHONPATH, an editable install)."""

import sys

from kernel_lsp.run.job_imports import JobImports

STANDARD = ("colorsys", "wave", "sunau", "tabnanny", "pyclbr", "netrc", "mailbox")  # seldom imported by anything


def test_a_jobs_own_modules_and_path_are_forgotten_and_installed_ones_kept(tmp_path):
    job, started = tmp_path / "job", tmp_path / "pythonpath"
    for folder in (job, started):
        folder.mkdir()
    (job / "kl_helper_module.py").write_text("VALUE = 1\n")
    (job / "kl_helper_pkg").mkdir()
    (job / "kl_helper_pkg" / "__init__.py").write_text("")
    (job / "kl_helper_pkg" / "sub.py").write_text("VALUE = 2\n")
    (started / "kl_installed_elsewhere.py").write_text("VALUE = 4\n")
    sys.path.append(str(started))  # on the worker's path before its first job
    try:
        path_before = list(sys.path)
        imports = JobImports()
        sys.path.insert(0, str(job))
        import kl_helper_module  # noqa: F401
        import kl_helper_pkg.sub  # noqa: F401
        import kl_installed_elsewhere  # noqa: F401
        fresh = [name for name in STANDARD if name not in imports.modules][:1]
        for name in fresh:
            __import__(name)  # the standard library's, a new top-level name: kept
        dropped = imports.forget()
        assert set(dropped) == {"kl_helper_module", "kl_helper_pkg", "kl_helper_pkg.sub"}
        assert all(name in sys.modules for name in fresh + ["kl_installed_elsewhere"])
        assert sys.path == path_before
        (job / "kl_helper_module.py").write_text("VALUE = 3\n")
        sys.path.insert(0, str(job))
        import kl_helper_module as again
        assert again.VALUE == 3  # imported afresh, the file as it is now
    finally:
        for name in ("kl_helper_module", "kl_installed_elsewhere"):
            sys.modules.pop(name, None)
        for folder in (job, started):
            while str(folder) in sys.path:
                sys.path.remove(str(folder))


def test_a_forget_a_cancel_interrupted_is_finished_by_the_next(tmp_path, monkeypatch):
    (tmp_path / "kl_first_helper.py").write_text("")
    (tmp_path / "kl_second_helper.py").write_text("")
    imports = JobImports()
    sys.path.insert(0, str(tmp_path))
    import kl_first_helper  # noqa: F401
    import kl_second_helper  # noqa: F401
    real_pop, calls = sys.modules.pop, []

    class Interrupted(dict):
        def pop(self, name, *default):
            calls.append(name)
            if len(calls) == 2:
                raise KeyboardInterrupt  # a cancel, mid-way
            return real_pop(name, *default)

    monkeypatch.setattr(sys, "modules", Interrupted(sys.modules))
    try:
        imports.forget()
    except KeyboardInterrupt:
        pass
    monkeypatch.undo()
    assert str(tmp_path) not in sys.path  # the path first
    imports.forget()
    assert "kl_first_helper" not in sys.modules and "kl_second_helper" not in sys.modules
