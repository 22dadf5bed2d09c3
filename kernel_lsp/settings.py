"""Settings: nested dataclasses with defaults (`Settings`, its tables `LLMSettings`, `MeasureSettings` and
`SandboxSettings`, and `ExecutorSettings`, the part an executor is built from), their validation, and the masking of
secrets in every message.

The tables are frozen values. `Settings.validate()` refuses a bad value with a `ConfigError` naming the key (its
message masked: a key pasted into a setting is never shown in full). A key may be spelled in kebab-case, camelCase
or snake_case (`field_name`: one rule for every table). config.py builds Settings from the plain data of
pyproject.toml, LSP settings and CLI flags, and is where callers import all of this from.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .device import DEVICES, auto_gpu_workers, gpu_present
from .targets import parse_targets
from .trusted import unsafe_writable


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


@dataclass(frozen=True)
class LLMSettings:
    """The `llm` table: the LLM behind the fix and optimize code actions (docs/code-actions.md): where, which model,
    the *name* of the variable holding its key (never the key), and the budget of one request."""

    endpoint: str = ""  # any OpenAI-compatible endpoint
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.2
    candidates: int = 2  # per round
    rounds: int = 2
    max_tokens: int = 60000
    max_seconds: int = 600


@dataclass(frozen=True)
class MeasureSettings:
    """The `measure` table: timing against PyTorch on a GPU (docs/performance-method.md); mode auto times verified
    kernels wherever they run on a GPU."""

    mode: str = "auto"  # auto or off
    cache: str = "cold"  # cold: L2 flushed before every timed call; hot: not
    compile: bool = True  # also time torch.compile of the reference
    compile_severity: str = "info"  # of KL401: info or warning
    seconds: float = 1.0  # interleaved timing budget per file
    precision: float = 0.005  # stop sooner once every interval is this tight; 0: never
    flops: float | str | None = None  # declared work: a number, or a function of the reference module
    bytes: float | str | None = None
    time: str = "wall"  # wall (back to back, host launch included) or gpu


@dataclass(frozen=True)
class SandboxSettings:
    """The `sandbox` table: the sandbox of processes that run checked code (docs/verification.md), on by default
    (run/sandbox.py turns it into the job's SandboxOptions)."""

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
    warm: bool  # warm workers (KERNEL_LSP_WARM is not 0): the zygote, long-lived workers per GPU
    gpu_workers: int = 1  # long-lived workers per local GPU


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
    llm: LLMSettings = field(default_factory=LLMSettings)
    measure: MeasureSettings = field(default_factory=MeasureSettings)
    # Where the GPU is: a command that starts `kernel-lsp worker` (split as a shell splits words), e.g.
    # ["ssh", "gpu-box", "kernel-lsp", "worker"]; empty: this machine.
    runner: list[str] = field(default_factory=list)
    # More runner commands, one worker each (files go to whichever is free): each a string or a list of arguments.
    runners: list[list[str]] = field(default_factory=list)
    # The local GPUs to use, one long-lived worker each: "all" (every visible GPU) or a list of indices.
    gpus: Any = "all"
    # Long-lived workers per local GPU: they verify files at once, and time one at a time with nothing of kernel-lsp's
    # own verifying on that GPU meanwhile (checker/measure/gpu_lease.py). "auto": as many as the GPU's memory and the
    # host's cores allow, at most four (device.auto_gpu_workers).
    gpu_workers: Any = "auto"
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
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
        endpoint, key_env = self.llm.endpoint, self.llm.api_key_env
        pasted = isinstance(endpoint, str) and looks_like_secret(endpoint)
        if pasted or not isinstance(endpoint, str) or not re.fullmatch(r"(https?://\S+)?", endpoint):
            raise ConfigError(f"llm.endpoint: expected an http(s) URL, got {endpoint!r}" + _KEY_HINT * pasted)
        pasted = isinstance(key_env, str) and looks_like_secret(key_env)
        if pasted or not isinstance(key_env, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key_env):
            raise ConfigError("llm.api-key-env: expected the name of an environment variable, such as "
                              f"OPENAI_API_KEY, got {key_env!r}" + _KEY_HINT * pasted)
        if not isinstance(self.llm.model, str):
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
        if self.gpu_workers != "auto" and (isinstance(self.gpu_workers, bool) or not isinstance(self.gpu_workers, int)
                                           or not 1 <= self.gpu_workers <= 16):
            raise ConfigError(f"gpu-workers: expected \"auto\" or an integer from 1 to 16, got {self.gpu_workers!r}")
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
            tuple(tuple(split_command("runner", c) if isinstance(c, str) else c) for c in runners),
            self.gpus if isinstance(self.gpus, str) else tuple(self.gpus), self.sandbox, (self.llm.api_key_env,),
            os.environ.get("KERNEL_LSP_WARM", "1") != "0", self.workers_per_gpu())

    def workers_per_gpu(self) -> int:
        """`gpu-workers` as a number: "auto" is this machine's (device.auto_gpu_workers) where it has a GPU and the
        checks run on it, else one (a runner's machine or a Ray cluster's GPUs are not this machine's)."""
        if self.gpu_workers != "auto":
            return self.gpu_workers
        if self.device == "cpu" or self.runner or self.runners or self.executor == "ray" or not gpu_present():
            return 1
        return auto_gpu_workers()

    def fingerprint(self) -> dict[str, Any]:
        """The settings that change a check's result, for the cache key: where the checks run too (the executor,
        the Ray cluster, each runner command), as another machine's GPU, versions and timings are another result."""
        return {"targets": sorted(self.targets), "verification": self.verification, "seed": self.seed,
                "isolated_rerun": self.isolated_rerun,
                "device": self.device, "measure": dataclasses.asdict(self.measure),
                "runner": self.runner or bool(self.runners),
                "sandbox": {"enabled": self.sandbox.enabled, "network": self.sandbox.network},
                "where": {"executor": self.executor,
                          "ray_address": self.ray_address if self.executor == "ray" else None,
                          "runners": ([self.runner] if self.runner else []) + [
                              c if isinstance(c, str) else list(c) for c in self.runners]}}


