"""Launch-parameter search without an LLM: candidates that differ from the file only in literals.

At each launch site `kernel[grid](..., BLOCK=1024, num_warps=4)` the tunable knobs are the integer literals given
to the kernel's power-of-two `tl.constexpr` parameters (tile sizes), `num_warps` and `num_stages` (added to the
call when absent), a local or module-level `BLOCK = 1024` that the call passes on (`BLOCK=BLOCK`), and the cap
of a size-following tile (`BLOCK=min(2048, triton.next_power_of_2(cols))`, directly or through a name). When a
tile size's literal also appears in the grid expression (`triton.cdiv(n, 1024)`), it changes there too, so the
grid still covers the data. Candidates are the grid of values around the current ones, nearest first; each is a
minimal edit of those literals, and the verifier decides which are still correct. A kernel's `@triton.autotune`
list is a site too: there a candidate adds one entry to the list (autotune_list.py).

Beside the literals, a launched kernel's body offers hints, each a knob that is off (0) or on (1): a cache hint
on the loads inside its loops (`eviction_policy="evict_first"`: data a program reads once, as in a row reduction,
should leave L2 first; not offered in a loop with `tl.dot`, whose tiles other programs read again), and
`flatten=True` on a `tl.range` loop that holds another loop (a persistent kernel: its tile loop and K loop become
one software pipeline). On the H200 the first took row_sum from 0.90x to 0.99x torch.compile, the second bmm from
0.85x to 0.93x (docs/benchmarks.md, found by hand before tune offered them). A third knob switches an fp32 `tl.dot`
spelled `input_precision="ieee"` (FMA units) to `"tf32x3"` (three TF32 tensor-core products, about fp32's error:
the GPU's verification judges it). By hand it lifted matmul_fp32 0.84x -> 1.10x torch.compile, with other
tiles; it loses where an operand is not contiguous along K (conv1d's original layout).
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass, field

from . import autotune_list
from .autotune_list import AutotuneSite
from .knobs import DEFAULTS, STAGES, WARPS, is_pow2, is_tile
from ..model import split_lines

MAX_CONFIGS = 32


@dataclass
class Knob:
    name: str  # the keyword: BLOCK, num_warps, num_stages
    value: int
    spans: list[tuple[int, int, int, int]] = field(default_factory=list)  # (line, col, end_line, end_col), 1-based lines
    insert_at: tuple[int, int] | None = None  # where `, name=value` goes when the call lacks the keyword
    text: str = ""  # a hint: inserted at each of `inserts` when the knob is set to 1
    inserts: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class Site:
    kernel: str
    line: int  # 0-based line of the launch
    knobs: list[Knob]


def _constexpr_params(tree: ast.Module, kernel: str) -> set[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == kernel:
            return {a.arg for a in node.args.args + node.args.kwonlyargs
                    if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)}
    return set()


def _span(node: ast.AST) -> tuple[int, int, int, int]:
    return node.lineno, node.col_offset, node.end_lineno, node.end_col_offset


def _int_literal(value: ast.AST) -> ast.Constant | None:
    """The literal that sets a launch value: `1024`, or the cap of `min(2048, triton.next_power_of_2(cols))` (a
    tile that follows the size up to a fixed largest one; the cap is what a tuner may move)."""
    if isinstance(value, ast.Constant) and isinstance(value.value, int) and not isinstance(value.value, bool):
        return value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "min" \
            and not value.keywords and len(value.args) == 2:
        caps = [a for a in value.args if isinstance(a, ast.Constant)]
        if len(caps) == 1:
            return _int_literal(caps[0])
    return None


def _assignments(nodes, seen: set[str] | None = None) -> dict[str, ast.Constant]:
    """Names bound to integer literals (or capped sizes) among `nodes`: `BLOCK = 1024`,
    `bm, bn, bk = 128, 128, 64`, `block = min(1024, triton.next_power_of_2(c))`. A name assigned twice is not
    tuned: which value a launch sees is then a matter of control flow. `seen` collects every name assigned."""
    out: dict[str, ast.Constant] = {}
    seen = set() if seen is None else seen
    for node in nodes:
        if isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
            seen.add(node.target.id)
            out.pop(node.target.id, None)
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        pairs = []
        if isinstance(target, ast.Name):
            pairs = [(target, value)]
        elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            pairs = list(zip(target.elts, value.elts))
        elif isinstance(target, ast.Tuple):
            pairs = [(t, None) for t in target.elts]
        for t, v in pairs:
            if not isinstance(t, ast.Name):
                continue
            literal = _int_literal(v) if v is not None else None
            if t.id in seen or literal is None:
                out.pop(t.id, None)
            else:
                out[t.id] = literal
            seen.add(t.id)
    return out




def _launch_only(tree: ast.Module, names: dict[str, ast.Constant]) -> dict[str, ast.Constant]:
    """The module-level constants read only as launch options or inside `cdiv(...)`: one that is also a problem
    size (`N = 4096` used by the inputs or the reference) is not a tuning knob, since moving it changes the
    problem, not the kernel."""
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
            allowed.update(id(kw.value) for kw in node.keywords)
        if isinstance(node, ast.Call) and (getattr(node.func, "attr", None) == "cdiv"
                                           or getattr(node.func, "id", None) == "cdiv"):
            allowed.update(id(n) for a in node.args for n in ast.walk(a))
    used_elsewhere = {n.id for n in ast.walk(tree)
                      if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in allowed}
    return {k: v for k, v in names.items() if k not in used_elsewhere}


def launch_sites(source: str, kernel: str | None = None) -> list[Site | AutotuneSite]:
    """Every place tune can edit, in source order: launches that pass literals, and `@triton.autotune` lists."""
    tree = ast.parse(source)
    return sorted(_literal_sites(tree, kernel) + autotune_list.sites(tree, source, kernel), key=lambda s: s.line)


def _literal_sites(tree: ast.Module, kernel: str | None) -> list[Site]:
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    module_names = _launch_only(tree, _assignments(tree.body))
    sites = []
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Subscript)):
            continue
        target = call.func.value
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
        if name is None or (kernel and name != kernel):
            continue
        consts = _constexpr_params(tree, name)
        if not consts:
            continue
        func = call
        while func in parents and not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            func = parents[func]
        assigned: set[str] = set()
        locals_ = _assignments(ast.walk(func), assigned) if func is not call else {}
        # a name the function assigns (to anything) shadows a module-level constant of that name
        names_ = {**{k: v for k, v in module_names.items() if k not in assigned}, **locals_}
        knobs: list[Knob] = []
        grid = call.func.slice
        if isinstance(grid, ast.Name) and func is not call:  # grid = (triton.cdiv(n, 1024),) earlier in the function
            grid = next((n.value for n in ast.walk(func) if isinstance(n, ast.Assign) and len(n.targets) == 1
                         and isinstance(n.targets[0], ast.Name) and n.targets[0].id == grid.id), grid)
        for kw in call.keywords:
            if kw.arg is None:
                continue
            literal = _int_literal(kw.value)
            if literal is None and isinstance(kw.value, ast.Name) and kw.value.id in names_:
                literal = names_[kw.value.id]
            if literal is None:
                continue
            if kw.arg in ("num_warps", "num_stages") or (kw.arg in consts and is_pow2(literal.value)):
                knobs.append(Knob(kw.arg, literal.value, [_span(literal)]))
        knobs = _tie_grid_literals(knobs, consts, grid)
        names = {n for k in knobs for n in k.name.split("/")}
        if not any(n in consts for n in names):
            continue  # nothing to tile: warps alone are tuned only beside a tile size
        end = (call.end_lineno, call.end_col_offset - 1)  # the closing parenthesis
        for extra, default in DEFAULTS.items():
            if extra not in names:
                knobs.append(Knob(extra, default, [], insert_at=end))
        sites.append(Site(name, call.lineno - 1, knobs + _hint_knobs(tree, name)))
    return sites


def _is_tl(node: ast.AST, attr: str) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == attr
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "tl")


def _closing_paren(call: ast.Call) -> tuple[int, int]:
    return call.end_lineno, call.end_col_offset - 1


def _uses(expr: ast.AST, names: set[str]) -> bool:
    return any(_is_tl(n, "program_id") or (isinstance(n, ast.Name) and n.id in names) for n in ast.walk(expr))


def _program_names(fn: ast.FunctionDef) -> set[str]:
    """The kernel's names whose values depend on `tl.program_id`: its own rows, tiles or blocks. A load whose
    address uses none of them (a vector every program reads, like gemv's x) is shared, not read once."""
    names: set[str] = set()
    assigns = [n for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value]
    changed = True
    while changed:
        changed = False
        for a in assigns:
            targets = a.targets if isinstance(a, ast.Assign) else [a.target]
            if _uses(a.value, names):
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name) and n.id not in names:
                            names.add(n.id)
                            changed = True
    return names


