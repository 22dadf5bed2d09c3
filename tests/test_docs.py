"""The docs are true to the code: every diagnostic code, setting and module is documented, and the layer table is
the import rules."""

import dataclasses
import re

from kernel_lsp.codes import CODES
from kernel_lsp.config import Settings
from tests.conftest import ROOT


def test_docs_every_code_has_a_section():
    text = (ROOT / "docs" / "diagnostics.md").read_text()
    sections = re.findall(r"^## (KL\d{3})$", text, re.M)
    assert sections == list(CODES)


def test_docs_every_setting_is_documented():
    text = (ROOT / "docs" / "configuration.md").read_text()
    for field in dataclasses.fields(Settings):
        assert f"`{field.name.replace('_', '-') if field.name == 'cache_dir' else field.name}`" in text, field.name


# docs/architecture.md: true to the code -----------------------------------------------------------------------------

PACKAGE = ROOT / "kernel_lsp"


def architecture_tree(text: str) -> set[str]:
    """The paths the tree listing of docs/architecture.md names, relative to kernel_lsp/ (`worker/executor.py`).
    The listing is the first ``` block; a name is the first word of a line indented by fewer than 12 spaces, two
    spaces a level, that ends in `.py` (a module) or `/` (a folder, the parent of the lines below it)."""
    block = text.split("```", 2)[1]
    named, folders = set(), []
    for line in block.splitlines():
        m = re.match(r"^( *)(\S+)", line)
        if not m or len(m.group(1)) >= 12 or not m.group(2).endswith((".py", "/")):
            continue
        depth = len(m.group(1)) // 2
        if depth == 0:
            folders = []  # kernel_lsp/ itself
            continue
        folders = folders[: depth - 1]
        if m.group(2).endswith("/"):
            folders.append(m.group(2).rstrip("/"))
        else:
            named.add("/".join(folders + [m.group(2)]))
    return named


def package_modules() -> set[str]:
    return {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"}


def test_docs_architecture_names_every_module():
    text = (ROOT / "docs" / "architecture.md").read_text()
    named = architecture_tree(text) | {m for m in package_modules() if f"kernel_lsp/{m}" in text}
    missing = sorted(package_modules() - named)
    assert not missing, f"docs/architecture.md does not name {missing}: give each a line in its tree"


def test_docs_architecture_names_no_module_that_is_gone():
    gone = sorted(architecture_tree((ROOT / "docs" / "architecture.md").read_text()) - package_modules())
    assert not gone, f"docs/architecture.md names modules that do not exist: {gone}"


def test_docs_architecture_layers_are_the_import_rules():
    """The layer table of docs/architecture.md is tests/test_layers.py's ALLOWED, row for row."""
    from tests.test_layers import ALLOWED

    text = (ROOT / "docs" / "architecture.md").read_text()
    layers = text[text.index("## Layers"):]
    layers = layers[: layers.index("\n## ", 1)]
    rows = {}
    for part, deps in re.findall(r"^\| `([\w.]+/?)` \| ([^|]*) \|", layers, re.M):
        rows[part.removesuffix(".py").rstrip("/")] = {d.strip("` ").removesuffix(".py").rstrip("/")
                                                      for d in deps.split(",") if d.strip("` ") not in ("", "-")}
    assert rows == ALLOWED