_FIELDS = {f.name: f for f in dataclasses.fields(Settings)}


def field_name(key: str) -> str:
    """The field a key names, however it is spelled: kebab-case (pyproject.toml: `api-key-env`), camelCase (the
    editor: `apiKeyEnv`) or snake_case (`api_key_env`). The one spelling rule of every table."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", lambda m: "_" + m.group(1).lower(), key).replace("-", "_")


def _validate_references(references: Any) -> None:
    if not isinstance(references, dict):
        raise ConfigError("references: expected a table of glob = \"reference path\"")
    for glob, target in references.items():
        name = f"references.{glob}" if re.fullmatch(r"[\w-]+", glob) else f"references.{json.dumps(glob)}"
        if field_name(glob) in _FIELDS:
            # The sample's trap: TOML puts every key after the [tool.kernel-lsp.references] header into that table.
            raise ConfigError(f"{name}: {glob} is a setting, not a glob; the lines after the "
                              "[tool.kernel-lsp.references] header belong to that table: move it above the header")
        if not isinstance(target, str):
            raise ConfigError(f"{name}: expected the reference's path for this glob (a string), got "
                              f"{type(target).__name__} {target!r}")


def _validate_llm_budget(llm: LLMSettings) -> None:
    t = llm.temperature
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t <= 2:
        raise ConfigError(f"llm.temperature: expected a number from 0 to 2, got {t!r}")
    for key, low, high in (("candidates", 1, 16), ("rounds", 1, 10), ("max_tokens", 1000, 10_000_000),
                           ("max_seconds", 10, 86_400)):
        v = getattr(llm, key)
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
            raise ConfigError(f"llm.{key.replace('_', '-')}: expected an integer from {low} to {high}, got {v!r}")


def _validate_measure(m: MeasureSettings) -> None:
    if m.mode not in ("auto", "off"):
        raise ConfigError(f"measure.mode: expected auto or off, got {m.mode!r}")
    if m.time not in ("wall", "gpu"):
        raise ConfigError(f"measure.time: expected wall (back to back, host launch included) or gpu, got {m.time!r}")
    if m.cache not in ("cold", "hot"):
        raise ConfigError(f"measure.cache: expected cold or hot, got {m.cache!r}")
    if not isinstance(m.compile, bool):
        raise ConfigError(f"measure.compile: expected true or false, got {m.compile!r}")
    if m.compile_severity not in ("info", "warning"):
        raise ConfigError(f"measure.compile-severity: expected info or warning, got {m.compile_severity!r}")
    seconds = m.seconds
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= 60:
        raise ConfigError(f"measure.seconds: expected a number of seconds from 0 to 60, got {seconds!r}")
    precision = m.precision
    if isinstance(precision, bool) or not isinstance(precision, (int, float)) or not 0 <= precision < 1:
        raise ConfigError(f"measure.precision: expected a fraction from 0 (never stop early) to below 1, "
                          f"got {precision!r}")
    for key in ("flops", "bytes"):
        v = getattr(m, key)
        if v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0):
            continue
        if not (isinstance(v, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*|[0-9.eE+]+", v)):
            raise ConfigError(f"measure.{key}: expected a positive number or the name of a function in the "
                              f"reference module, got {v!r}")


def split_command(key: str, value: str) -> list[str]:
    import shlex
    try:
        return shlex.split(value)
    except ValueError as e:
        raise ConfigError(f"{key}: {e}") from None


def _validate_sandbox(sb: SandboxSettings) -> None:
    for key in ("enabled", "network"):
        if not isinstance(getattr(sb, key), bool):
            raise ConfigError(f"sandbox.{key}: expected true or false, got {getattr(sb, key)!r}")
    if not isinstance(sb.env, tuple) or not all(isinstance(v, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v)
                                                for v in sb.env):
        raise ConfigError(f"sandbox.env: expected a list of variable names, got {_shown(sb.env)!r}")
    if not isinstance(sb.writable, tuple) or not all(isinstance(v, str) and v for v in sb.writable):
        raise ConfigError(f"sandbox.writable: expected a list of folders, got {_shown(sb.writable)!r}")
    unsafe = unsafe_writable(sb.writable)
    if unsafe:
        said = "; ".join(f"{entry} {why}" for entry, why in unsafe.items())
        raise ConfigError(f"sandbox.writable: {said}: kernel-lsp reads back and trusts what is there, so checked code "
                          "may not write there (name a folder that holds none of it)")


def _shown(value: Any) -> Any:
    """A value as the user wrote it (a list the converter made a tuple is a list again)."""
    return list(value) if isinstance(value, tuple) else value


def is_project_root(directory: Path) -> bool:
    """A directory that holds pyproject.toml or a git checkout (.git: a directory, or a file in a worktree)."""
    return (directory / "pyproject.toml").is_file() or (directory / ".git").exists()


def user_cache_dir() -> Path:
    """kernel-lsp's directory in the user's cache: $XDG_CACHE_HOME/kernel-lsp, by default ~/.cache/kernel-lsp."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "kernel-lsp"
