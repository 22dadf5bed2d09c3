"""Tune over an `@triton.autotune` list: candidates add one config to the list, a neighbour of an entry already in
it (one tile size doubled or halved, other warps or stages), and the autotuner keeps picking among them at run time.

Adding rather than rewriting keeps the edit to one line and keeps every entry the author chose. The new entry goes
right after the first one: the first is the config the CPU interpreter runs, and the verifier checks the first
entries of a list (checker/verify/autotune_configs.py), so the new one is always among those it verifies.
"""

from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass, field

from .knobs import DEFAULTS, STAGES, WARPS, is_tile
from ..model import split_lines


@dataclass
class AutotuneSite:
    kernel: str
    line: int  # 0-based line of the decorator
    entries: list[dict[str, int]] = field(default_factory=list)  # every parseable Config, in list order
    insert_at: tuple[int, int] = (0, 0)  # (1-based line, col) right after the first entry
    indent: str | None = None  # the entries' indentation when the list has one per line; None: all on one line
    quote: str = '"'


def _config(call: ast.AST) -> dict[str, int] | None:
    """{"BLOCK": 128, ..., "num_warps": 4, "num_stages": 3} of `triton.Config({...}, num_warps=4)`; None when it is
    not plain literals (a hook, a computed value)."""
    if not (isinstance(call, ast.Call) and getattr(call.func, "attr", getattr(call.func, "id", "")) == "Config"):
        return None
    kwargs = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "kwargs"), None)
    if not isinstance(kwargs, ast.Dict):
        return None
    out: dict[str, int] = {}
    for k, v in zip(kwargs.keys, kwargs.values):
        if not (isinstance(k, ast.Constant) and isinstance(k.value, str) and isinstance(v, ast.Constant)
                and type(v.value) is int):
            return None
        out[k.value] = v.value
    options = dict(DEFAULTS)
    for kw in call.keywords:
        if kw.arg in DEFAULTS:
            if not (isinstance(kw.value, ast.Constant) and type(kw.value.value) is int):
                return None
            options[kw.arg] = kw.value.value
        elif kw.arg != "kwargs":
            return None  # num_ctas, maxnreg, pre_hook: not written back faithfully by this editor
    return {**out, **options}


def sites(tree: ast.Module, source: str, kernel: str | None = None) -> list[AutotuneSite]:
    module_lists = {n.targets[0].id: n.value for n in tree.body
                    if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)}
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef) or (kernel and fn.name != kernel):
            continue
        for deco in fn.decorator_list:
            name = getattr(deco.func, "attr", getattr(deco.func, "id", "")) if isinstance(deco, ast.Call) else ""
            if name != "autotune":
                continue
            configs = deco.args[0] if deco.args else next((k.value for k in deco.keywords if k.arg == "configs"), None)
            if isinstance(configs, ast.Name):
                configs = module_lists.get(configs.id)
            if not isinstance(configs, ast.List) or not configs.elts:
                continue
            entries = [_config(e) for e in configs.elts]
            if entries[0] is None or not any(entries):
                continue
            first = configs.elts[0]
            multiline = len(configs.elts) > 1 and configs.elts[1].lineno != first.lineno
            text = ast.get_source_segment(source, first) or ""
            quote = "'" if text.count("'") > text.count('"') else '"'
            out.append(AutotuneSite(fn.name, deco.lineno - 1, [e for e in entries if e is not None],
                                    (first.end_lineno, first.end_col_offset),
                                    " " * first.col_offset if multiline else None, quote))
    return out


def _neighbours(entry: dict[str, int]) -> list[dict[str, int]]:
    out = []
    for name, value in entry.items():
        if name == "num_warps":
            options = [w for w in WARPS if w != value]
        elif name == "num_stages":
            options = [s for s in STAGES if abs(s - value) == 1]
        elif is_tile(value):
            options = [v for v in (value * 2, value // 2) if is_tile(v)]
        else:
            options = []  # a flag or a small factor (VEC=1): kept as the author set it
        out += [{**entry, name: v} for v in options]
    return out


def configs(site: AutotuneSite, limit: int) -> list[dict[str, int]]:
    """New entries, one knob away from an entry of the list, the entry right after the first (where this tuner
    puts its own) first, then the list in order; never one the list already has."""
    order = site.entries[1:2] + site.entries[:1] + site.entries[2:]
    seen = [dict(e) for e in site.entries]
    out: list[dict[str, int]] = []
    for entry in order:
        for n in _neighbours(entry):
            if n not in seen:
                seen.append(n)
                out.append(n)
    return out[:limit]


def render(site: AutotuneSite, values: dict[str, int]) -> str:
    q = site.quote
    tiles = ", ".join(f"{q}{k}{q}: {v}" for k, v in values.items() if k not in DEFAULTS)
    return (f"triton.Config({{{tiles}}}, num_warps={values['num_warps']}, num_stages={values['num_stages']})")


def apply(source: str, site: AutotuneSite, values: dict[str, int]) -> str:
    """The source with one entry added to the list, right after its first."""
    lines = split_lines(source, keepends=True)
    line, col = site.insert_at
    text = lines[line - 1]
    rest = text[col:]
    if site.indent is not None:
        # after the first entry's comma (and any comment): a line of its own
        new = f"{site.indent}{render(site, values)},\n"
        lines.insert(line, new)
        if not rest.lstrip().startswith(","):
            lines[line - 1] = text[:col] + "," + rest
        return "".join(lines)
    lines[line - 1] = text[:col] + ", " + render(site, values) + rest
    return "".join(lines)


def apply_checked(source: str, site: AutotuneSite, values: dict[str, int]) -> str:
    """`apply`, falling back to adding the entry on the first entry's line when a line of its own would not parse
    (a list laid out with leading commas)."""
    new = apply(source, site, values)
    try:
        ast.parse(new)
        return new
    except SyntaxError:
        return apply(source, dataclasses.replace(site, indent=None), values)
