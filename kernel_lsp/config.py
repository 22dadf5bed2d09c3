"""Settings: one dataclass, one loader for pyproject.toml, LSP settings and CLI flags.

Precedence, lowest first: defaults, `[tool.kernel-lsp]` in the nearest pyproject.toml, then explicit overrides
(CLI flags or the editor's `workspace/configuration`). A bad value raises `ConfigError` naming the key; front
ends show it and fall back to defaults.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .device import DEVICES, gpu_present
from .targets import parse_targets


# What a secret looks like in text: the prefixes of the common API keys and tokens, a bearer token, and any long
# key-like run of letters and digits (mixed case with digits: not a path, a word or a hex digest).
_SECRET_PATTERNS = [
    re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}"),  # OpenAI, Anthropic, Stripe: sk-proj-..., sk-ant-...
    re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),  # GitHub
    re.compile(r"\bhf_[A-Za-z0-9]{20,}"),  # Hugging Face
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),  # AWS access key ids
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),  # Slack
    re.compile(r"\bAIza[0-9A-Za-z_-]{30,}"),  # Google
    re.compile(r"(?i)(?<=bearer )[A-Za-z0-9._~+/=-]{8,}"),
]
_KEY_LIKE = re.compile(r"(?<![A-Za-z0-9_/.-])[A-Za-z0-9_-]{32,}(?![A-Za-z0-9_/.-])")


def _hide(secret: str) -> str:
    return secret[: min(6, len(secret) // 4)] + "***"


def looks_like_secret(text: str) -> bool:
    return mask_secrets(text) != text


def mask_secrets(text: str) -> str:
    """`text` with anything that looks like a key or token cut to its first few characters and `***`: every message
    kernel-lsp shows goes through here, so a key pasted into a setting (or echoed by an endpoint) is never printed
    in full, in a terminal, a CI log or the editor."""
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(lambda m: _hide(m.group(0)), text)
    return _KEY_LIKE.sub(lambda m: _hide(m.group(0)) if _random_looking(m.group(0)) else m.group(0), text)


def _random_looking(word: str) -> bool:
    return (any(c.isdigit() for c in word) and any(c.islower() for c in word) and any(c.isupper() for c in word))


class ConfigError(ValueError):
    """The configuration is invalid; the message names the offending key (never a secret: masked)."""

    def __init__(self, message: str, path: str | None = None, line: int = 0):
        super().__init__(mask_secrets(message))
        self.path = path
        self.line = line


_KEY_HINT = (", which looks like an API key itself: keep the key out of the settings, in an environment variable "
             "(export OPENAI_API_KEY=...), and give api-key-env that variable's name")
VERIFY_TRIGGERS = ("save", "change", "off")
EXECUTORS = ("local", "ray")  # where jobs run: this machine (its CPUs, GPUs or runner), or a Ray cluster
# The LLM behind the fix and optimize code actions (docs/code-actions.md): where, which model, the *name* of the
# variable holding its key, and the budget of one request (candidates per round, rounds, tokens, seconds).
LLM_DEFAULTS: dict[str, Any] = {"endpoint": "", "model": "", "api_key_env": "OPENAI_API_KEY", "temperature": 0.2,
                                "candidates": 2, "rounds": 2, "max_tokens": 60000, "max_seconds": 600}
_LLM_KEYS = {"endpoint": "endpoint", "model": "model", "api_key_env": "api_key_env", "api-key-env": "api_key_env",
             "apiKeyEnv": "api_key_env", "temperature": "temperature", "candidates": "candidates",
             "rounds": "rounds", "max_tokens": "max_tokens", "max-tokens": "max_tokens", "maxTokens": "max_tokens",
             "max_seconds": "max_seconds", "max-seconds": "max_seconds", "maxSeconds": "max_seconds"}
# The measure stage (docs/performance-method.md): mode auto times verified kernels wherever they run on a GPU.
MEASURE_DEFAULTS: dict[str, Any] = {"mode": "auto", "cache": "cold", "compile": True, "compile_severity": "info",
                                    "seconds": 1.0, "precision": 0.005, "flops": None, "bytes": None,
                                    "time": "wall"}
_MEASURE_SPELLINGS = {"compile-severity": "compile_severity", "compileSeverity": "compile_severity"}
# The sandbox of processes that run checked code (docs/verification.md): on by default; `env` names variables passed
# through besides the allowlist, `writable` folders besides the private one and the compile caches.
SANDBOX_DEFAULTS: dict[str, Any] = {"enabled": True, "env": [], "writable": [], "network": False}


@dataclass(frozen=True)
class SandboxSettings:
    """The `sandbox` table as a value (run/sandbox.py turns it into the job's SandboxOptions)."""

    enabled: bool = True
    env: tuple[str, ...] = ()  # variables passed through besides the allowlist
    writable: tuple[str, ...] = ()  # folders writable besides the private one and the compile caches
    network: bool = False


@dataclass(frozen=True)
class ExecutorSettings:
    """Everything an executor is built from: run/executor.py's `executor_for` reads these and nothing else of the
    settings, so two of them are equal exactly when they build the same executor. The language server keeps its
    executor while `Settings.executor_settings()` stays equal, and builds a new one when it changes."""

    executor: str  # "local" or "ray"
    ray_address: str
    device: str
    workers: int
    retries: int
    runners: tuple[tuple[str, ...], ...]  # `runner`, then each of `runners`, as argument lists
    gpus: str | tuple[int, ...]  # "all", or indices among the visible GPUs
    sandbox: SandboxSettings
    secrets: tuple[str, ...]  # the names of variables no runner command may see: the LLM key's
    warm: bool  # warm workers (KERNEL_LSP_WARM is not 0): the zygote, a long-lived worker per GPU


@dataclass
class Settings:
    targets: list[str] = field(default_factory=lambda: ["sm_90"])
    timeout: float = 60.0  # seconds per worker job
    verify: str = "save"  # when the language server verifies: save, change, off
    workers: int = 2  # warm worker processes in the language server; parallel files in `check`
    device: str = "auto"  # where kernels run: auto (GPU if present), cpu (interpreter), cuda
    references: dict[str, str] = field(default_factory=dict)  # glob (relative to root) -> reference path
    cache_dir: str | None = None  # default: <root>/.kernel_lsp_cache, or the user's cache directory without a root
    verification: bool = True  # run the numeric verifier after compiling
    isolated_rerun: bool = True  # after a file passes, re-run it where it cannot see the checker (evidence.py)
    seed: int = 0
    # The LLM behind the "fix" and "optimize" code actions: any OpenAI-compatible endpoint. Only the *name* of
    # the environment variable holding the API key is configured, never the key.
    llm: dict[str, str] = field(default_factory=lambda: dict(LLM_DEFAULTS))
    # Timing against PyTorch on a GPU, and where that GPU is: a command that starts `kernel-lsp worker` (split as a
    # shell splits words), e.g. ["ssh", "gpu-box", "kernel-lsp", "worker"]; empty: this machine.
    measure: dict[str, Any] = field(default_factory=lambda: dict(MEASURE_DEFAULTS))
    runner: list[str] = field(default_factory=list)
    # More runner commands, one worker each (files go to whichever is free): each a string or a list of arguments.
    runners: list[list[str]] = field(default_factory=list)
    # The local GPUs to use, one long-lived worker each: "all" (every visible GPU) or a list of indices.
    gpus: Any = "all"
    sandbox: dict[str, Any] = field(default_factory=lambda: {k: (list(v) if isinstance(v, list) else v)
                                                             for k, v in SANDBOX_DEFAULTS.items()})
    # Where jobs run (docs/scale-out.md): "local", or "ray" (a Ray cluster at `ray_address`, "host:port" of its head or
    # "auto"; empty: a local cluster started for the run). A job whose Ray worker or node is lost runs again, at most
    # `retries` times.
    executor: str = "local"
    ray_address: str = ""
    retries: int = 2

    def validate(self) -> "Settings":
        try:
            parse_targets(self.targets)
        except ValueError as e:
            raise ConfigError(f"targets: {e}") from None
        if self.verify not in VERIFY_TRIGGERS:
            raise ConfigError(f"verify: expected one of {', '.join(VERIFY_TRIGGERS)}, got {self.verify!r}")
        if self.device not in DEVICES:
            raise ConfigError(f"device: expected one of {', '.join(DEVICES)}, got {self.device!r}")
        if not (isinstance(self.timeout, (int, float)) and self.timeout > 0):
            raise ConfigError(f"timeout: expected a positive number of seconds, got {self.timeout!r}")
        if not isinstance(self.isolated_rerun, bool):
            raise ConfigError(f"isolated-rerun: expected true or false, got {self.isolated_rerun!r}")
        if not (isinstance(self.workers, int) and 1 <= self.workers <= 64):
            raise ConfigError(f"workers: expected an integer from 1 to 64, got {self.workers!r}")
        # A key pasted where a URL or a variable's name belongs is refused, and the message masks it (ConfigError).
        endpoint, key_env = self.llm.get("endpoint", ""), self.llm.get("api_key_env", "")
        pasted = isinstance(endpoint, str) and looks_like_secret(endpoint)
        if pasted or not isinstance(endpoint, str) or not re.fullmatch(r"(https?://\S+)?", endpoint):
            raise ConfigError(f"llm.endpoint: expected an http(s) URL, got {endpoint!r}" + _KEY_HINT * pasted)
        pasted = isinstance(key_env, str) and looks_like_secret(key_env)
        if pasted or not isinstance(key_env, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key_env):
            raise ConfigError("llm.api-key-env: expected the name of an environment variable, such as "
                              f"OPENAI_API_KEY, got {key_env!r}" + _KEY_HINT * pasted)
        if not isinstance(self.llm.get("model", ""), str):
            raise ConfigError("llm.model: expected a model name")
        _validate_llm_budget(self.llm)
        _validate_measure(self.measure)
        _validate_sandbox(self.sandbox)
        if self.executor not in EXECUTORS:
            raise ConfigError(f"executor: expected one of {', '.join(EXECUTORS)}, got {self.executor!r}")
        if not isinstance(self.ray_address, str) or not re.fullmatch(r"(auto|(ray://)?\[?[\w.:-]+\]?(:\d+)?)?",
                                                                     self.ray_address):
            raise ConfigError(f"ray-address: expected the head's host:port, \"auto\" or a ray:// address, "
                              f"got {self.ray_address!r}")
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or not 0 <= self.retries <= 10:
            raise ConfigError(f"retries: expected an integer from 0 to 10, got {self.retries!r}")
        if not isinstance(self.runner, list) or not all(isinstance(a, str) and a for a in self.runner):
            raise ConfigError("runner: expected a command, as a string or a list of arguments, such as "
                              "\"ssh gpu-box kernel-lsp worker\"")
        if not isinstance(self.runners, list) or not all(
                isinstance(c, list) and c and all(isinstance(a, str) and a for a in c) for c in self.runners):
            raise ConfigError("runners: expected a list of commands (strings or lists of arguments)")
        if self.gpus != "all" and not (isinstance(self.gpus, list) and self.gpus and all(
                isinstance(g, int) and not isinstance(g, bool) and g >= 0 for g in self.gpus)):
            raise ConfigError(f"gpus: expected \"all\" or a list of GPU indices such as [0, 2], got {self.gpus!r}")
        _validate_references(self.references)
        return self

    def cache_path(self, root: Path | None) -> Path:
        """Where results are cached: `cache-dir` (a relative one from the root), else .kernel_lsp_cache in the
        project root (a directory holding pyproject.toml or .git), else the user's cache directory: never the
        current directory merely because a check was started there."""
        if self.cache_dir:
            return root / self.cache_dir if root is not None else Path(self.cache_dir)
        if root is not None and is_project_root(root):
            return root / ".kernel_lsp_cache"
        return user_cache_dir() / "results"

    def timing_unavailable(self) -> str | None:
        """Why no kernel can be timed with these settings from this machine, or None. Optimize and tune accept only
        a candidate timed faster than the current kernel: where nothing can be timed they cannot finish, so the
        front ends refuse them before any work (and the editor does not offer them)."""
        if self.runner or self.runners or self.executor == "ray":
            return None  # the GPU is where the runner or the cluster is
        if self.device == "cpu":
            return "device is cpu (Triton's interpreter), and nothing is timed without a GPU"
        if not gpu_present():
            return "this machine has no GPU and no runner is set, and nothing is timed without a GPU"
        return None

    def executor_settings(self) -> ExecutorSettings:
        """The part of these settings (and of the environment: KERNEL_LSP_WARM) that builds an executor."""
        runners = ([self.runner] if self.runner else []) + list(self.runners)
        return ExecutorSettings(
            self.executor, self.ray_address, self.device, self.workers, self.retries,
            tuple(tuple(_split_command("runner", c) if isinstance(c, str) else c) for c in runners),
            self.gpus if isinstance(self.gpus, str) else tuple(self.gpus), self.sandbox_settings(),
            (self.llm["api_key_env"],), os.environ.get("KERNEL_LSP_WARM", "1") != "0")

    def sandbox_settings(self) -> SandboxSettings:
        sb = self.sandbox
        return SandboxSettings(bool(sb["enabled"]), tuple(sb["env"]), tuple(sb["writable"]), bool(sb["network"]))

    def fingerprint(self) -> dict[str, Any]:
        """The settings that change a check's result, for the cache key."""
        return {"targets": sorted(self.targets), "verification": self.verification, "seed": self.seed,
                "isolated_rerun": self.isolated_rerun,
                "device": self.device, "measure": self.measure, "runner": self.runner or bool(self.runners),
                "sandbox": {k: self.sandbox[k] for k in ("enabled", "network")}}


_FIELDS = {f.name: f for f in dataclasses.fields(Settings)}
_ALIASES = {"cache-dir": "cache_dir"}
_LLM_EDITOR_SPELLING = {"endpoint": "endpoint", "model": "model", "api_key_env": "apiKeyEnv",
                        "max_tokens": "maxTokens", "max_seconds": "maxSeconds"}
_MEASURE_EDITOR_SPELLING = {"compile_severity": "compileSeverity"}


def settings_manifest() -> dict[str, Any]:
    """The settings the server accepts, with their defaults, as kernel_lsp/schemas/settings.json records them for
    the editor extension's tests (`python -m kernel_lsp.config` prints it). The `llm` keys in the editor's spelling."""
    defaults = Settings()
    top = {name: getattr(defaults, name) for name in _FIELDS if name not in ("llm", "measure", "sandbox")}
    llm = {_LLM_EDITOR_SPELLING.get(k, k): v for k, v in defaults.llm.items()}
    measure = {_MEASURE_EDITOR_SPELLING.get(k, k): v for k, v in defaults.measure.items()}
    return {"settings": top, "llm": llm, "measure": measure, "sandbox": dict(defaults.sandbox)}


def _validate_references(references: Any) -> None:
    if not isinstance(references, dict):
        raise ConfigError("references: expected a table of glob = \"reference path\"")
    for glob, target in references.items():
        name = f"references.{glob}" if re.fullmatch(r"[\w-]+", glob) else f"references.{json.dumps(glob)}"
        if glob.replace("-", "_") in _FIELDS or glob in _ALIASES:
            # The sample's trap: TOML puts every key after the [tool.kernel-lsp.references] header into that table.
            raise ConfigError(f"{name}: {glob} is a setting, not a glob; the lines after the "
                              "[tool.kernel-lsp.references] header belong to that table: move it above the header")
        if not isinstance(target, str):
            raise ConfigError(f"{name}: expected the reference's path for this glob (a string), got "
                              f"{type(target).__name__} {target!r}")


def _validate_llm_budget(llm: dict[str, Any]) -> None:
    t = llm.get("temperature")
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t <= 2:
        raise ConfigError(f"llm.temperature: expected a number from 0 to 2, got {t!r}")
    for key, spelled, low, high in (("candidates", "candidates", 1, 16), ("rounds", "rounds", 1, 10),
                                    ("max_tokens", "max-tokens", 1000, 10_000_000),
                                    ("max_seconds", "max-seconds", 10, 86_400)):
        v = llm.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
            raise ConfigError(f"llm.{spelled}: expected an integer from {low} to {high}, got {v!r}")


def _validate_measure(m: dict[str, Any]) -> None:
    if m.get("mode") not in ("auto", "off"):
        raise ConfigError(f"measure.mode: expected auto or off, got {m.get('mode')!r}")
    if m.get("time") not in ("wall", "gpu"):
        raise ConfigError(f"measure.time: expected wall (back to back, host launch included) or gpu, "
                          f"got {m.get('time')!r}")
    if m.get("cache") not in ("cold", "hot"):
        raise ConfigError(f"measure.cache: expected cold or hot, got {m.get('cache')!r}")
    if not isinstance(m.get("compile"), bool):
        raise ConfigError(f"measure.compile: expected true or false, got {m.get('compile')!r}")
    if m.get("compile_severity") not in ("info", "warning"):
        raise ConfigError(f"measure.compile-severity: expected info or warning, got {m.get('compile_severity')!r}")
    seconds = m.get("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= 60:
        raise ConfigError(f"measure.seconds: expected a number of seconds from 0 to 60, got {seconds!r}")
    precision = m.get("precision")
    if isinstance(precision, bool) or not isinstance(precision, (int, float)) or not 0 <= precision < 1:
        raise ConfigError(f"measure.precision: expected a fraction from 0 (never stop early) to below 1, "
                          f"got {precision!r}")
    for key in ("flops", "bytes"):
        v = m.get(key)
        if v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0):
            continue
        if not (isinstance(v, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*|[0-9.eE+]+", v)):
            raise ConfigError(f"measure.{key}: expected a positive number or the name of a function in the "
                              f"reference module, got {v!r}")


def _split_command(key: str, value: str) -> list[str]:
    import shlex
    try:
        return shlex.split(value)
    except ValueError as e:
        raise ConfigError(f"{key}: {e}") from None


def _validate_sandbox(sb: dict[str, Any]) -> None:
    for key in ("enabled", "network"):
        if not isinstance(sb.get(key), bool):
            raise ConfigError(f"sandbox.{key}: expected true or false, got {sb.get(key)!r}")
    if not isinstance(sb.get("env"), list) or not all(isinstance(v, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v)
                                                       for v in sb["env"]):
        raise ConfigError(f"sandbox.env: expected a list of variable names, got {sb.get('env')!r}")
    if not isinstance(sb.get("writable"), list) or not all(isinstance(v, str) and v for v in sb["writable"]):
        raise ConfigError(f"sandbox.writable: expected a list of folders, got {sb.get('writable')!r}")


def _coerce(key: str, value: Any, current: Any = None) -> Any:
    if key == "targets" and isinstance(value, str):
        return [t.strip() for t in value.split(",") if t.strip()]
    if key == "runner" and isinstance(value, str):
        return _split_command("runner", value)
    if key == "runners" and isinstance(value, list):
        return [_split_command("runners", c) if isinstance(c, str) else c for c in value]
    if key == "gpus" and isinstance(value, str) and value != "all":
        try:
            return [int(g) for g in value.split(",") if g.strip()]
        except ValueError:
            raise ConfigError(f"gpus: expected \"all\" or GPU indices such as 0,2, got {value!r}") from None
    if key == "measure":
        if not isinstance(value, dict):
            raise ConfigError("measure: expected a table with mode, cache, compile, compile-severity, seconds, "
                              "flops and bytes")
        measure = dict(current if isinstance(current, dict) else MEASURE_DEFAULTS)
        for k, v in value.items():
            name = _MEASURE_SPELLINGS.get(k, k)
            if name not in MEASURE_DEFAULTS:
                raise ConfigError(f"measure: unknown key {k!r} (expected mode, cache, compile, compile-severity, "
                                  "seconds, precision, flops, bytes, time)")
            if v is not None:
                measure[name] = v
        return measure
    if key == "sandbox":
        if isinstance(value, bool):  # `sandbox = false`
            value = {"enabled": value}
        if not isinstance(value, dict):
            raise ConfigError("sandbox: expected true, false or a table with enabled, env, writable and network")
        sandbox = dict(current if isinstance(current, dict) else SANDBOX_DEFAULTS)
        for k, v in value.items():
            if k not in SANDBOX_DEFAULTS:
                raise ConfigError(f"sandbox: unknown key {k!r} (expected enabled, env, writable, network)")
            if v is not None:
                sandbox[k] = v
        return sandbox
    if key == "llm":
        if not isinstance(value, dict):
            raise ConfigError("llm: expected a table with endpoint, model and api-key-env")
        llm = dict(current if isinstance(current, dict) else LLM_DEFAULTS)
        for k, v in value.items():
            if k not in _LLM_KEYS:
                raise ConfigError(f"llm: unknown key {k!r} (expected endpoint, model, api-key-env, temperature, "
                                  "candidates, rounds, max-tokens, max-seconds)")
            if v is not None:
                llm[_LLM_KEYS[k]] = v
        return llm
    return value


def apply_overrides(settings: Settings, overrides: dict[str, Any]) -> Settings:
    """Return a copy of `settings` with `overrides` applied; unknown keys raise ConfigError. A table (`llm`,
    `measure`) is merged key by key into the one `settings` has, so overriding one key keeps the others."""
    values = dataclasses.asdict(settings)
    for raw_key, value in overrides.items():
        key = _ALIASES.get(raw_key, raw_key.replace("-", "_"))
        if key not in _FIELDS:
            raise ConfigError(f"unknown setting {raw_key!r}")
        if value is None:
            continue
        values[key] = _coerce(key, value, values[key])
    return Settings(**values).validate()


def is_project_root(directory: Path) -> bool:
    """A directory that holds pyproject.toml or a git checkout (.git: a directory, or a file in a worktree)."""
    return (directory / "pyproject.toml").is_file() or (directory / ".git").exists()


def find_git_root(start: Path) -> Path | None:
    """The nearest directory at or above `start` (a file's own directory) that holds .git; None outside git."""
    start = start.resolve()
    for d in [start, *start.parents] if start.is_dir() else [start.parent, *start.parent.parents]:
        if (d / ".git").exists():
            return d
    return None


def user_cache_dir() -> Path:
    """kernel-lsp's directory in the user's cache: $XDG_CACHE_HOME/kernel-lsp, by default ~/.cache/kernel-lsp."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "kernel-lsp"


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
    spellings = {key, key.replace("_", "-"), key.replace("-", "_")}
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
