"""The frozen contract of a proposal: what a candidate may not change, taken from the user's file before round 1.

A candidate may change the implementation: the kernels, what launches them, `ModelNew` (or the native entry) and
the module-level names only they read. It may not change:
- the link: every `# kernel-lsp:` line, link and `ignore[...]` pragmas alike (ignores only ever come from the
  user), and the link itself, resolved once from the user's file (pragma, `--reference`, pyproject mapping) and
  pinned for every check of the request (check.CheckRequest.link);
- the reference: the texts of the reference and input files, read once here and run by the workers instead of
  the files on disk (jobs.LinkSpec.reference_text), and in the file the reference's definitions (`Model`,
  `get_inputs`, `get_init_inputs`, or the native form's reference and input factory) with every module-level name
  they read, transitively, and no assignment to them from the implementation (`Model.forward = ...`);
- that it is a Triton implementation: it keeps one of the file's kernels, launches a kernel, keeps the entry.
`refusals(candidate)` names what a candidate touches, in words for the user and the next prompt; a candidate with
any is never run. A candidate larger than GROWTH_RATIO times the file plus GROWTH_SLACK characters is refused too.

Files a candidate's code could create do not matter here: the link and the reference texts were fixed before any
candidate existed. Modules the reference file itself imports are read from disk by the worker.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..check import decode_source
from ..source.discover import discover_source
from ..source.link import IGNORE_RE, KERNELBENCH_NAMES, Link, link_file, parse_pragmas

# What the worker reads from the reference's module besides its definitions (docs/verification.md): a candidate
# that added them to a file holding its own reference would change how it is judged.
REFERENCE_HOOKS = ("KERNEL_LSP_RANDOM", "kernel_lsp_check_sample")
GROWTH_RATIO = 2.0  # a candidate may be at most this many times the file's size ...
GROWTH_SLACK = 8192  # ... plus this many characters
PRAGMA_TEXT_RE = re.compile(r"#\s*kernel-lsp:.*$")


@dataclass
class Contract:
    text: str  # the user's file, line endings normalized
    link: Link | None  # the user's link, pinned for every check
    pinned: dict[str, str] = field(default_factory=dict)  # reference files other than this one: path -> text
    reference_names: set[str] = field(default_factory=set)  # the in-file reference's own definitions
    frozen: dict[str, list[str]] = field(default_factory=dict)  # name -> its module-level bindings, described
    aliases: set[str] = field(default_factory=set)  # names bound to the reference module (`import problem`)
    kernels: set[str] = field(default_factory=set)
    entry: str | None = None
    problem: str | None = None  # why no candidate can be judged (the file does not parse)

    @property
    def reference_text(self) -> str | None:
        """The reference file as frozen, for the prompt; None when the reference is in the file itself."""
        return self.pinned.get(str(self.link.reference)) if self.link is not None else None

    def refusals(self, candidate: str) -> list[str]:
        """What the candidate changes that it may not, as short phrases; empty when it keeps the contract."""
        limit = int(GROWTH_RATIO * len(self.text)) + GROWTH_SLACK
        if len(candidate) > limit:
            return [f"grows the file from {len(self.text)} to {len(candidate)} characters (a candidate may have at "
                    f"most {GROWTH_RATIO:g} times the file's characters plus {GROWTH_SLACK})"]
        if self.problem:
            return [self.problem]
        try:
            tree = ast.parse(candidate)
        except (SyntaxError, ValueError) as e:
            return [f"does not parse: {e}"]
        out = pragma_changes(self.text, candidate)
        bindings = module_bindings(tree)
        for name, before in self.frozen.items():
            after = [describe(s, name) for s in bindings.get(name, [])]
            if after == before:
                continue
            verb = ("adds" if not before else "deletes" if not after else "rebinds" if len(after) > len(before)
                    else "changes")
            role = "part of the reference" if name in self.reference_names else "which the reference reads"
            out.append(f"{verb} {name}, {role}")
        guarded = {name for name, before in self.frozen.items() if before} | self.aliases
        out += sorted(writes_to(tree, guarded) - writes_to(ast.parse(self.text), guarded))
        out += self._implementation_kept(candidate, bindings)
        return out

    def _implementation_kept(self, candidate: str, bindings: dict[str, list[ast.stmt]]) -> list[str]:
        found = discover_source(candidate).kernels
        out = []
        if self.kernels and not self.kernels & {k.name for k in found}:
            what = "the Triton kernel" if len(self.kernels) == 1 else "every Triton kernel of the file:"
            out.append(f"deletes {what} {', '.join(sorted(self.kernels))}"
                       + (" (renamed or not, a candidate keeps one of the file's kernels)" if found else ""))
        elif self.kernels and not any(k.launches for k in found):
            out.append("launches no Triton kernel")
        if self.entry and self.entry not in bindings:
            out.append(f"deletes {self.entry}, the entry the reference is compared with")
        return out


def freeze(path: Path, text: str, link: Link | None) -> Contract:
    """The contract of `text` (the user's file at `path`, line endings normalized) linked by `link`; reads the
    reference files now, once."""
    contract = Contract(text, link)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as e:
        contract.problem = f"cannot be judged: the file itself does not parse ({e})"
        return contract
    contract.kernels = {k.name for k in discover_source(text).kernels}
    if link is None:
        return contract
    here = path.resolve()
    contract.entry = link.entry
    roots: set[str] = set()
    for file, names in ((link.reference, [link.reference_name] if link.kind == "native" else KERNELBENCH_NAMES),
                        (link.inputs_path, [link.inputs_name])):
        if file is None:
            continue
        if Path(file).resolve() == here:
            roots |= set(names) | (set(REFERENCE_HOOKS) if file == link.reference else set())
        elif str(file) not in contract.pinned:
            try:
                contract.pinned[str(file)] = decode_source(Path(file).read_bytes())
            except (OSError, UnicodeDecodeError, SyntaxError):
                pass  # linking found it readable a moment ago; the worker reports what it then cannot read
    bindings = module_bindings(tree)
    contract.reference_names = roots
    frozen = closure(roots & bindings.keys(), bindings, unbound=True) | roots
    contract.frozen = {name: [describe(s, name) for s in bindings.get(name, [])] for name in frozen}
    if link.reference.resolve() != here:
        contract.aliases = module_aliases(tree, link.reference.stem)
    return contract


def freeze_file(path: Path, text: str, cli_reference: Path | None, root: Path | None,
                mapping: dict[str, str] | None) -> Contract:
    """Link `text` as `kernel-lsp check` would, and freeze the contract of that link."""
    return freeze(path, text, link_file(path, text, cli_reference=cli_reference, root=root, mapping=mapping).link)


# Pragmas -------------------------------------------------------------------------------------------------------


def _pragma_lines(text: str) -> list[tuple[int, str, str]]:
    """(1-based line, the whole line stripped, the pragma comment) of every line that holds `# kernel-lsp:`."""
    out = []
    for i, line in enumerate(text.split("\n")):
        m = PRAGMA_TEXT_RE.search(line)
        if m:
            out.append((i + 1, line.strip(), m.group(0).strip()))
    return out


def _kind(pragma: str) -> str:
    if IGNORE_RE.search(pragma):
        return "ignore pragma"
    kv = next((kv for _, kv in parse_pragmas(pragma)), {})
    return "link pragma" if "reference" in kv or "entry" in kv else "kernel-lsp pragma"


def pragma_changes(before: str, after: str) -> list[str]:
    """Every `# kernel-lsp:` line the candidate deletes, changes or adds. A pragma's whole line is compared, so an
    ignore cannot move onto other code either."""
    old, new = _pragma_lines(before), _pragma_lines(after)
    kept = Counter(whole for _, whole, _ in old) & Counter(whole for _, whole, _ in new)
    gone, added = _unmatched(old, kept), _unmatched(new, kept)
    out = []
    for (line, _, pragma), (_, _, now) in zip(gone, added):
        kind = _kind(pragma)
        out.append(f"changes the {kind} on line {line} (`{pragma}` becomes `{now}`)" if now != pragma else
                   f"moves the {kind} on line {line} (`{pragma}`) onto other code")
    for line, _, pragma in gone[len(added):]:
        out.append(f"deletes the {_kind(pragma)} on line {line} (`{pragma}`)")
    for line, _, pragma in added[len(gone):]:
        kind = _kind(pragma)
        out.append(f"adds {'an' if kind[0] in 'aeiou' else 'a'} {kind} on line {line} (`{pragma}`): pragmas only "
                   "come from the user")
    return out


def _unmatched(pragmas: list[tuple[int, str, str]], kept: Counter) -> list[tuple[int, str, str]]:
    """The pragma lines beyond those the other version holds too (`kept`), in order."""
    left, out = Counter(kept), []
    for p in pragmas:
        if left[p[1]]:
            left[p[1]] -= 1
        else:
            out.append(p)
    return out


# Module-level names ---------------------------------------------------------------------------------------------


def bound_names(stmt: ast.stmt) -> set[str]:
    """The module-level names a top-level statement binds (`*` for a star import)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    out = set()
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
            continue  # names bound inside a nested scope are not the module's
        elif isinstance(node, ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return out


def module_bindings(tree: ast.Module) -> dict[str, list[ast.stmt]]:
    out: dict[str, list[ast.stmt]] = {}
    for stmt in tree.body:
        for name in bound_names(stmt):
            out.setdefault(name, []).append(stmt)
    return out


def reads(node: ast.AST) -> set[str]:
    """Every name a statement reads, at any depth (a superset of the module-level names it depends on)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def closure(roots: set[str], bindings: dict[str, list[ast.stmt]], unbound: bool = False) -> set[str]:
    """`roots` and every module-level name their bindings read, transitively; with `unbound`, also the names they
    read that the module does not bind (builtins, or locals: a module-level binding added for one would change
    what the code reads)."""
    seen, todo, free = set(), [r for r in roots if r in bindings], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for stmt in bindings[name]:
            read = reads(stmt)
            todo += [n for n in read if n in bindings and n not in seen]
            free |= {n for n in read if n not in bindings}
    return seen | free if unbound else seen


def describe(stmt: ast.stmt, name: str) -> str:
    """What `stmt` binds `name` to: the imported object for an import (so that regrouping imports is no change),
    else the whole statement, positions and comments aside."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        for a in stmt.names:
            if (a.asname or a.name).split(".")[0] == name:
                if isinstance(stmt, ast.Import):
                    return f"import {a.name}" + (f" as {a.asname}" if a.asname else "")
                return f"from {'.' * stmt.level}{stmt.module or ''} import {a.name}"
    return ast.dump(stmt)


def writes_to(tree: ast.Module, names: set[str]) -> set[str]:
    """Assignments to attributes or items of `names`, and `global` declarations of them, anywhere in the file."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            out |= {f"declares `global {n}`, a name of the reference" for n in node.names if n in names}
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                for sub in ast.walk(t):
                    if isinstance(sub, (ast.Attribute, ast.Subscript)) and isinstance(sub.ctx, (ast.Store, ast.Del)):
                        root = sub.value
                        while isinstance(root, (ast.Attribute, ast.Subscript)):
                            root = root.value
                        if isinstance(root, ast.Name) and root.id in names:
                            out.add(f"assigns {ast.unparse(sub)}, part of the reference")
    return out


def module_aliases(tree: ast.Module, module: str) -> set[str]:
    """Names this file binds to the reference module or to names imported from it."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name.split(".")[-1] == module}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == module:
            out |= {a.asname or a.name for a in node.names if a.name != "*"}
    return out
