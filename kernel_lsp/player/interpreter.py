"""Make Triton's CPU interpreter compute like the compiler where that is cheap. Worker only.

The compiler passes a Python float argument to a kernel as an fp32 scalar (its signature type is `fp32`); the
interpreter (3.x) leaves it a Python float, so arithmetic on it runs in float64. A kernel computing
`1 - beta2` from `beta2 = 0.999` is then off by 1.3e-5 relative on the GPU and exact on the CPU (measured on the
H200 with tasks/Optimizer/adam: a verified kernel failed there), and `scale.to(tl.float16)` raises on the CPU
only. Here float arguments become fp32 scalar tensors, as compiled code sees them; constexpr arguments are left
alone, as the compiler leaves them.
"""

from __future__ import annotations

import contextlib

import sys

_installed = False


def _interpreter_parts(*names: str) -> list | None:
    """Triton's interpreter module, then each attribute named (dotted from the module), or None where this Triton
    lacks one of them (the hooks below are then not installed)."""
    try:
        import triton.runtime.interpreter as interp
        parts: list = [interp]
        for name in names:
            obj = interp
            for attr in name.split("."):
                obj = getattr(obj, attr)
            parts.append(obj)
        return parts
    except (ImportError, AttributeError):
        return None


def faithful_scalars() -> bool:
    """Wrap the interpreter's argument conversion once per process; False where this Triton lacks the hook."""
    global _installed
    found = None if _installed else _interpreter_parts("_implicit_cvt", "TensorHandle")
    if found is None:
        return _installed  # installed already, or this Triton lacks the hook
    interp, original, handle_type = found
    import numpy as np
    import triton.language as tl

    def convert(arg):
        if type(arg) is float:
            return tl.tensor(handle_type(np.array([arg], dtype=np.float32), tl.float32), tl.float32)
        return original(arg)

    interp._implicit_cvt = convert
    _installed = True
    return True


_scoped = False


def scoped_helper_calls() -> bool:
    """Make the interpreter's call of a `@triton.jit` helper undo its patches of `triton.language` when it returns.

    Triton 3.9's interpreter patches `tl`, `tl.core`, `tl.math` and `tl.tensor` with its own semantics for each
    call: a kernel's launch restores them afterwards, but a helper called from a kernel (`tl.sum`, `tl.max`,
    `tl.cdiv` and any user helper are such) patches them again and never restores them. Everything compiled in
    the process afterwards then builds with the interpreter's builder, and `triton.compile` fails on valid code
    ("'value' object has no attribute 'dtype'" at the first `.to(...)`): the compile for the targets runs after
    the interpreter in a worker, so on a fresh Triton cache every kernel that reduced was a false KL100. Restoring
    each helper's own scope on return brings back the state its caller had (the kernel's patches during a launch,
    the real language after it). False where this Triton has no patch scopes (older ones patch for good and do
    not need it, or cannot be helped here)."""
    global _scoped
    if _scoped:
        return True
    try:
        import triton.runtime.interpreter as interp
        cls = interp.InterpretedFunction
        error = interp.InterpreterError
        if not hasattr(interp, "_LangPatchScope") or not hasattr(cls, "rewrite") or \
                not callable(getattr(interp, "_patch_lang", None)):
            return False
    except (ImportError, AttributeError):
        return False

    def __call__(self, *args, **kwargs):  # Triton 3.9's, with the restore added
        scope = interp._patch_lang(self.fn)  # looked up per call: interpreter_gaps wraps it too
        try:
            fn = self.rewrite()
            try:
                return fn(*args, **kwargs)
            except Exception as e:
                raise error(repr(e)) from e
        finally:
            if scope is not None:
                scope.restore()

    cls.__call__ = __call__
    _scoped = True
    return True


class _Ops:
    count = 0
    limit: int | None = None  # the count past which the next operation raises OpBudgetExceeded (op_budget)
    size = 0  # the operations one run of the implementation may take in the budget in force (op_budget's n)
    spent = False


class OpBudgetExceeded(BaseException):
    """The interpreter's operation past an `op_budget`. A BaseException, so that neither the checked code's
    `except Exception` nor the verifier's own handlers take it for the kernel's failure."""


