"""Record every Triton launch the linked code makes: the kernel, its specialization, and its tensors.

Runs in a worker. `LaunchRecorder.install()` wraps the public `run` entry points of `JITFunction` and (under
`TRITON_INTERPRET=1`) `InterpretedFunction`, and `Autotuner.run` so that every autotune config is compiled,
not only the one picked. The wrapping uses only names that exist across Triton 3.x; where one is missing,
that part of the capture is skipped (without a finding), never a crash. A launch whose arguments cannot be
turned into a specialization is counted but not recorded: Triton itself raises for a truly bad launch.
"""

from __future__ import annotations

import inspect
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

# Launch options that Triton accepts as keyword arguments but which are not kernel parameters.
LAUNCH_OPTIONS = {"num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid",
                  "launch_pdl", "debug", "stream", "warmup", "grid"}


@dataclass
class Spec:
    """One specialization of one kernel: what `triton.compile` needs to rebuild it for any target."""

    qualname: str
    name: str
    signature: dict[str, str]  # parameter -> Triton type ("*fp32", "i32", "constexpr")
    constexprs: dict[str, Any]
    attrs: dict[str, list]  # parameter -> attributes such as [["tt.divisibility", 16]]
    num_warps: int = 4
    num_stages: int = 3
    config: str = ""  # autotune config label when it came from one

    def key(self) -> tuple:
        return (self.qualname, tuple(self.signature.items()), tuple((k, repr(v)) for k, v in self.constexprs.items()),
                tuple(sorted(self.attrs)), self.num_warps, self.num_stages)

    def describe(self) -> str:
        consts = ", ".join(f"{k}={v}" for k, v in self.constexprs.items() if v is not None)
        return f"{consts}{', ' if consts else ''}num_warps={self.num_warps}, num_stages={self.num_stages}"


@dataclass
class Launch:
    fn: Callable  # the undecorated Python function
    spec: Spec
    programs: int | None = None  # the grid's size (programs launched); None where the grid could not be read
    line: int | None = None  # the 0-based line of the implementation's file that made it (its innermost frame there)


@dataclass
class LaunchRecorder:
    launches: list[Launch] = field(default_factory=list)
    specs: dict[tuple, Spec] = field(default_factory=dict)
    functions: dict[str, Callable] = field(default_factory=dict)  # qualname -> Python function
    count: int = 0
    current: str | None = None
    dry: bool = False  # record launches without executing them
    # Called with each launch and the tensors passed to it (the bounds guard). The tensors are not kept: every
    # launch of every variant would keep its inputs and outputs alive (on a GPU, gigabytes) until the check ends.
    on_launch: list[Callable[[Launch, list], None]] = field(default_factory=list)
    # Each autotuned kernel seen: qualname -> (its configs, index of the config its last run used).
    autotuners: dict[str, tuple[list, int]] = field(default_factory=dict)
    forced: dict[str, int] = field(default_factory=dict)  # qualname -> config index every launch must use
    user_file: str = ""  # the implementation's file (its real path): each launch records its line there
    _names: dict[str, bool] = field(default_factory=dict)  # co_filename -> whether it is user_file
    _local: threading.local = field(default_factory=threading.local)
    _saved: list[tuple[type, str, Any]] = field(default_factory=list)  # (class, attribute, original) to restore

    def uninstall(self) -> None:
        """Put Triton's entry points back (a long-lived worker runs many jobs; timing must not pay the wrapper)."""
        for cls, attr, original in reversed(self._saved):
            setattr(cls, attr, original)
        self._saved.clear()

    def install(self) -> None:
        import triton.runtime.jit as jit
        self._wrap(jit.JITFunction, "run")
        try:
            import triton.runtime.interpreter as interp
            self._wrap(interp.InterpretedFunction, "run")
        except (ImportError, AttributeError):
            pass  # this Triton has no interpreter entry point: launches under it are not recorded
        try:
            import triton.runtime.autotuner as at
            self._wrap_autotuner(at.Autotuner)
        except (ImportError, AttributeError):
            pass  # autotune configs are not enumerated on this Triton: only the config that runs is compiled

    def _wrap(self, cls: type, attr: str) -> None:
        original = getattr(cls, attr)
        recorder = self

        def run(self_fn, *args, **kwargs):
            if not kwargs.get("warmup", False):
                recorder.record(self_fn.fn, args, kwargs)
                if recorder.dry:
                    return None
            return original(self_fn, *args, **kwargs)

        run.__wrapped__ = original
        self._saved.append((cls, attr, original))
        setattr(cls, attr, run)

    def _wrap_autotuner(self, cls: type) -> None:
        original = cls.run
        recorder = self
        self._saved.append((cls, "run", original))

        def run(self_at, *args, **kwargs):
            configs = list(getattr(self_at, "configs", []) or [])
            recorder._local.configs = configs
            qual = _qualname(getattr(self_at, "base_fn", None) or self_at.fn)
            forced = recorder.forced.get(qual)
            if forced is not None and forced < len(configs) and _allowed(self_at, configs[forced], args, kwargs):
                self_at.configs = [configs[forced]]  # one config: the autotuner runs it without benchmarking
            elif not recorder.dry:
                precompile_configs(self_at, args, kwargs)
            try:
                return original(self_at, *args, **kwargs)
            finally:
                self_at.configs = configs
                recorder._local.configs = []
                best = getattr(self_at, "best_config", None)
                recorder.autotuners[qual] = (configs, next((i for i, c in enumerate(configs) if c is best), 0))

        cls.run = run

    def interpret_autotune_without_benchmarks(self) -> None:
        """Under the interpreter, timing configs is meaningless and slow: pick the first config, run it once."""
        import triton.runtime.autotuner as at

        def _bench(self_at, *args, config, **meta):
            return [float(self_at.configs.index(config))] * 3

        at.Autotuner._bench = _bench

    def record(self, fn: Callable, args: tuple, kwargs: dict) -> None:
        self.count += 1
        qual = _qualname(fn)
        self.functions[qual] = fn
        self.current = qual
        try:
            spec, tensors, bound = build_spec(fn, qual, args, kwargs, with_arguments=True)
        except Exception:
            if self.dry:
                raise  # nothing executes a dry launch, so nothing else would say its arguments are wrong
            return  # a bad launch: Triton itself raises for it next
        launch = Launch(fn, spec, grid_programs(kwargs.get("grid"), bound), self._calling_line())
        self.launches.append(launch)
        self.specs.setdefault(spec.key(), spec)
        for config in getattr(self._local, "configs", []) or []:
            alt = _with_config(spec, config)
            self.specs.setdefault(alt.key(), alt)
        for hook in self.on_launch:
            hook(launch, tensors)


    def _calling_line(self) -> int | None:
        """The 0-based line of the implementation's file that made the launch being recorded: its innermost frame in
        that file (the `kernel[grid](...)` call, or the call of a helper of another file that launched)."""
        import os
        import sys
        if not self.user_file:
            return None
        frame = sys._getframe(2)
        while frame is not None:
            name = frame.f_code.co_filename
            if name not in self._names:
                self._names[name] = os.path.realpath(name) == self.user_file
            if self._names[name]:
                return frame.f_lineno - 1
            frame = frame.f_back
        return None


