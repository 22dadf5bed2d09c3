"""The one converter from the plain data of pyproject.toml, LSP settings and CLI flags to `Settings`
(`apply_overrides`), after jedi-language-server's configuration, and the loading of `[tool.kernel-lsp]` from the
nearest pyproject.toml (`load_pyproject`). The settings themselves, their tables and their validation are in
settings.py; every name callers use is imported from here.

Precedence, lowest first: defaults, `[tool.kernel-lsp]` in the nearest pyproject.toml, then explicit overrides
(CLI flags or the editor's `workspace/configuration`). A key may be spelled in kebab-case, camelCase or snake_case
(`field_name`: one rule for every table). An unknown key or a bad value raises `ConfigError` naming the key; front
ends show it and fall back to defaults. The tables are frozen values; `Settings.executor_settings()` is the part
an executor is built from.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from pathlib import Path
from typing import Any

from .settings import (EXECUTORS, VERIFY_TRIGGERS, ConfigError, ExecutorSettings, LLMSettings, MeasureSettings,
                       SandboxSettings, Settings, field_name, is_project_root, looks_like_secret,
                       mask_secrets, split_command, user_cache_dir)

__all__ = ["EXECUTORS", "VERIFY_TRIGGERS", "ConfigError", "ExecutorSettings", "LLMSettings", "MeasureSettings",
           "SandboxSettings", "Settings", "apply_overrides", "field_name", "find_git_root", "find_pyproject",
           "is_project_root", "load_pyproject", "looks_like_secret", "mask_secrets", "settings_manifest",
           "user_cache_dir"]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.capitalize() for word in rest)


def _spelled(table: type) -> str:
    """The keys of a table as pyproject.toml spells them, for messages: "endpoint, model, api-key-env, ..."."""
    return ", ".join(f.name.replace("_", "-") for f in dataclasses.fields(table))


def settings_manifest() -> dict[str, Any]:
    """The settings the server accepts, with their defaults, as kernel_lsp/schemas/settings.json records them for
    the editor extension's tests (`python -m kernel_lsp.config` prints it). The `llm` and `measure` keys in the
    editor's spelling."""
    defaults = Settings()

    def plain(value: Any) -> Any:
        return list(value) if isinstance(value, tuple) else value
    top = {f.name: getattr(defaults, f.name) for f in dataclasses.fields(Settings)
           if f.name not in ("llm", "measure", "sandbox")}
    llm = {_camel(k): v for k, v in dataclasses.asdict(defaults.llm).items()}
    measure = {_camel(k): v for k, v in dataclasses.asdict(defaults.measure).items()}
    return {"settings": top, "llm": llm, "measure": measure,
            "sandbox": {k: plain(v) for k, v in dataclasses.asdict(defaults.sandbox).items()}}


def _coerce(key: str, value: Any) -> Any:
    """A top-level value in the shapes the flags and the editor also give it: a comma-separated string of targets
    or GPUs, a command line as one string."""
    if key == "targets" and isinstance(value, str):
        return [t.strip() for t in value.split(",") if t.strip()]
    if key == "runner" and isinstance(value, str):
        return split_command("runner", value)
    if key == "runners" and isinstance(value, list):
        return [split_command("runners", c) if isinstance(c, str) else c for c in value]
    if key == "gpus" and isinstance(value, str) and value != "all":
        try:
            return [int(g) for g in value.split(",") if g.strip()]
        except ValueError:
            raise ConfigError(f"gpus: expected \"all\" or GPU indices such as 0,2, got {value!r}") from None
    return value


def _table(name: str, table: type, value: Any) -> dict[str, Any]:
    """The value given for the table `name` (llm, measure, sandbox), as a dict of its keys."""
    if table is SandboxSettings and isinstance(value, bool):  # `sandbox = false`
        return {"enabled": value}
    if not isinstance(value, dict):
        shorthand = "true, false or " if table is SandboxSettings else ""
        raise ConfigError(f"{name}: expected {shorthand}a table with {_spelled(table)}")
    return value


def _merged(current: Any, overrides: dict[str, Any], where: str = "") -> Any:
    """`current` (Settings or one of its tables) with `overrides` applied, key by key; a table within is merged the
    same way into the one `current` has. Keys in any spelling (field_name); a None value keeps what `current` has;
    a list given for a tuple field becomes a tuple; an unknown key is a ConfigError naming it."""
    fields = {f.name: f for f in dataclasses.fields(current)}
    changes: dict[str, Any] = {}
    for raw_key, value in overrides.items():
        name = field_name(raw_key)
        if name not in fields:
            raise ConfigError(f"{where}: unknown key {raw_key!r} (expected {_spelled(type(current))})" if where
                              else f"unknown setting {raw_key!r}")
        if value is None:
            continue
        now = getattr(current, name)
        if dataclasses.is_dataclass(now):
            changes[name] = _merged(now, _table(name, type(now), value), name)
        elif where:
            changes[name] = tuple(value) if isinstance(now, tuple) and isinstance(value, list) else value
        else:
            changes[name] = _coerce(name, value)
    return dataclasses.replace(current, **changes)