def _hint_knobs(tree: ast.Module, kernel: str) -> list[Knob]:
    """The kernel body's hint knobs (module docstring): loads in loops without a cache hint whose address depends
    on the program (its own data), and tl.range loops that hold a loop without `flatten`. Only where the hint is
    absent, so a file that has it offers nothing."""
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == kernel), None)
    if fn is None:
        return []
    own = _program_names(fn)
    loads: dict[tuple[int, int], None] = {}
    ranges: dict[tuple[int, int], None] = {}
    for loop in (n for n in ast.walk(fn) if isinstance(n, ast.For)):
        inner = [n for b in loop.body for n in ast.walk(b)]
        if not any(_is_tl(n, "dot") for n in inner):
            loads.update((_closing_paren(n), None) for n in inner
                         if _is_tl(n, "load") and n.args and _uses(n.args[0], own)
                         and not any(k.arg == "eviction_policy" for k in n.keywords))
        if _is_tl(loop.iter, "range") and any(isinstance(n, ast.For) for n in inner) \
                and not any(k.arg == "flatten" for k in loop.iter.keywords):
            ranges[_closing_paren(loop.iter)] = None
    hints = [("evict_first", ', eviction_policy="evict_first"', loads), ("flatten", ", flatten=True", ranges)]
    out = [Knob(name, 0, [], text=text, inserts=list(points)) for name, text, points in hints if points]
    ieee = [_span(k.value) for n in ast.walk(fn) if _is_tl(n, "dot") for k in n.keywords
            if k.arg == "input_precision" and isinstance(k.value, ast.Constant) and k.value.value == "ieee"]
    if ieee:  # replaced, not inserted: each "ieee" becomes "tf32x3"
        out.append(Knob("tf32x3", 0, ieee, text='"tf32x3"'))
    return out


