"""Compile captured specializations for GPU targets with `triton.compile`; no GPU needed.

Runs in the player, beside the kernels it compiles (they are the implementation's functions). For each (spec,
target): the resources, registers and local-memory (spill) bytes per thread from the cubin (read with the cuobjdump
in Triton's wheel) and shared memory from the compiled metadata, or the compile error as plain data (its chain of
messages and kernel-relative positions). The checker maps errors to the file and judges resources against the
target's limits (checker/compile/stage.py). Imports nothing of kernel_lsp.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Any


_RESOURCE_RE = re.compile(r"Function (?P<name>\S+):\s*\n\s*REG:(?P<reg>\d+) STACK:(?P<stack>\d+) SHARED:(?P<shared>\d+) "
                          r"LOCAL:(?P<local>\d+)")


@dataclass
class CompileResult:
    target: str  # the target's name ("sm_90")
    spec: Any  # capture.Spec
    ok: bool
    shared: int = 0
    registers: int | None = None
    local_bytes: int | None = None  # per thread: spills and local arrays
    stack_bytes: int | None = None
    seconds: float = 0.0
    error: BaseException | None = None


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


def gpu_target(target):
    """Triton's GPUTarget for a target given as (name, backend, arch, warp size) or an object with those fields."""
    from triton.backends.compiler import GPUTarget
    if isinstance(target, (tuple, list)):
        return GPUTarget(target[1], target[2], target[3])
    return GPUTarget(target.backend, target.arch, target.warp_size)


def target_name(target) -> str:
    return target[0] if isinstance(target, (tuple, list)) else target.name


def ast_source(jit_fn: Any, spec):
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


def compile_spec(jit_fn: Any, spec, target) -> CompileResult:
    import time

    import triton

    start = time.monotonic()
    try:
        src = ast_source(jit_fn, spec)
        options = {"num_warps": spec.num_warps, "num_stages": spec.num_stages}
        kernel = triton.compile(src, target=gpu_target(target), options=options)
    except Exception as e:  # a compile failure is a finding, reported by the caller with its position
        return CompileResult(target_name(target), spec, False, error=e, seconds=time.monotonic() - start)
    result = CompileResult(target_name(target), spec, True, shared=int(getattr(kernel.metadata, "shared", 0) or 0),
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


@contextlib.contextmanager
def compile_mode(functions: list[Any]):
    """Make user functions compilable while the process runs under the interpreter.

    Under TRITON_INTERPRET=1 every `@triton.jit` function, Triton's own library (`tl.max`, `tl.sum`, ...)
    included, is an InterpretedFunction, which the code generator does not know. For the duration of the
    compile stage they are swapped for JITFunctions, in Triton's language modules and in the user's globals
    (followed through helpers), then restored for verification.
    """
    import sys as _sys

    import triton
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:
        InterpretedFunction = None
    swapped: list[tuple[dict, str, Any]] = []
    seen: set[int] = set()
    made: dict[int, Any] = {}

    def jit_of(value):
        if id(value) not in made:
            made[id(value)] = jit_function_for(value.fn, getattr(value, "kwargs", {}))
        return made[id(value)]

    def visit(namespace: dict | None):
        if namespace is None or id(namespace) in seen or InterpretedFunction is None:
            return
        seen.add(id(namespace))
        for name, value in list(namespace.items()):
            if isinstance(value, InterpretedFunction):
                try:
                    jit = jit_of(value)
                except Exception:
                    continue  # not a valid @triton.jit function (**kwargs): its own compile reports why (KL100)
                swapped.append((namespace, name, value))
                namespace[name] = jit
                visit(getattr(value.fn, "__globals__", None))

    for mod_name, mod in list(_sys.modules.items()):
        if mod_name.startswith("triton.language") and mod is not None:
            visit(getattr(mod, "__dict__", None))
    for fn in functions:
        visit(getattr(fn, "__globals__", None))
    previous = triton.knobs.runtime.interpret
    triton.knobs.runtime.interpret = False
    try:
        yield lambda fn: made.get(id(fn)) or jit_function_for(fn)
    finally:
        triton.knobs.runtime.interpret = previous
        for namespace, name, value in reversed(swapped):
            namespace[name] = value


def error_chain(exc: BaseException, limit: int = 8) -> list[dict]:
    """A compile error as plain data, outermost first: each link's type, message, Triton's own `error_message`,
    the source excerpt's first line (which kernel's `def` it starts with) and the kernel-relative node position."""
    out, seen = [], set()
    while exc is not None and id(exc) not in seen and len(out) < limit:
        seen.add(id(exc))
        node = getattr(exc, "node", None)
        src = getattr(exc, "src", None)
        out.append({
            "type": type(exc).__name__, "text": str(exc)[:4000],
            "error_message": str(getattr(exc, "error_message", "") or "")[:4000] or None,
            "src": src[:2000] if isinstance(src, str) else None,
            "node": None if node is None or getattr(node, "lineno", None) is None else
            [node.lineno, getattr(node, "col_offset", 0) or 0, getattr(node, "end_lineno", None),
             getattr(node, "end_col_offset", None)],
        })
        exc = exc.__cause__ or exc.__context__
    return out
