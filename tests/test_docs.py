"""The docs are true to the code: every diagnostic code, setting and module is documented, the layer table is the
import rules, and docs/ holds reference pages that cite one current results file per table."""

import dataclasses
import json
import re

from kernel_lsp.codes import CODES
from kernel_lsp.config import Settings
from tests.conftest import ROOT


def test_docs_every_code_has_a_section():
    text = (ROOT / "docs" / "diagnostics.md").read_text()
    sections = re.findall(r"^## (KL\d{3})$", text, re.M)
    assert sections == list(CODES)


def test_docs_the_table_of_codes_lists_every_code_with_its_name_and_severity():
    """The table at the top of docs/diagnostics.md is where a reader looks first: KL007 had a section but no row
    (the test above read only the sections)."""
    text = (ROOT / "docs" / "diagnostics.md").read_text()
    rows = re.findall(r"^\| \[(KL\d{3})\]\(#kl\d{3}\) \| ([\w-]+) \| (\w+)", text, re.M)
    assert rows == [(c.code, c.name, c.severity.label) for c in CODES.values()]


def test_docs_every_setting_is_documented():
    text = (ROOT / "docs" / "configuration.md").read_text()
    for field in dataclasses.fields(Settings):
        assert f"`{field.name.replace('_', '-') if field.name == 'cache_dir' else field.name}`" in text, field.name


# docs/architecture.md: true to the code -----------------------------------------------------------------------------

PACKAGE = ROOT / "kernel_lsp"


def architecture_tree(text: str) -> set[str]:
    """The paths the tree listing of docs/architecture.md names, relative to kernel_lsp/ (`run/executor.py`).
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


# docs/: reference pages, not a folder of runs -----------------------------------------------------------------------

RESULTS = ROOT / "benchmarks" / "results"
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md", ROOT / "CHANGELOG.md"]


def test_docs_holds_pages_and_the_images_they_link():
    text = "\n".join(p.read_text() for p in PAGES)
    extra = [p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*")
             if not (p.is_file() and p.parent == ROOT / "docs"
                     and (p.suffix == ".md" or (p.suffix in (".png", ".svg", ".jpg") and p.name in text)))]
    assert not extra, f"docs/ holds only pages (and images they link): move results to benchmarks/results/ {extra}"


def test_docs_cite_one_current_results_file_per_table():
    """Every results file a page cites exists, and every file in benchmarks/results/ is cited: older runs live in
    git history, not beside the current one."""
    text = "\n".join(p.read_text() for p in PAGES)
    assert "docs/results" not in text
    cited = set(re.findall(r"benchmarks/results/([\w.-]+)", text))
    assert cited, "the pages cite no results file"
    assert not sorted(c for c in cited if not (RESULTS / c).is_file()), "cited results files that do not exist"
    on_disk = {p.name for p in RESULTS.iterdir()}
    assert sorted(on_disk - cited) == [], "results files no page cites (an older run? git history keeps it)"


def test_docs_pages_tell_no_session_story():
    for page in PAGES:
        found = re.findall(r"\b[Ss]ession \d+", page.read_text())
        assert not found, f"{page.relative_to(ROOT)} narrates work sessions ({found[:3]}): CHANGELOG.md and git log do"


# How the project got here, which CHANGELOG.md and git log tell: never on a reference page. An issue elsewhere is
# cited as owner/repo#N.
HISTORY = [r"\b[Ss]essions?\b \d+", r"\bother sessions\b", r"\bsessions'", r"(?<![\w/-])[Ii]ssues? #?\d+",
           r"\bits own issue\b", r"\bissue notes\b", r"\b[Ww]hat is left\b", r"\b[Cc]ommits? [0-9a-f]{7,40}\b",
           r"\bcommit messages\b", r"\bdue to be (measured|done|fixed|updated)", r"\b[Cc]hanged since\b",
           r"\bthe previous (table|run|version)\b", r"\bnot (measured|done|tried) yet\b", r"\bthe earlier rule\b",
           r"\buntil session\b"]
REFERENCE_PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md", ROOT / "tasks" / "README.md"]


def test_docs_reference_pages_tell_no_project_history():
    """Issue 43 item 9: verification.md, benchmarks.md, scale-out.md and performance.md spoke of issues, sessions,
    "what is left", commits and tables "due to be measured again"."""
    for page in REFERENCE_PAGES:
        text = page.read_text()
        found = [m.group(0) for pattern in HISTORY for m in re.finditer(pattern, text)]
        assert not found, f"{page.relative_to(ROOT)} tells project history ({found[:4]}): CHANGELOG.md and git log do"


def test_docs_each_speedup_has_one_source_which_names_its_versions():
    """Issue 43 item 9: tasks/README.md copied the speedups (conv1d 0.89x there, 0.93x in docs/benchmarks.md). It
    points at docs/benchmarks.md, which says which torch and Triton measured them, as its results file records."""
    tasks = (ROOT / "tasks" / "README.md").read_text()
    assert not re.findall(r"\b\d+\.\d+x\b", tasks) and "docs/benchmarks.md" in tasks
    bench = (ROOT / "docs" / "benchmarks.md").read_text()
    cited = re.findall(r"benchmarks/results/(tasks-[\w.-]+\.json)", bench)[0]
    provenance = {(s["provenance"]["torch"], s["provenance"]["triton"])
                  for f in json.loads((RESULTS / cited).read_text())["files"]
                  for k in f["kernels"].values() if k.get("measurement")
                  for s in [k["measurement"]]}
    assert len(provenance) == 1, provenance
    torch, triton = provenance.pop()
    intro = bench[: bench.index("## Reproduce")]
    assert f"torch {torch}" in intro and f"Triton {triton}" in intro, (torch, triton)
    for page in ("performance.md", "performance-method.md"):
        text = (ROOT / "docs" / page).read_text()
        assert f"torch {torch}" in text and f"Triton {triton}" in text, page


def test_docs_benchmarks_table_is_its_results_file():
    """The tasks table in docs/benchmarks.md is what benchmarks/tasks_table.py makes of the results file the page
    cites: every task's speedups over eager and torch.compile, with their intervals."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("tasks_table", ROOT / "benchmarks" / "tasks_table.py")
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    text = (ROOT / "docs" / "benchmarks.md").read_text()
    cited = re.findall(r"benchmarks/results/(tasks-[\w.-]+\.json)", text)
    assert len(set(cited)) == 1, cited
    rows = table.rows_of(json.loads((RESULTS / cited[0]).read_text()))
    results = text[text.index("## Results"):]
    shown = {m.group(1): (m.group(2), m.group(3)) for m in re.finditer(
        r"^\| \w+ \| (\w+) \| [^|]+ \| [^|]+ \| [^|]+ \| ([\d.]+x \([^)]*\)) \| ([\d.]+x \([^)]*\)) \|", results, re.M)}
    expected = {name: tuple(table.fmt_ratio(table.speedup(r["m"], against)) for against in ("eager", "torch.compile"))
                for name, r in rows.items() if r["m"]}
    assert shown == expected
    # What 1.3x on GPU time would take: the page's block is what --headroom prints of the same file.
    block = re.search(r"--headroom (\d+)`\):\n\n *```\n(.*?)\n *```", results, re.S)
    assert block, "the --headroom block"
    printed = table.headroom(rows, int(block.group(1)))
    assert [line.strip() for line in block.group(2).splitlines()] == [line.strip() for line in printed]


