"""Compile captured specializations for GPU targets with `triton.compile`; no GPU needed.

Runs in a worker. For each (spec, target): the compile error mapped to the kernel file's line and column, or
the resources: registers and local-memory (spill) bytes per thread from the cubin (read with the cuobjdump in
Triton's wheel), and shared memory from the compiled metadata, judged against the target's limits.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Any

from ...model import CompileFacts
from ...targets import Target
from .capture import Spec

_RESOURCE_RE = re.compile(r"Function (?P<name>\S+):\s*\n\s*REG:(?P<reg>\d+) STACK:(?P<stack>\d+) SHARED:(?P<shared>\d+) "
                          r"LOCAL:(?P<local>\d+)")


@dataclass
class CompileResult:
    target: str
    spec: Spec
    ok: bool
    shared: int = 0
    registers: int | None = None
    local_bytes: int | None = None  # per thread: spills and local arrays
    stack_bytes: int | None = None
    seconds: float = 0.0
    error: BaseException | None = None

    def facts(self) -> CompileFacts:
        return CompileFacts(self.target, self.spec.describe(), self.ok, self.shared, self.registers, self.local_bytes,
                            self.stack_bytes, self.spec.num_warps, round(self.seconds, 3))


def cuobjdump_path() -> str | None:
    try:
        import triton
        candidate = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
        if os.access(candidate, os.X_OK):
            return candidate
    except ImportError:
        pass
    return shutil.which("cuobjdump")


def cubin_resources(cubin: bytes) -> dict[str, dict[str, int]]:
    """Per function: REG, STACK, SHARED and LOCAL as `cuobjdump --dump-resource-usage` prints them."""
    tool = cuobjdump_path()
    if tool is None:
        return {}
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        try:
            out = subprocess.run([tool, "--dump-resource-usage", f.name], capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.TimeoutExpired):
            return {}
    return {m["name"]: {k: int(m[k]) for k in ("reg", "stack", "shared", "local")} for m in _RESOURCE_RE.finditer(out)}


def gpu_target(target: Target):
    from triton.backends.compiler import GPUTarget
    return GPUTarget(target.backend, target.arch, target.warp_size)


def ast_source(jit_fn: Any, spec: Spec):
    """The `ASTSource` a launch with this spec compiles, with exactly the JIT's own attributes, so that Triton's
    on-disk cache key is the one a launch computes (on a GPU the compile stage then reuses the launch's compile
    instead of repeating it: seconds per config for a kernel with `tl.dot`). Every non-constexpr parameter gets
    its attributes, [] where nothing is known; a constexpr gets them as the installed JIT gives them
    (`_constexpr_attrs`)."""
    from triton.compiler import ASTSource
    signature = dict(spec.signature)
    attrs = {}
    for i, name in enumerate(signature):
        if signature[name] != "constexpr":
            attrs[(i,)] = spec.attrs.get(name, [])
        else:
            a = _constexpr_attrs(spec.constexprs.get(name))
            if a is not None:
                attrs[(i,)] = a
    return ASTSource(fn=jit_fn, signature=signature, constexprs=dict(spec.constexprs), attrs=attrs)


def _constexpr_attrs(value: Any) -> list | None:
    """A constexpr parameter's entry in the JIT's attributes, None for none. Triton 3.9 gives every constexpr an
    empty list; 3.6 builds attributes from each argument's specialization key, which for a constexpr is its value,
    so only a string value gets an entry (parsed like a key: "D" would read as divisible by 16)."""
    if _constexprs_listed():
        return []
    if isinstance(value, str):
        from triton.backends.compiler import BaseBackend
        return BaseBackend.parse_attr(value)
    return None


@functools.lru_cache(maxsize=None)
def _constexprs_listed() -> bool:
    """Whether the installed JIT lists every constexpr in its attributes: asked of its own `_pack_args` with one
    constexpr parameter (a Triton without that method is of the older kind)."""
    try:
        from triton.backends.compiler import GPUTarget
        from triton.compiler import make_backend
        from triton.runtime.jit import JITFunction
        probe = JITFunction(_attrs_probe)
        packed = probe._pack_args(make_backend(GPUTarget("cuda", 90, 32)), {}, {"n": 2}, [("constexpr", 2)], None)
        return (0,) in packed[3]
    except Exception:
        return False


def _attrs_probe(n):
    pass


def compile_spec(jit_fn: Any, spec: Spec, target: Target) -> CompileResult:
    import time

    import triton

    start = time.monotonic()
    try:
        src = ast_source(jit_fn, spec)
        options = {"num_warps": spec.num_warps, "num_stages": spec.num_stages}
        kernel = triton.compile(src, target=gpu_target(target), options=options)
    except Exception as e:  # a compile failure is a finding, reported by the caller with its position
        return CompileResult(target.name, spec, False, error=e, seconds=time.monotonic() - start)
    result = CompileResult(target.name, spec, True, shared=int(getattr(kernel.metadata, "shared", 0) or 0),
                           seconds=time.monotonic() - start)
    cubin = kernel.asm.get("cubin") if hasattr(kernel, "asm") else None
    if cubin:
        res = cubin_resources(cubin)
        entry = res.get(kernel.metadata.name) or (next(iter(res.values())) if res else None)
        if entry:
            result.registers, result.local_bytes, result.stack_bytes = entry["reg"], entry["local"], entry["stack"]
    return result


def jit_function_for(fn: Any, options: dict | None = None):
    """A compilable `JITFunction` for a Python function, also when the module was imported interpreted."""
    from triton.runtime.jit import JITFunction
    if isinstance(fn, JITFunction):
        return fn
    return JITFunction(fn, **(options or {}))
