"""A candidate reduced to its changes inside the implementation, so that the edit offered is one a person can trust.

The implementation of a file is what its kernels need: the top-level definitions of the `@triton.jit` kernels,
the statements that launch them, the entry (`ModelNew`, or the native entry function) and every module-level
definition or assignment these read, transitively, short of the frozen reference (contract.py). A candidate keeps
its version of each of those statements (matched by name), its new ones (placed before the statement that follows
them in the reply) and new imports that they read (after the file's last import); the file's own statements it
dropped are deleted. Everything else stays as the user wrote it, byte for byte: comments and blank lines between
statements, the module docstring, the imports, the reference, code that has nothing to do with the kernels.

Texts here have `\\n` line endings (the proposer normalizes them; edits.restyle restores the file's own).
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass

from ..source.discover import discover_source
from .contract import Contract, bound_names, module_bindings, reads
from .edits import split_lines

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_ASSIGNS = (ast.Assign, ast.AnnAssign, ast.AugAssign)


class Unreducible(ValueError):
    """The candidate's changes to the implementation cannot be separated from its other changes."""


@dataclass
class Reduction:
    text: str
    left_out: int  # lines of the reply that differ from the result: its changes outside the implementation


def _start(stmt: ast.stmt) -> int:
    return min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])


def _key(stmt: ast.stmt) -> tuple | None:
    if isinstance(stmt, _DEFS):
        return ("def", stmt.name)
    if isinstance(stmt, _ASSIGNS):
        return ("assign", tuple(sorted(bound_names(stmt))))
    return None


class _File:
    """One version of the file: its statements, their lines, and which of them are the implementation."""

    def __init__(self, text: str, contract: Contract):
        self.text = text
        self.lines = split_lines(text)
        self.tree = ast.parse(text)
        self.body = self.tree.body
        self.span = [(_start(s), s.end_lineno or s.lineno) for s in self.body]  # 1-based, inclusive
        shared = set()
        for i in range(1, len(self.body)):
            if self.span[i][0] <= self.span[i - 1][1]:
                shared |= {i - 1, i}
        self.shared = shared
        frozen = set(contract.frozen)
        bindings = module_bindings(self.tree)
        found = discover_source(text).kernels
        roots = {k.qualname.split(".")[0] for k in found} | ({contract.entry} if contract.entry else set())
        launch_lines = {s.span.line + 1 for k in found for s in k.launches}
        for i, (a, b) in enumerate(self.span):
            if any(a <= line <= b for line in launch_lines):
                roots |= bound_names(self.body[i])
        # The implementation: the roots and what they read, through definitions and assignments only.
        self.names: set[str] = set()
        todo = [r for r in roots if r not in frozen]
        while todo:
            name = todo.pop()
            if name in self.names or name in frozen:
                continue
            stmts = [s for s in bindings.get(name, []) if _key(s) is not None]
            if not stmts:
                continue
            self.names.add(name)
            for s in stmts:
                todo += [n for n in reads(s) if n not in self.names]
        self.frozen = frozen

    def is_implementation(self, i: int) -> bool:
        stmt = self.body[i]
        names = bound_names(stmt)
        return (_key(stmt) is not None and i not in self.shared and not names & self.frozen
                and bool(names & self.names))

    def stmt_lines(self, i: int) -> list[str]:
        a, b = self.span[i]
        return self.lines[a - 1: b]

    def block_lines(self, i: int) -> list[str]:
        """The statement with the blank lines and comments between it and the statement before it."""
        a = self.span[i - 1][1] if i else 0
        return self.lines[a: self.span[i][1]]


def reduce(contract: Contract, candidate: str) -> Reduction:
    """The user's file with only the candidate's changes inside the implementation; raises Unreducible."""
    user, cand = _File(contract.text, contract), _File(candidate, contract)
    by_key: dict[tuple, list[int]] = {}
    for j, stmt in enumerate(cand.body):
        k = _key(stmt)
        if k is not None:
            by_key.setdefault(k, []).append(j)
    user_keys = {_key(s) for s in user.body}
    edits: list[tuple[int, int, int, list[str]]] = []  # (start, end, order, lines) on the user's lines, 0-based
    paired: dict[int, int] = {}  # candidate statement -> the user's statement it replaces
    for i in range(len(user.body)):
        if not user.is_implementation(i):
            continue
        a, b = user.span[i]
        options = by_key.get(_key(user.body[i]), [])
        if options:
            j = options.pop(0)
            if j in cand.shared:
                raise Unreducible(f"line {cand.span[j][0]} of the reply holds several statements")
            paired[j] = i
            edits.append((a - 1, b, 0, cand.stmt_lines(j)))
        else:  # deleted by the candidate: the statement goes, with the blank lines above it
            while a > 1 and not user.lines[a - 2].strip():
                a -= 1
            edits.append((a - 1, b, 0, []))
    order = 1
    new = [j for j in range(len(cand.body)) if j not in paired and cand.is_implementation(j)
           and _key(cand.body[j]) not in user_keys]
    for j in new:
        if j in cand.shared:
            raise Unreducible(f"line {cand.span[j][0]} of the reply holds several statements")
        after = next((paired[k] for k in range(j + 1, len(cand.body)) if k in paired), None)
        if after is not None:  # before the statement that follows it in the reply
            at = user.span[after - 1][1] if after else 0
            edits.append((at, at, order, cand.block_lines(j)))
        else:
            before = max((paired[k] for k in range(j) if k in paired), default=len(user.body) - 1)
            at = user.span[before][1] if user.body else 0
            edits.append((at, at, order, cand.block_lines(j)))
        order += 1
    edits += _new_imports(user, cand, new + list(paired))
    lines = list(user.lines)
    for a, b, _, new_lines in sorted(edits, key=lambda e: (e[0], e[1], e[2]), reverse=True):
        # Lines put between others end in a newline, and so does the file's last line if it did.
        if new_lines and not new_lines[-1].endswith("\n") and (b < len(lines) or lines[b - 1].endswith("\n")):
            new_lines = new_lines[:-1] + [new_lines[-1] + "\n"]
        if new_lines and a == len(lines) and lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        lines[a:b] = new_lines
    text = "".join(lines)
    try:
        ast.parse(text)
    except SyntaxError as e:
        raise Unreducible(f"its changes to the implementation do not stand without the rest of it (line "
                          f"{e.lineno}: {e.msg})") from None
    if text == candidate:
        return Reduction(text, 0)
    ops = difflib.SequenceMatcher(a=split_lines(text), b=split_lines(candidate), autojunk=False).get_opcodes()
    return Reduction(text, sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in ops if tag != "equal"))


def _new_imports(user: _File, cand: _File, used: list[int]) -> list[tuple[int, int, int, list[str]]]:
    """Imports the candidate adds that its implementation reads, placed after the file's last import. An import
    that would rebind a name the file already binds is left out."""
    bound = set(module_bindings(user.tree))
    needed = set().union(*(reads(cand.body[j]) for j in used)) if used else set()
    imports = [i for i, s in enumerate(user.body) if isinstance(s, (ast.Import, ast.ImportFrom))]
    at = user.span[imports[-1]][1] if imports else 0
    out = []
    for j, stmt in enumerate(cand.body):
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) and j not in cand.shared:
            names = bound_names(stmt)
            if "*" not in names and not names & bound and names & needed:
                out.append((at, at, -len(cand.body) + j, cand.stmt_lines(j)))
    return out