def apply_overrides(settings: Settings, overrides: dict[str, Any]) -> Settings:
    """The one converter from plain data to Settings: `settings` with `overrides` (a [tool.kernel-lsp] table, the
    editor's `kernelLsp` settings, the CLI's flags) applied and validated. A key may be spelled in kebab-case,
    camelCase or snake_case (field_name); an unknown key, or a bad value, raises ConfigError naming it. A table
    (`llm`, `measure`, `sandbox`) is merged key by key into the one `settings` has, so overriding one key keeps the
    others."""
    return _merged(settings, overrides).validate()


def find_git_root(start: Path) -> Path | None:
    """The nearest directory at or above `start` (a file's own directory) that holds .git; None outside git."""
    start = start.resolve()
    for d in [start, *start.parents] if start.is_dir() else [start.parent, *start.parent.parents]:
        if (d / ".git").exists():
            return d
    return None


def find_pyproject(start: Path) -> Path | None:
    start = start.resolve()
    for d in [start, *start.parents] if start.is_dir() else [start.parent, *start.parent.parents]:
        candidate = d / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _line_of_table(text: str) -> int:
    for i, line in enumerate(text.splitlines()):
        if line.strip().startswith("[tool.kernel-lsp"):
            return i
    return 0


def _line_of_key(text: str, message: str) -> int:
    """The 0-based line of the key a ConfigError names ("timeout: ...", "llm.endpoint: ...", "unknown setting
    'x'", "llm: unknown key 'y'"), within its [tool.kernel-lsp] table; the table's header when not found."""
    m = (re.match(r"(?:\[tool\.kernel-lsp\] )?unknown setting '([\w-]+)'", message)
         or re.match(r"(?:\[tool\.kernel-lsp\] )?(\w+): unknown key '([\w-]+)'", message)
         or re.match(r'(?:\[tool\.kernel-lsp\] )?([\w-]+)\.("(?:[^"\\]|\\.)*"):', message)  # references."a/*.py"
         or re.match(r"(?:\[tool\.kernel-lsp\] )?([\w-]+)(?:\.([\w-]+))?:", message))
    if not m:
        return _line_of_table(text)
    parts = [g for g in m.groups() if g]
    table, key = ("tool.kernel-lsp", parts[0]) if len(parts) == 1 else (f"tool.kernel-lsp.{parts[0]}", parts[1])
    if key.startswith('"'):
        key = json.loads(key)
    spellings = {key, key.replace("_", "-"), key.replace("-", "_"), _camel(key.replace("-", "_"))}
    lines = text.splitlines()
    current = None
    for i, line in enumerate(lines):
        stripped = line.strip()
        header = re.match(r"\[([^\]]+)\]", stripped)
        if header:
            current = header.group(1).strip()
            continue
        kv = re.match(r"""([\w-]+|"[^"]*"|'[^']*')\s*=""", stripped)
        if kv and kv.group(1).strip("\"'") in spellings and current == table:
            return i
        if kv and len(parts) == 2 and current == "tool.kernel-lsp" and kv.group(1) == parts[0]:
            return i  # an inline table: llm = { ... }
    return _line_of_table(text)


def load_pyproject(pyproject: Path | None) -> tuple[Settings, Path | None]:
    """Settings from a pyproject.toml (defaults when it has no table); returns (settings, root)."""
    if pyproject is None:
        return Settings(), None
    try:
        text = pyproject.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read {pyproject}: {e}", str(pyproject)) from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{pyproject.name} is not valid TOML: {e}", str(pyproject),
                          max(getattr(e, "lineno", 1) - 1, 0)) from None
    table = data.get("tool", {}).get("kernel-lsp", {})
    if not isinstance(table, dict):
        raise ConfigError("[tool.kernel-lsp] must be a table", str(pyproject), _line_of_table(text))
    try:
        return apply_overrides(Settings(), table), pyproject.parent
    except (ConfigError, TypeError) as e:
        raise ConfigError(f"[tool.kernel-lsp] {e}", str(pyproject), _line_of_key(text, str(e))) from None


if __name__ == "__main__":
    import json
    print(json.dumps(settings_manifest(), indent=2))