def precompile_configs(tuner: Any, args: tuple, kwargs: dict) -> None:
    """On a GPU, compile every config's specialization for these arguments at once, on threads (Triton's
    `AsyncCompileMode`), before the autotuner benchmarks the configs one by one and would compile each in turn.
    A config that does not compile is left for the autotuner to meet as it would. Nothing under the interpreter,
    when fewer than two configs are to be benchmarked, or on a Triton without the mode."""
    import os
    if os.environ.get("TRITON_INTERPRET") == "1":
        return
    configs = _to_benchmark(tuner, args, kwargs)
    if len(configs) < 2:
        return  # the autotuner has a config for this key (or prunes to one): it compiles at most that one
    try:
        from concurrent.futures import ThreadPoolExecutor

        from triton.runtime._async_compile import AsyncCompileMode
    except ImportError:
        return
    try:
        with ThreadPoolExecutor(min(8, len(configs), os.cpu_count() or 1)) as pool, \
                AsyncCompileMode(pool, ignore_errors=True):
            for config in configs:
                tuner.fn.run(*args, **{**kwargs, **config.all_kwargs(), "warmup": True})
    except Exception:
        pass  # the autotuner compiles (and reports) whatever is left, one config at a time


def _to_benchmark(tuner: Any, args: tuple, kwargs: dict) -> list:
    """The configs the autotuner is about to benchmark for these arguments: none when its cache has their key (its
    own key: the `key=` arguments and every argument's dtype), else what its pruning keeps."""
    try:
        given = {k: v for k, v in {**dict(zip(tuner.arg_names, args)), **kwargs}.items() if k in tuner.arg_names}
        key = [given[k] for k in tuner.keys if k in given]
        key += [str(v.dtype) for v in given.values() if hasattr(v, "dtype")]
        return [] if tuple(key) in tuner.cache else _pruned(tuner, args, kwargs)
    except Exception:
        return []


def _pruned(tuner: Any, args: tuple, kwargs: dict) -> list:
    """The configs the autotuner's own pruning (early_config_prune, perf_model) keeps for these arguments."""
    tuner.nargs = dict(zip(tuner.arg_names, args))
    return list(tuner.prune_configs(kwargs))


