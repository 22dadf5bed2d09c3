"""Make Triton's CPU interpreter compute like the compiler where that is cheap. Worker only.

The compiler passes a Python float argument to a kernel as an fp32 scalar (its signature type is `fp32`); the
interpreter (3.x) leaves it a Python float, so arithmetic on it runs in float64. A kernel computing
`1 - beta2` from `beta2 = 0.999` is then off by 1.3e-5 relative on the GPU and exact on the CPU (measured on the
H200 with tasks/Optimizer/adam: a verified kernel failed there), and `scale.to(tl.float16)` raises on the CPU
only. Here float arguments become fp32 scalar tensors, as compiled code sees them; constexpr arguments are left
alone, as the compiler leaves them.
"""

from __future__ import annotations

_installed = False


def faithful_scalars() -> bool:
    """Wrap the interpreter's argument conversion once per process; False where this Triton lacks the hook."""
    global _installed
    if _installed:
        return True
    try:
        import numpy as np
        import triton.language as tl
        import triton.runtime.interpreter as interp
        original = interp._implicit_cvt
        handle_type = interp.TensorHandle
    except (ImportError, AttributeError):
        return False

    def convert(arg):
        if type(arg) is float:
            return tl.tensor(handle_type(np.array([arg], dtype=np.float32), tl.float32), tl.float32)
        return original(arg)

    interp._implicit_cvt = convert
    _installed = True
    return True


class _Ops:
    count = 0


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
            return _original(*args, **kwargs)
        setattr(builder, name, counted)
    _counting = True
    return True


def ops() -> int:
    """Interpreter operations run so far in this process (0 until `count_ops`)."""
    return _Ops.count
