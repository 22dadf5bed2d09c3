"""From a model's reply to a minimal edit of the user's file, and back to what an editor applies.

A reply is parsed robustly (docs/code-actions.md): aider-style SEARCH/REPLACE blocks, applied only where their
search text still matches exactly once; else the fenced code blocks (or a bare reply that parses as Python): a
block that looks like a whole file replaces the file, a block of functions or classes replaces the same-named
definitions of the file (decorators included) and leaves everything else as it was. A reply that is not code is
a failed candidate with a reason, never an exception.

Edits are computed line by line against the file the candidate was made from (difflib), so imports, comments
and unrelated code stay byte for byte as they were, and an editor applies only the changed hunks. Lines end at
`\r\n`, `\r` or `\n`, as in the Language Server Protocol and Python's tokenizer (not at the form feeds and
separators `str.splitlines` also breaks at). The proposer works on `\n` endings; `restyle` gives an accepted
candidate the file's own endings back, unchanged lines byte for byte.
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass

from ..model import split_lines as lines_of

FENCE_RE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.S | re.I)
SEARCH_REPLACE_RE = re.compile(r"<{5,9} SEARCH\n(.*?)\n={5,9}\n(.*?)\n?>{5,9} REPLACE", re.S)


class ReplyError(ValueError):
    """The reply holds no usable code; the message says why (it goes into the next round's prompt)."""


@dataclass
class Hunk:
    """Replace lines [start, end) of the original (0-based) with `lines`."""

    start: int
    end: int
    lines: list[str]


def split_lines(text: str) -> list[str]:
    """The lines of `text`, each with its line ending (the last one may have none)."""
    return lines_of(text, keepends=True)


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def restyle(original: str, candidate: str) -> str:
    """`candidate`, made from `original` with its line endings normalized to `\n`, with `original`'s line endings:
    its unchanged lines byte for byte, the others ending as most of `original`'s lines do."""
    raw = split_lines(original)
    if "\r" not in original:
        return candidate
    ends = [line[len(line.rstrip("\r\n")):] for line in raw]
    eol = max(("\r\n", "\r", "\n"), key=ends.count)
    new = split_lines(candidate)
    out = []
    matcher = difflib.SequenceMatcher(a=[normalize_newlines(line) for line in raw], b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out += raw[i1:i2]
        else:
            out += [line[:-1] + eol if line.endswith("\n") else line for line in new[j1:j2]]
    return "".join(out)


def candidate_from_reply(original: str, reply: str) -> str:
    """The full candidate text a reply proposes for `original` (both with `\n` line endings); raises ReplyError."""
    reply = normalize_newlines(reply)
    blocks = SEARCH_REPLACE_RE.findall(reply)
    if blocks:
        return apply_search_replace(original, blocks)
    fenced = [b for b in FENCE_RE.findall(reply) if b.strip()]
    if not fenced:
        unfenced = reply.strip()
        if unfenced and _parses(unfenced) and re.search(r"^\s*(def|class|import|from)\s", unfenced, re.M):
            fenced = [unfenced + "\n"]
    if not fenced:
        raise ReplyError("the reply contains no Python code block")
    code = max(fenced, key=len)  # the most complete block (replies sometimes add a usage example)
    try:
        tree = ast.parse(code)
    except SyntaxError as e:
        raise ReplyError(f"the code in the reply does not parse: line {e.lineno}: {e.msg}") from None
    if _looks_like_whole_file(tree, original):
        return code if code.endswith("\n") else code + "\n"
    return splice_definitions(original, code, tree)


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
        return True
    except SyntaxError:
        return False


def _top_names(tree: ast.Module) -> set[str]:
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def _looks_like_whole_file(tree: ast.Module, original: str) -> bool:
    """Imports plus every top-level definition of the original (or most of the original's length)."""
    has_imports = any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in tree.body)
    try:
        theirs = _top_names(ast.parse(original))
    except SyntaxError:
        return has_imports
    return has_imports and theirs <= _top_names(tree) | {"get_inputs", "get_init_inputs", "Model"}


def splice_definitions(original: str, code: str, tree: ast.Module | None = None) -> str:
    """Replace the original's top-level definitions that `code` redefines; definitions new to the file go right
    before the first one replaced (a new helper is then defined before its users)."""
    tree = tree or ast.parse(code)
    try:
        orig_tree = ast.parse(original)
    except SyntaxError as e:
        raise ReplyError(f"the file itself does not parse (line {e.lineno}), so a partial reply cannot be placed")
    new_defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    if not new_defs:
        raise ReplyError("the reply's code defines no function or class to put in place")
    code_lines = split_lines(code)
    lines = split_lines(original)
    spans = {n.name: (_start(n), n.end_lineno) for n in orig_tree.body
             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    replaced = [name for name in new_defs if name in spans]
    if not replaced:
        raise ReplyError(f"the reply defines {', '.join(new_defs)}, none of which is in the file; send the whole file")
    extra = [name for name in new_defs if name not in spans]
    out = list(lines)
    # Bottom-up, so earlier line numbers stay valid.
    for name in sorted(replaced, key=lambda n: spans[n][0], reverse=True):
        node = new_defs[name]
        text = code_lines[_start(node) - 1: node.end_lineno]
        start, end = spans[name]
        out[start - 1: end] = _ensure_newline(text)
    if extra:
        # Every replaced definition starts at or after `first`, so the lines before it have not moved.
        first = min(spans[n][0] for n in replaced)
        helpers: list[str] = []
        for name in extra:
            node = new_defs[name]
            helpers += _ensure_newline(code_lines[_start(node) - 1: node.end_lineno]) + ["\n", "\n"]
        out[first - 1: first - 1] = helpers
    text = "".join(out)
    if not _parses(text):
        raise ReplyError("the reply's definitions do not fit into the file (the result does not parse)")
    return text


def _start(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno] + [d.lineno for d in decorators])


def _ensure_newline(lines: list[str]) -> list[str]:
    if lines and not lines[-1].endswith("\n"):
        lines = lines[:-1] + [lines[-1] + "\n"]
    return lines


def apply_search_replace(original: str, blocks: list[tuple[str, str]]) -> str:
    text = original
    for search, replace in blocks:
        count = text.count(search)
        if count != 1:
            where = "does not occur" if count == 0 else f"occurs {count} times"
            raise ReplyError(f"a SEARCH block {where} in the file: {search.strip().splitlines()[0][:80]!r}")
        text = text.replace(search, replace, 1)
    if not _parses(text):
        raise ReplyError("after the SEARCH/REPLACE edits the file does not parse")
    return text


def hunks(original: str, candidate: str) -> list[Hunk]:
    """The changed line ranges, smallest first-to-last set that turns `original` into `candidate`."""
    a, b = split_lines(original), split_lines(candidate)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag != "equal":
            out.append(Hunk(i1, i2, b[j1:j2]))
    return out


def unified_diff(original: str, candidate: str, path: str) -> str:
    return "".join(difflib.unified_diff(split_lines(original), split_lines(candidate), fromfile=f"a/{path}",
                                        tofile=f"b/{path}"))


def apply_hunks(original: str, changes: list[Hunk]) -> str:
    lines = split_lines(original)
    for h in sorted(changes, key=lambda h: h.start, reverse=True):
        lines[h.start: h.end] = h.lines
    return "".join(lines)
