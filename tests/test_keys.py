"""Two keys that decide whether earlier work may be reused: the cache's rules digest (a verdict cached by other rules
is never served) and the language server's executor settings (its workers are rebuilt when a setting that built
them changes). Each is checked against the code it must cover, so a new verdict module or a new executor setting
cannot slip outside it."""

from __future__ import annotations

import ast
from pathlib import Path

from kernel_lsp.cache import RULE_MODULES

PACKAGE = Path(__file__).resolve().parent.parent / "kernel_lsp"
# Front ends render and schedule findings the checked report already holds; what they add is never cached.
FRONT_ENDS = ("cli.py", "api.py", "lsp", "render", "propose", "bundled.py")


def _makes_findings(path: Path) -> bool:
    """The module decides findings: it builds a Finding, asks a code's severity, or adds a finding by code."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ("Finding", "severity_of"):
                return True
            if name == "add" and node.args and isinstance(node.args[0], ast.Constant) and \
                    str(node.args[0].value).startswith("KL"):
                return True
    return False


def test_cache_every_module_that_decides_a_verdict_is_in_the_rules_digest():
    """A change to any module that decides findings invalidates cached verdicts: each such module lies under an entry
    of cache.RULE_MODULES (worker/ and check.py once did not, and a change there could serve a stale verdict)."""
    outside = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(FRONT_ENDS) or not _makes_findings(path):
            continue
        if not any(rel == m or rel.startswith(m + "/") for m in RULE_MODULES):
            outside.append(rel)
    assert not outside, f"modules that decide findings but are not in cache.RULE_MODULES: {outside}"


def _imported(path: Path) -> set[str]:
    """The package's modules (as paths relative to it) that `path` imports, at module level or inside functions."""
    parts = ["kernel_lsp", *path.relative_to(PACKAGE).with_suffix("").parts]
    here = parts if path.name == "__init__.py" else parts[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.ImportFrom):
            base = ".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else (node.module or "")
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            if name == "kernel_lsp" or name.startswith("kernel_lsp."):
                target = PACKAGE.joinpath(*name.split(".")[1:])
                for candidate in (target.with_suffix(".py"), target / "__init__.py"):
                    if candidate.is_file():
                        found.add(candidate.relative_to(PACKAGE).as_posix())
    return found


def test_cache_the_rules_digest_covers_everything_its_modules_import():
    """verdict.py (what lets the evidence runs follow) and targets.py (the limits behind KL101) once lay outside the
    digest although the checker imports them: every module a digested module imports is digested too."""
    def inside(rel: str) -> bool:
        return any(rel == m or rel.startswith(m + "/") for m in RULE_MODULES)
    outside = sorted({f"{target} (imported by {path.relative_to(PACKAGE).as_posix()})"
                      for path in PACKAGE.rglob("*.py") if inside(path.relative_to(PACKAGE).as_posix())
                      for target in _imported(path) if not inside(target)})
    assert not outside, f"imported by digested modules but not in cache.RULE_MODULES: {outside}"


def _names_used(fn, name: str) -> list[str]:
    """How a function uses the variable `name`: `name.attr` for an attribute read, `name` for any other use."""
    import inspect
    import textwrap
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    attributes = {id(n.value): f"{name}.{n.attr}" for n in ast.walk(tree)
                  if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == name}
    return [attributes.get(id(n), name) for n in ast.walk(tree)
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]


def test_executor_is_built_from_the_executor_settings_alone():
    """The language server keeps its executor while `Settings.executor_settings()` stays equal: `executor_for` must
    read nothing else of the settings (a hand-kept key once ignored runners, gpus, sandbox, retries and the LLM key's
    name, so changing those in the editor kept the old workers)."""
    import inspect

    from kernel_lsp.config import ExecutorSettings
    from kernel_lsp.run.executor import build_executor, executor_for
    assert _names_used(executor_for, "settings") == ["settings.executor_settings"]
    assert inspect.signature(build_executor).parameters["chosen"].annotation in (ExecutorSettings, "ExecutorSettings")


def test_executor_settings_change_with_every_setting_the_executor_is_built_from():
    from kernel_lsp.config import Settings, apply_overrides
    changes = {"gpus": [0], "retries": 5, "runner": "ssh box kernel-lsp worker",
               "runners": [["ssh", "a", "kernel-lsp", "worker"], "ssh b kernel-lsp worker"],
               "sandbox": {"env": ["HF_HOME"]}, "llm": {"api-key-env": "MY_KEY"}, "device": "cpu", "workers": 3,
               "executor": "ray", "ray_address": "auto"}
    base = Settings().executor_settings()
    for key, value in changes.items():
        changed = apply_overrides(Settings(), {key: value}).executor_settings()
        assert changed != base, key
        assert changed == apply_overrides(Settings(), {key: value}).executor_settings(), key  # a value: equal again
    for key in ("timeout", "verify", "seed", "targets"):  # a check's own settings keep the executor
        value = {"timeout": 5, "verify": "change", "seed": 3, "targets": ["sm_80"]}[key]
        assert apply_overrides(Settings(), {key: value}).executor_settings() == base, key


def test_executor_the_language_server_rebuilds_its_workers_when_a_setting_that_built_them_changes():
    from kernel_lsp.config import Settings, apply_overrides
    from kernel_lsp.lsp.scheduler import Scheduler
    made = []

    class Fake:
        capacity = 1

        def close(self):
            pass

    def executor_for(settings):
        made.append(settings)
        return Fake()
    scheduler = Scheduler(None, Settings(), None, lambda req: None, executor_for)
    for change in ({"gpus": [0]}, {"retries": 5}, {"runners": [["ssh", "box", "kernel-lsp", "worker"]]},
                   {"sandbox": {"enabled": False, "env": [], "writable": [], "network": False}},
                   {"sandbox": {"writable": ["/data"]}}, {"llm": {"api-key-env": "MY_KEY"}}):
        before = len(made)
        scheduler.configure(apply_overrides(Settings(), change), None)
        assert len(made) == before + 1, change
        scheduler.configure(apply_overrides(Settings(), change), None)
        assert len(made) == before + 1, change  # the same settings again: the same workers