def _tie_grid_literals(knobs: list[Knob], consts: set[str], grid: ast.AST) -> list[Knob]:
    """A tile size's literal also written in the grid (cdiv(n, 1024)) moves with it. When several tile sizes
    share that literal (BM = BN = 32 and cdiv(m, 32), cdiv(n, 32)), which grid literal belongs to which cannot be
    told, so they are tuned as one knob ("BM/BN") that keeps them equal."""
    in_grid = [c for c in ast.walk(grid) if isinstance(c, ast.Constant) and isinstance(c.value, int)]
    out: list[Knob] = []
    tiles: dict[int, list[Knob]] = {}
    for k in knobs:
        if k.name in consts and any(c.value == k.value for c in in_grid):
            tiles.setdefault(k.value, []).append(k)
        else:
            out.append(k)
    for value, group in tiles.items():
        spans = [s for k in group for s in k.spans] + [_span(c) for c in in_grid if c.value == value]
        out.insert(0, Knob("/".join(k.name for k in group), value, spans))
    return out


def _values(knob: Knob) -> list[int]:
    if knob.text:
        return [0, 1]
    if knob.name == "num_warps":
        return list(WARPS)
    if knob.name == "num_stages":
        return list(STAGES)
    # the current value stays possible even outside the tile range (GROUP=8): else every config would move it
    return [v for v in (knob.value // 4, knob.value // 2, knob.value, knob.value * 2, knob.value * 4)
            if is_tile(v) or v == knob.value]


def current(site: Site | AutotuneSite) -> dict[str, int]:
    """The setting the file has now (for an autotune list, its first entry)."""
    if isinstance(site, AutotuneSite):
        return dict(site.entries[0])
    return {k.name: k.value for k in site.knobs}


def configs(site: Site | AutotuneSite, limit: int = MAX_CONFIGS) -> list[dict[str, int]]:
    """Value settings around the current one, nearest first (by how many knobs change, then by how far), without
    the current setting itself; for an autotune list, new entries beside its own (autotune_list.py)."""
    if isinstance(site, AutotuneSite):
        return autotune_list.configs(site, limit)
    current = {k.name: k.value for k in site.knobs}
    hints = {k.name for k in site.knobs if k.text}
    grid = [dict(zip(current, values)) for values in itertools.product(*(_values(k) for k in site.knobs))]

    def distance(c: dict[str, int]) -> tuple:
        changed = [n for n in c if c[n] != current[n]]
        # a hint alone comes first among the one-knob changes: no tile moves with it
        spread = sum(abs((c[n].bit_length()) - (current[n].bit_length())) for n in changed if n not in hints)
        return len(changed), spread, sorted(c.items())

    return [c for c in sorted(grid, key=distance) if c != current][:limit]


def apply(source: str, site: Site | AutotuneSite, values: dict[str, int]) -> str:
    """The source with the site's literals set to `values` (a minimal edit of those literals only), or, for an
    autotune list, with `values` added to it as one more entry."""
    if isinstance(site, AutotuneSite):
        return autotune_list.apply_checked(source, site, values)
    lines = split_lines(source, keepends=True)
    edits: list[tuple[int, int, int, int, str]] = []
    for knob in site.knobs:
        value = values.get(knob.name, knob.value)
        if value == knob.value and not knob.insert_at:
            continue
        if knob.text:
            edits += [(line, col, line, col, knob.text) for line, col in knob.inserts]
            edits += [(l1, c1, l2, c2, knob.text) for (l1, c1, l2, c2) in knob.spans]
            continue
        if knob.insert_at is not None:
            if value != knob.value:
                line, col = knob.insert_at
                edits.append((line, col, line, col, f", {knob.name}={value}"))
            continue
        for (l1, c1, l2, c2) in dict.fromkeys(knob.spans):
            edits.append((l1, c1, l2, c2, str(value)))
    for l1, c1, l2, c2, text in sorted(edits, reverse=True):
        if l1 == l2:
            line = lines[l1 - 1]
            lines[l1 - 1] = line[:c1] + text + line[c2:]
        else:
            lines[l1 - 1: l2] = [lines[l1 - 1][:c1] + text + lines[l2 - 1][c2:]]
    return "".join(lines)


def describe(values: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())