def _qualname(fn: Any) -> str:
    while not hasattr(fn, "__qualname__") and hasattr(fn, "fn"):
        fn = fn.fn  # a JITFunction (or a heuristics wrapper): the Python function inside
    return getattr(fn, "__qualname__", getattr(fn, "__name__", "?")).replace("<locals>.", "")


def _allowed(tuner: Any, config: Any, args: tuple, kwargs: dict) -> bool:
    """The autotuner's own pruning (early_config_prune, perf_model) keeps this config for these arguments: a
    config it would never run is not forced."""
    if getattr(tuner, "early_config_prune", None) is None and getattr(tuner, "perf_model", None) is None:
        return True
    try:
        return config in _pruned(tuner, args, kwargs)
    except Exception:
        return False


def describe_config(config: Any) -> str:
    """`BLOCK=128, num_warps=4`: an autotune config as its author wrote it."""
    parts = [f"{k}={v}" for k, v in (getattr(config, "kwargs", {}) or {}).items()]
    for attr in ("num_warps", "num_stages"):
        if getattr(config, attr, None) is not None:
            parts.append(f"{attr}={getattr(config, attr)}")
    return ", ".join(parts)


def _is_constexpr_annotation(ann: Any) -> bool:
    if ann is inspect.Parameter.empty:
        return False
    text = ann if isinstance(ann, str) else getattr(ann, "__name__", repr(ann))
    return "constexpr" in str(text)


def _type_and_attrs(value: Any) -> tuple[str, list]:
    from triton.runtime.jit import mangle_type
    ty = mangle_type(value)
    if isinstance(value, int) and not isinstance(value, bool):
        try:  # the JIT specializes an integer equal to 1 into a constant; older Tritons lack the flag
            ty = mangle_type(value, specialize=True)
        except TypeError:
            ty = "constexpr" if value == 1 else ty
    attrs: list = []
    try:  # divisibility by 16, as the JIT would specialize it; absent on some versions, then no attrs
        from triton.backends.compiler import BaseBackend
        from triton.runtime.jit import native_specialize_impl
        _, key = native_specialize_impl(BaseBackend, value, False, True, True)
        attrs = BaseBackend.parse_attr(key) if isinstance(key, str) else []
    except Exception:
        attrs = []
    return ty, attrs


def grid_programs(grid: Any, arguments: dict) -> int | None:
    """How many programs a launch runs: the product of its grid (a callable grid is given the launch's arguments by
    name, as the JIT gives them); None where the grid cannot be read."""
    try:
        if callable(grid):
            grid = grid(dict(arguments))
        n = 1
        for g in tuple(grid):
            n *= int(g)
        return n
    except Exception:
        return None


def build_spec(fn: Callable, qualname: str, args: tuple, kwargs: dict, with_arguments: bool = False) -> tuple:
    """The launch's Spec and the tensors passed to it (and, `with_arguments`, every argument by name)."""
    import torch
    sig = inspect.signature(fn)
    params = {k: v for k, v in kwargs.items() if k not in LAUNCH_OPTIONS}
    bound = sig.bind_partial(*args, **params)
    bound.apply_defaults()
    signature, constexprs, attrs, tensors = {}, {}, {}, []
    for name, p in sig.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue  # no kernel parameter (the compiler refuses such a kernel: its compile says so)
        value = bound.arguments.get(name)
        if hasattr(value, "value") and type(value).__name__ == "constexpr":
            value = value.value
        if _is_constexpr_annotation(p.annotation):
            signature[name], constexprs[name] = "constexpr", value
            continue
        if isinstance(value, torch.Tensor):
            tensors.append(value)
        elif isinstance(getattr(value, "base", None), torch.Tensor):  # a TMA descriptor: its tensor's memory
            tensors.append(value.base)
        ty, a = _type_and_attrs(value)
        if ty == "constexpr":
            signature[name], constexprs[name] = "constexpr", value
        else:
            signature[name] = ty
            if a:
                attrs[name] = a
    spec = Spec(qualname, fn.__name__, signature, constexprs, attrs,
                num_warps=int(kwargs.get("num_warps") or 4), num_stages=int(kwargs.get("num_stages") or 3))
    if with_arguments:
        return spec, tensors, {**bound.arguments, **{k: v for k, v in kwargs.items() if k not in bound.arguments}}
    return spec, tensors


def _with_config(spec: Spec, config: Any) -> Spec:
    consts = dict(spec.constexprs)
    consts.update(getattr(config, "kwargs", {}) or {})
    return Spec(spec.qualname, spec.name, dict(spec.signature), consts, dict(spec.attrs),
                num_warps=int(getattr(config, "num_warps", None) or spec.num_warps),
                num_stages=int(getattr(config, "num_stages", None) or spec.num_stages),
                config=str(config))