def extend_op_budget() -> None:
    """One more run of the implementation for the budget in force: as many more operations as `op_budget` was
    given (its per-run size); nothing outside one."""
    if _Ops.limit is not None:
        _Ops.limit += _Ops.size


@contextlib.contextmanager
def op_budget(n: int):
    """At most n more interpreter operations inside the block: the next one raises OpBudgetExceeded, and so does
    every one after it, should the checked code swallow the first. n is the budget of one run of the
    implementation: `extend_op_budget()` adds n more for each further run. Yields a callable that tells whether
    the budget ran out (it may have been caught inside)."""
    _Ops.limit, _Ops.size, _Ops.spent = _Ops.count + n, n, False
    try:
        yield lambda: _Ops.spent
    finally:
        _Ops.limit, _Ops.size = None, 0


_counting = False


def count_ops() -> bool:
    """Count the interpreter's operations (every `create_*` call of its builder: a load, an add, a dot), once
    per process. Their number, unlike time, does not depend on the machine or its load: the CPU size planner
    (verify.py) decides by it. False where this Triton lacks the builder."""
    global _counting
    if _counting:
        return True
    try:
        import triton.runtime.interpreter as interp
        builder = interp.interpreter_builder
    except (ImportError, AttributeError):
        return False
    for name in dir(builder):
        if not name.startswith("create_"):
            continue
        original = getattr(builder, name)
        if not callable(original):
            continue

        def counted(*args, _original=original, **kwargs):
            _Ops.count += 1
            if _Ops.limit is not None and _Ops.count > _Ops.limit:
                _Ops.spent = True
                raise OpBudgetExceeded(f"past {_Ops.limit:,} interpreter operations")
            return _original(*args, **kwargs)
        setattr(builder, name, counted)
    _counting = True
    return True


def ops() -> int:
    """Interpreter operations run so far in this process (0 until `count_ops`)."""
    return _Ops.count


# (file, function) of every frame on the stack when the interpreter ran an fp32 x fp32 tl.dot whose precision is
# TF32 (the compiler's default for fp32): the kernel and any helper it called. The GPU runs those in TF32, the
# interpreter exactly: verify.py's KL210 advice names such kernels, and only those (a kernel that loads fp32
# parameters and rounds them to fp16 before its dot is not one).
_tf32_dots: set[tuple[str, str]] = set()
_watching = False


def watch_dots() -> bool:
    """Record where fp32 dots run at TF32 precision (the hook installed once per process; each call, one per job,
    starts a fresh record); False where this Triton lacks the hook."""
    global _watching
    _tf32_dots.clear()
    found = None if _watching else _interpreter_parts("interpreter_builder", "interpreter_builder.create_dot")
    if found is None:
        return _watching  # watching already, or this Triton lacks the hook
    _, builder, original = found

    def create_dot(a, b, d, input_precision, *rest, **kwargs):
        try:
            exact = getattr(input_precision, "name", str(input_precision)).upper() in ("IEEE", "TF32X3")
            if (not exact and str(a.dtype) == "fp32" and str(b.dtype) == "fp32"
                    and not (_tf32_values(a) and _tf32_values(b))):
                frame = sys._getframe(1)
                while frame is not None:
                    _tf32_dots.add((frame.f_code.co_filename, frame.f_code.co_name))
                    frame = frame.f_back
        except Exception:  # never let the bookkeeping break a kernel
            pass
        return original(a, b, d, input_precision, *rest, **kwargs)

    builder.create_dot = create_dot
    _watching = True
    return True


def _tf32_values(handle) -> bool:
    """Every element of the operand is a TF32 value already (its low 13 mantissa bits are zero): a TF32 dot of
    such operands multiplies exactly on a GPU as here, and the interpreter hides nothing (a kernel that splits fp32
    into TF32 parts itself, for fp32 accuracy on tensor cores)."""
    import numpy as np
    data = np.asarray(handle.data)
    return data.dtype == np.float32 and not bool((data.view(np.uint32) & 0x1FFF).any())


def ran_tf32_dot(fn) -> bool | None:
    """Whether an fp32 tl.dot at TF32 precision ran inside `fn` (a kernel's Python function) under the interpreter;
    None when the dots were not watched (then only the source can say)."""
    if not _watching:
        return None
    code = getattr(fn, "__code__", None)
    return code is not None and (code.co_filename, code.co_name) in _tf32_dots
