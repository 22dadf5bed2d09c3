"""The package's layers import one way only (docs/architecture.md draws them): read from the source by AST, so a
new import against the arrows fails here, not in review."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kernel_lsp"

# Each part of the package and the parts it may import (itself always allowed). From the bottom up.
ALLOWED = {
    "records": set(),
    "model": {"records"},
    "device": set(),
    "bundled": set(),
    "targets": set(),
    "trusted": set(),  # the folders the checker trusts (settings refuse them as sandbox.writable; the sandbox, leases)
    "player": set(),  # runs beside the implementation: nothing of kernel_lsp (test_layers_the_player_stands_alone)
    "codes": {"model", "records"},
    "jobs": {"model", "records"},
    # verdict: the one classification (every front end, the proposer, the pipeline's evidence rule)
    "verdict": {"model", "records"},
    "settings": {"device", "targets", "trusted"},
    "config": {"settings", "device", "targets"},
    "source": {"model", "records", "codes", "jobs"},
    "checker": {"model", "records", "codes", "jobs", "targets", "player", "verdict", "trusted"},
    "run": {"checker", "player", "jobs", "model", "records", "codes", "device", "config", "trusted"},
    "cache": {"model", "records", "device"},
    "render": {"model", "records", "codes", "verdict"},
    "check": {"source", "run", "cache", "config", "jobs", "model", "records", "codes", "device"},
    "cli_common": {"config", "device", "run"},  # what the commands share: exit codes, UsageError, settings from flags
    "propose": {"check", "source", "run", "config", "model", "records", "codes", "verdict"},
    "lsp": {"check", "source", "run", "cache", "config", "jobs", "model", "records", "codes", "device", "render",
            "propose", "verdict"},
    "cli_check": {"cli_common", "check", "source", "run", "cache", "config", "model", "records", "render", "verdict"},
    "cli": {"check", "source", "run", "cache", "config", "jobs", "model", "records", "codes", "device", "render", "lsp",
            "propose", "bundled", "verdict", "cli_check", "cli_common"},
    "api": {"check", "run", "config", "model", "records", "codes", "verdict"},
}


def part_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def imports_of(path: Path) -> list[tuple[list[str], list[str]]]:
    """Every kernel_lsp import of a module, at any depth in it: (the module imported, as its parts below kernel_lsp;
    the names imported from it). Relative imports are resolved against the module's package."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = path.relative_to(PACKAGE).parent.parts  # () for top-level modules
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(here[: len(here) - (node.level - 1)]) if node.level > 1 else list(here)
                parts = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.startswith("kernel_lsp"):
                parts = node.module.split(".")[1:]
            else:
                continue
            out.append((parts, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(a.name.split(".")[1:], []) for a in node.names if a.name.startswith("kernel_lsp.")]
    return out


def imported_parts(path: Path) -> set[str]:
    """The kernel_lsp parts a module imports (relative or absolute)."""
    out = set()
    for parts, names in imports_of(path):
        out.update([parts[0]] if parts else names)
    return {n for n in out if n != "__version__"}


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" or p.parent != PACKAGE)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_layers_each_module_imports_only_downward(path: Path):
    part = part_of(path)
    assert part in ALLOWED, f"{part} is a new part of the package: give it a row in ALLOWED and in the docs"
    wrong = imported_parts(path) - ALLOWED[part] - {part}
    assert not wrong, f"{path.relative_to(PACKAGE)} ({part}) imports {sorted(wrong)} against the layering"


def test_layers_the_allowed_table_has_no_cycle():
    seen: dict[str, int] = {}

    def visit(node: str, stack: tuple[str, ...]) -> None:
        assert node not in stack, f"cycle: {' -> '.join(stack + (node,))}"
        for dep in ALLOWED[node]:
            visit(dep, stack + (node,))
        seen[node] = 1

    for node in ALLOWED:
        visit(node, ())


def module_name(path: Path) -> str:
    """kernel_lsp.run.executor for kernel_lsp/run/executor.py; a package by its folder's name."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_graph() -> dict[str, set[str]]:
    """Each kernel_lsp module and the kernel_lsp modules it imports, at any depth in it (a function's import too:
    an import moved into a function is how a circle hides), resolved to the module itself (`from . import x` is x
    when x is a module, else the package)."""
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in paths.items():
        deps = set()
        for parts, names in imports_of(path):
            base = ".".join(["kernel_lsp", *parts])
            named = [f"{base}.{n}" for n in names]
            deps.update(m for m in named if m in paths)
            if not names or any(m not in paths for m in named):
                deps.add(base)
        graph[name] = {d for d in deps if d in paths} - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of `graph`: its strongly connected parts of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_layers_no_module_imports_itself_through_others():
    """No import circles between modules, even inside one part (lsp/handlers and lsp/server were one, through a
    server made at import time; run/executor and run/ray_executor another, through an import inside a function)."""
    graph = module_graph()
    assert "kernel_lsp.lsp.server" in graph["kernel_lsp.lsp.handlers"]  # the graph is read
    assert cycles(graph) == []


def test_layers_the_cycle_finder_finds_a_circle_through_three_modules():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert cycles(graph) == [["a", "b", "c"]]


# Front ends schedule and render: they reach workers only through the Executor seam (run/executor.py), never by
# building pools or talking to a worker's process themselves. `kernel-lsp worker` (cli) starts serve.py's loop.
FRONT_ENDS = {"cli", "cli_check", "cli_common", "lsp", "propose", "api"}
FRONT_END_WORKER_MODULES = {"executor", "serve"}


def worker_modules_imported(path: Path) -> set[str]:
    out = set()
    for parts, names in imports_of(path):
        if parts[:1] == ["run"]:
            out.update([parts[1]] if len(parts) > 1 else names)
    return out


@pytest.mark.parametrize("path", [p for p in MODULES if part_of(p) in FRONT_ENDS],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_layers_front_ends_reach_workers_only_through_the_executor(path: Path):
    wrong = worker_modules_imported(path) - FRONT_END_WORKER_MODULES
    assert not wrong, f"{path.relative_to(PACKAGE)} imports run.{sorted(wrong)}: front ends use executor_for"


PLAYER = sorted((PACKAGE / "player").glob("*.py"))


@pytest.mark.parametrize("path", PLAYER, ids=lambda p: p.name)
def test_layers_the_player_stands_alone(path: Path):
    """What runs beside the implementation is copied into the player's folder under neutral names and run as plain
    files: it imports no kernel_lsp module, not even a sibling by a relative import (a plain file has no package)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = [ast.unparse(n) for n in ast.walk(tree)
             if (isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").startswith("kernel_lsp")))
             or (isinstance(n, ast.Import) and any(a.name.startswith("kernel_lsp") for a in n.names))]
    assert not found, f"player/{path.name} imports {found}"


# The parent (the CLI, the language server, the proposers, the batch API) never imports torch or triton: it reads
# files and schedules; checked code and everything that needs torch run in worker processes.
PARENT_MODULES = ["kernel_lsp.cli", "kernel_lsp.api", "kernel_lsp.check", "kernel_lsp.lsp.main",
                  "kernel_lsp.lsp.server", "kernel_lsp.lsp.handlers", "kernel_lsp.propose.loop",
                  "kernel_lsp.run.executor", "kernel_lsp.run.local", "kernel_lsp.run.ray_executor",
                  "kernel_lsp.render.report"]


def test_layers_the_parent_never_imports_torch():
    import subprocess
    import sys
    code = ("import importlib, sys\n"
            f"for m in {PARENT_MODULES!r}:\n"
            "    try:\n"
            "        importlib.import_module(m)\n"
            "    except ImportError as e:\n"
            "        if 'ray' not in str(e) and 'matplotlib' not in str(e): raise\n"
            "print(sorted(n for n in ('torch', 'triton', 'numpy') if n in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[-2] == "[]", out.stdout
