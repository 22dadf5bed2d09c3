"""The package's layers import one way only (docs/architecture.md draws them): read from the source by AST, so a
new import against the arrows fails here, not in review."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kernel_lsp"

# Each part of the package and the parts it may import (itself always allowed). From the bottom up.
ALLOWED = {
    "model": set(),
    "device": set(),
    "bundled": set(),
    "targets": set(),
    "codes": {"model"},
    "jobs": {"model"},
    "config": {"device", "targets"},
    "engine": {"model", "codes", "jobs", "targets"},
    "worker": {"engine", "jobs", "model", "codes", "device", "config"},
    "cache": {"model", "device"},
    "render": {"model", "codes"},
    "check": {"engine", "worker", "cache", "config", "jobs", "model", "codes", "device"},
    "propose": {"check", "engine", "worker", "config", "model", "codes"},
    "lsp": {"check", "engine", "worker", "cache", "config", "jobs", "model", "codes", "device", "render", "propose"},
    "cli": {"check", "engine", "worker", "cache", "config", "jobs", "model", "codes", "device", "render", "lsp",
            "propose", "bundled"},
    "api": {"check", "worker", "config", "model", "codes"},
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


# Front ends schedule and render: they reach workers only through the Executor seam (worker/executor.py), never by
# building pools or talking to a worker's process themselves. `kernel-lsp worker` (cli) starts serve.py's loop.
FRONT_ENDS = {"cli", "lsp", "propose", "api"}
FRONT_END_WORKER_MODULES = {"executor", "serve"}


def worker_modules_imported(path: Path) -> set[str]:
    out = set()
    for parts, names in imports_of(path):
        if parts[:1] == ["worker"]:
            out.update([parts[1]] if len(parts) > 1 else names)
    return out


@pytest.mark.parametrize("path", [p for p in MODULES if part_of(p) in FRONT_ENDS],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_layers_front_ends_reach_workers_only_through_the_executor(path: Path):
    wrong = worker_modules_imported(path) - FRONT_END_WORKER_MODULES
    assert not wrong, f"{path.relative_to(PACKAGE)} imports worker.{sorted(wrong)}: front ends use executor_for"
