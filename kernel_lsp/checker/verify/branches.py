"""Branches of a kernel that no launch took: an `if` on the kernel's constexpr parameters (`if FAST:`, `if BLOCK_N
> 64:`, `if HAS_BIAS and EVEN:`) is decided when the kernel is specialized, so the specializations the variants
launched say which side of it ran. A side that none of them took is code the verification never ran: a path the
launcher picks only for sizes, dtypes or flags no variant gave (reported as information, KL104). Pure: the kernel's
text and the constexpr values of its launches."""

from __future__ import annotations

import ast
import operator
from dataclasses import dataclass

_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not}


class _Unknown(Exception):
    """The condition reads something other than constexprs and literals."""


@dataclass
class Untaken:
    line: int  # 1-based, in the text given: the first line of the side no launch took
    condition: str  # the `if`'s test, as written
    side: str  # "true" or "false": which side never ran
    seen: str  # the values every launch had, e.g. "FAST=False"


def _value(node: ast.AST, env: dict):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise _Unknown(node.id)
        return env[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not _value(node.operand, env)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_value(node.operand, env)
    if isinstance(node, ast.BoolOp):
        values = [_value(v, env) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare):
        left = _value(node.left, env)
        for op, right_node in zip(node.ops, node.comparators):
            right = _value(right_node, env)
            fn = _COMPARE.get(type(op))
            if fn is None or not fn(left, right):
                return False if fn is not None else _raise(op)
            left = right
        return True
    raise _Unknown(type(node).__name__)


def _raise(op):
    raise _Unknown(type(op).__name__)


def _names(node: ast.AST) -> list[str]:
    return sorted({n.id for n in ast.walk(node) if isinstance(n, ast.Name)})


def untaken(source: str, kernel: str, launches: list[dict]) -> list[Untaken]:
    """Each side of an `if` on constexprs in the kernel `kernel` (a function of that name in `source`) that none of
    `launches` (each launch's constexpr values by name) took. Nothing when the kernel is not found, or when an `if`
    reads anything but constexprs and literals (a loop variable, a runtime value: decided per program, not here)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == kernel), None)
    if fn is None or not launches:
        return []
    out: list[Untaken] = []
    _visit(fn.body, launches, out)
    return sorted(out, key=lambda u: u.line)


def _visit(body: list, launches: list[dict], out: list[Untaken]) -> None:
    """The `if`s of these statements and of the sides some launch took (a side none took is reported once, not the
    `if`s inside it)."""
    for node in body:
        if not isinstance(node, ast.If):
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(node, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    _visit(inner, launches, out)
            continue
        names = _names(node.test)
        taken = None
        if names and all(all(n in env for n in names) for env in launches):
            try:
                taken = {bool(_value(node.test, env)) for env in launches}
            except (_Unknown, TypeError):
                taken = None
        if taken is None or len(taken) == 2:
            _visit(node.body, launches, out)
            _visit(node.orelse, launches, out)
            continue
        seen = ", ".join(sorted({", ".join(f"{n}={env[n]!r}" for n in names) for env in launches}))
        if True not in taken:
            out.append(Untaken(node.body[0].lineno, ast.unparse(node.test), "true", seen))
            _visit(node.orelse, launches, out)
        else:
            if node.orelse:
                out.append(Untaken(node.orelse[0].lineno, ast.unparse(node.test), "false", seen))
            _visit(node.body, launches, out)
