"""Map Triton's compile errors to positions in the user's file, with a readable message.

Triton reports an error's position relative to the kernel's `def` line (line 1) in the dedented source. A
kernel that calls a helper gets a chain of errors: the outer one points at the call, the inner one
(`__cause__`) into the helper. We report at the innermost position that lies in the user's file, with the
innermost message, so the squiggle lands on the expression that is actually wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...jobs import KernelRef

_REPR_RE = re.compile(r"^(?P<cls>[A-Za-z_][\w.]*)\((?P<q>['\"])(?P<msg>.*)(?P=q)\)$", re.S)
_DEF_RE = re.compile(r"^\s*def\s+(\w+)", re.M)


@dataclass
class Position:
    line: int  # 0-based, in the user's file
    col: int
    end_col: int
    message: str


def readable(message: str) -> str:
    """`NameError('x is not defined')` -> `NameError: x is not defined`; drops Triton's source excerpt."""
    message = (message or "").strip()
    m = _REPR_RE.match(message)
    if m:
        msg = m["msg"].encode().decode("unicode_escape", errors="replace") if "\\n" in m["msg"] else m["msg"]
        return f"{m['cls']}: {msg}".strip()
    return message


_NO_TL_ATTR = re.compile(r"module 'triton\.language(?P<sub>[\w.]*)' has no attribute '(?P<name>\w+)'")


def api_note(message: str) -> str:
    """The message, with the missing or removed Triton API named beside the installed version."""
    try:
        import triton
        version = triton.__version__
    except Exception:  # kernel-lsp's parent side has no Triton: say so without a version
        version = "?"
    m = _NO_TL_ATTR.search(message)
    if m:
        name = f"tl{m['sub']}.{m['name']}"
        return f"{message} ({name} does not exist in the installed Triton {version})"
    if "Block pointers have been removed" in message:
        return (f"{message} (tl.make_block_ptr and tl.advance were removed in the installed Triton {version}; "
                "tl.make_tensor_descriptor replaces them)")
    return message


def _chain(exc: BaseException) -> list[BaseException]:
    out, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


def _kernel_for(src: str, kernels: list[KernelRef]) -> KernelRef | None:
    """The kernel whose `def` the error's source excerpt starts with (the first of that name)."""
    m = _DEF_RE.search(src or "")
    if not m:
        return None
    return next((k for k in kernels if k.name == m.group(1)), None)


def _message_of(exc: BaseException) -> str:
    msg = getattr(exc, "error_message", None)
    if msg:
        return readable(msg)
    text = str(exc).strip()
    if not text:
        return type(exc).__name__
    last = [ln for ln in text.splitlines() if ln.strip()]
    return readable(last[-1]) if last else type(exc).__name__


def map_compile_error(exc: BaseException, kernel: KernelRef, kernels: list[KernelRef]) -> Position:
    """Position and message for a compile failure of `kernel` (discovery facts incl. def line and col)."""
    chain = _chain(exc)
    message = next((readable(e.error_message) for e in chain if getattr(e, "error_message", None)), None)
    if message is None:
        message = _message_of(chain[-1])
    best = None
    for e in chain:
        node = getattr(e, "node", None)
        src = getattr(e, "src", None)
        if node is None or getattr(node, "lineno", None) is None:
            continue
        owner = _kernel_for(src, kernels) if src else kernel
        if owner is None:
            continue
        line = owner.def_line + node.lineno - 1
        col = owner.def_col + (node.col_offset or 0)
        end_col = col + 1
        if getattr(node, "end_lineno", None) == node.lineno and getattr(node, "end_col_offset", None) is not None:
            end_col = owner.def_col + node.end_col_offset
        best = Position(line, col, end_col, message)  # later in the chain = deeper = better
    if best is None:
        best = Position(kernel.def_line, kernel.def_col, kernel.def_col + 3, message)
    best.message = api_note(best.message)
    return best