# The samples of docs/: each works as pasted -------------------------------------------------------------------------

def config_samples() -> list[tuple[str, str]]:
    """(page:line, text) of every ```toml block in docs/ and the README, dedented as a reader would paste it."""
    import textwrap
    out = []
    for page in PAGES:
        text = page.read_text()
        for m in re.finditer(r"^( *)```toml\n(.*?)^ *```", text, re.M | re.S):
            out.append((f"{page.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}",
                        textwrap.dedent(m.group(2))))
    return out


def test_docs_every_config_sample_works_as_pasted(tmp_path):
    """Issue 43 item 6: docs/configuration.md's sample put half its settings under [tool.kernel-lsp.references], and
    failed when pasted (pointing at line 1). Each pyproject sample is given to `kernel-lsp check` as its config (on a
    folder without kernels: the settings are loaded and validated, nothing runs); an editor's sample (Helix's
    `config = { kernelLsp = ... }`) is loaded as the server loads its client's settings."""
    import tomllib

    from kernel_lsp.config import apply_overrides
    from tests.conftest import run_cli

    samples = config_samples()
    assert any("configuration.md" in where for where, _ in samples) and len(samples) >= 5, samples
    (tmp_path / "empty").mkdir()
    for i, (where, text) in enumerate(samples):
        data = tomllib.loads(text)  # valid TOML as pasted
        if "tool" in data:
            config = tmp_path / f"pyproject{i}.toml"
            config.write_text(text)
            proc = run_cli("check", str(tmp_path / "empty"), "--config", str(config))
            assert proc.returncode == 1 and "nothing was checked" in proc.stderr, (where, proc.stderr)
        for server in data.get("language-server", {}).values():
            apply_overrides(Settings(), server["config"]["kernelLsp"])


def test_docs_a_setting_under_the_references_table_is_an_error_at_its_line(tmp_path):
    from tests.conftest import run_cli
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.kernel-lsp]\ntimeout = 60\n\n[tool.kernel-lsp.references]\n"sol/*.py" = "prob/{match}.py"\n'
                      'runner = "ssh gpu-box kernel-lsp worker"\nrunners = ["ssh a kernel-lsp worker"]\n')
    (tmp_path / "empty").mkdir()
    proc = run_cli("check", str(tmp_path / "empty"), "--config", str(config))
    assert proc.returncode == 2, proc.stderr
    assert f"{config}:6: [tool.kernel-lsp] references.runner: runner is a setting, not a glob" in proc.stderr
    assert "move it above the header" in proc.stderr
