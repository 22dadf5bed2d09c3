"""Find Triton kernels and their launch sites in a Python file by AST, without importing it.

A kernel is a function whose decorators include `triton.jit` (or a bare `jit` imported from triton), alone
or under `triton.autotune(...)` / `triton.heuristics(...)`, at any nesting depth (module, class, function).
A launch site is a call of a subscripted kernel name: `kernel[grid](...)`, `self.kernel[grid](...)`.
"""

from __future__ import annotations

import ast
import threading
from dataclasses import dataclass

from ..model import KernelInfo, LaunchSite, Span

_JIT_NAMES = {"jit"}
_WRAPPER_NAMES = {"autotune", "heuristics"}


@dataclass
class Discovery:
    kernels: list[KernelInfo]
    syntax_error: SyntaxError | None = None


def dotted_name(node: ast.AST) -> str:
    """`triton.language.load` -> "triton.language.load"; "" for what is not a chain of names."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _decorator_name(node: ast.expr) -> str:
    """`triton.jit` -> "triton.jit"; `triton.autotune(...)` -> "triton.autotune"."""
    return dotted_name(node.func if isinstance(node, ast.Call) else node)


def _triton_aliases(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Names bound to the triton module, and bare names bound to triton.jit (from triton import jit as j)."""
    modules, jits = {"triton"}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "triton":
                    modules.add(a.asname or "triton")
        elif isinstance(node, ast.ImportFrom) and node.module == "triton":
            for a in node.names:
                if a.name in _JIT_NAMES:
                    jits.add(a.asname or a.name)
    return modules, jits


def _is_jit(name: str, modules: set[str], jits: set[str]) -> bool:
    head, _, tail = name.rpartition(".")
    return (head in modules and tail in _JIT_NAMES) or (not head and name in jits)


_COMBINING = {"reduce", "associative_scan"}  # tl functions whose third argument is a jit combine function


def _name_of(func: ast.expr) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


class _Visitor(ast.NodeVisitor):
    def __init__(self, modules: set[str], jits: set[str]):
        self.modules, self.jits = modules, jits
        self.scope: list[str] = []
        self.kernels: list[KernelInfo] = []
        self.calls: list[tuple[str, ast.Call]] = []
        self.plain_calls: list[tuple[str, int]] = []

    def _visit_scope(self, node):
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    def visit_ClassDef(self, node: ast.ClassDef):
        self._visit_scope(node)

    def visit_FunctionDef(self, node):
        names = [_decorator_name(d) for d in node.decorator_list]
        if any(_is_jit(n, self.modules, self.jits) for n in names):
            qual = ".".join([*self.scope, node.name])
            # ast gives the def's column; the name starts after "def " (or "async def ").
            name_col = node.col_offset + 4
            self.kernels.append(KernelInfo(
                name=node.name,
                qualname=qual,
                def_span=Span(node.lineno - 1, node.col_offset, node.lineno - 1, node.col_offset + 3),
                name_span=Span(node.lineno - 1, name_col, node.lineno - 1, name_col + len(node.name)),
                end_line=(node.end_lineno or node.lineno) - 1,
                decorators=names,
            ))
        self._visit_scope(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call):
        # The called name, and the combine function handed to `tl.reduce` / `tl.associative_scan` (third argument
        # or `combine_fn=`), which runs inside the caller just as a called helper does. No other argument: a name
        # passed anywhere else (`tl.static_print("x", kernel)`) says nothing about how that function runs.
        refs = [node.func]
        if isinstance(node.func, (ast.Name, ast.Attribute)) and _name_of(node.func) in _COMBINING:
            refs += node.args[2:3] + [kw.value for kw in node.keywords if kw.arg == "combine_fn"]
        for ref in refs:
            if isinstance(ref, ast.Name):
                self.plain_calls.append((ref.id, node.lineno - 1))
            elif isinstance(ref, ast.Attribute):
                self.plain_calls.append((ref.attr, node.lineno - 1))
        func = node.func
        if isinstance(func, ast.Subscript):
            name = _name_of(func.value)
            if name:
                self.calls.append((name, node))
        self.generic_visit(node)


# CPython 3.11's parser is not safe to call from several threads at once: "SystemError: AST constructor recursion
# depth mismatch" (a Ray test's thread pool, 2026-12-02). Every parse of the parent side goes through this lock.
PARSE_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    with PARSE_LOCK:
        return ast.parse(source, filename=filename)


def discover_source(source: str, filename: str = "<unknown>") -> Discovery:
    try:
        tree = parse(source, filename)
    except SyntaxError as e:
        return Discovery([], e)
    except ValueError as e:  # source with NUL bytes
        err = SyntaxError(str(e))
        err.lineno, err.offset = 1, 1
        return Discovery([], err)
    if not any(name in source for name in _JIT_NAMES):
        # No kernel without a jit decorator, and none without the word: a 10 MB file of plain Python spent a minute
        # in the two walks below (its syntax errors were found by the parse above).
        return Discovery([])
    modules, jits = _triton_aliases(tree)
    v = _Visitor(modules, jits)
    v.visit(tree)
    by_name = {}
    for k in v.kernels:
        by_name.setdefault(k.name, []).append(k)
    for name, call in v.calls:
        for k in by_name.get(name, []):
            k.launches.append(LaunchSite(name, Span(call.lineno - 1, call.col_offset, (call.end_lineno or call.lineno) - 1,
                                                    call.end_col_offset or call.col_offset + 1)))
    # A jit function called from another kernel's body (or handed to tl.reduce / tl.associative_scan there) is a
    # device helper, which is never launched itself. One launched from Python is a kernel whatever else calls it:
    # a helper is left out of the verdict and of KL104, so a launched kernel named in a dead branch of another
    # must not become one.
    for name, line in v.plain_calls:
        for caller in v.kernels:
            if caller.def_span.line <= line <= caller.end_line:
                for k in by_name.get(name, []):
                    if k is not caller and not k.launches:
                        k.is_helper = True
    return Discovery(v.kernels)


def has_triton_kernels(source: str) -> bool:
    """Cheap pre-filter for directory walks: a file must mention triton before it is parsed."""
    return "triton" in source and bool(discover_source(source).kernels)
