"""Link an implementation file to its PyTorch reference (see docs/linking.md).

Two forms, one result type (`Link`):
- KernelBench: the implementation defines `ModelNew`; the reference file defines `Model`, `get_inputs()` and
  `get_init_inputs()`. Linked by `--reference`, by the pragma `# kernel-lsp: reference=PATH`, by a glob in
  `[tool.kernel-lsp.references]`, or implicitly when one file defines all four names.
- Native: `# kernel-lsp: entry=FN reference=REF inputs=INPUTS`, where REF and INPUTS are names in the same
  file or `sibling.py:name`. FN launches the kernels; REF is the PyTorch reference; INPUTS() returns the
  argument list. Nothing from kernel_lsp is imported at run time.

Linking only reads files; a missing or unparsable reference becomes a finding on the pragma line (or line 1).
"""

from __future__ import annotations

import ast
import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..codes import severity_of
from ..jobs import LinkSpec
from ..model import Finding, Span, split_lines
from .discover import parse

PRAGMA_RE = re.compile(r"#\s*kernel-lsp:\s*(?P<body>.*)$")
# A value is one word, or a quoted string (either quote) for a path with spaces: reference="my problem.py".
_KV_RE = re.compile(r"""(?P<key>[A-Za-z_]+)=(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<value>[^\s"']\S*))""")
IGNORE_RE = re.compile(r"#\s*kernel-lsp:\s*ignore\[(?P<codes>[A-Z0-9, ]+)\]")
KERNELBENCH_NAMES = ("Model", "get_inputs", "get_init_inputs")


@dataclass
class Link:
    kind: str  # "kernelbench" or "native"
    reference: Path  # the file holding the reference (may be the implementation itself)
    origin: str  # "cli", "pragma", "pyproject", "self"
    anchor: Span  # where link problems are reported
    reference_name: str = "Model"
    inputs_path: Path | None = None
    inputs_name: str = "get_inputs"
    entry: str = "ModelNew"

    def to_spec(self) -> LinkSpec:
        return LinkSpec(self.kind, str(self.reference), self.reference_name, str(self.inputs_path or self.reference),
                        self.inputs_name, self.entry)


@dataclass
class LinkResult:
    link: Link | None
    findings: list[Finding] = field(default_factory=list)


def parse_pragmas(source: str) -> list[tuple[int, dict[str, str]]]:
    """All `# kernel-lsp: key=value ...` comment lines, as (0-based line, {key: value})."""
    out = []
    for i, line in enumerate(split_lines(source)):
        m = PRAGMA_RE.search(line)
        if m and line.lstrip().startswith("#"):
            kv = {m2["key"]: next(v for v in (m2["dq"], m2["sq"], m2["value"]) if v is not None)
                  for m2 in _KV_RE.finditer(m["body"])}
            if kv:
                out.append((i, kv))
    return out


def ignored_codes(source: str) -> dict[int, set[str]]:
    """0-based line -> codes suppressed there by `# kernel-lsp: ignore[CODE, ...]`."""
    out: dict[int, set[str]] = {}
    for i, line in enumerate(split_lines(source)):
        m = IGNORE_RE.search(line)
        if m:
            out[i] = {c.strip() for c in m["codes"].split(",") if c.strip()}
    return out


def _defined_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _finding(path: Path, anchor: Span, code: str, message: str) -> Finding:
    return Finding(str(path), anchor, severity_of(code), code, message, source="kernel-lsp.link")


def _stray_words(source: str, line: int, key: str) -> str | None:
    """The words after `key=value` on a pragma line that belong to no key: the rest of an unquoted path with
    spaces (`reference=my problem.py`)."""
    lines = split_lines(source)
    m = PRAGMA_RE.search(lines[line]) if line < len(lines) else None
    if not m:
        return None
    body = m["body"]
    at = next((m2 for m2 in _KV_RE.finditer(body) if m2["key"] == key), None)
    if at is None or at["value"] is None:
        return None
    rest = re.split(r"\s+[A-Za-z_]+=", " " + body[at.end():])[0].strip()
    return rest or None


def _check_names(impl: Path, anchor: Span, ref: Path, names: tuple[str, ...], hint: str = "") -> list[Finding]:
    """Problems with a reference file: missing, a folder, unreadable, unparsable, or lacking the needed names."""
    if ref.is_dir():
        return [_finding(impl, anchor, "KL002", f"reference {ref} is a folder: name the Python file in it that "
                                                "holds the reference")]
    if not ref.is_file():
        return [_finding(impl, anchor, "KL002", f"reference file not found: {ref}{hint}")]
    try:
        tree = parse(ref.read_text(encoding="utf-8"), str(ref))
    except (OSError, UnicodeDecodeError) as e:
        return [_finding(impl, anchor, "KL003", f"cannot read reference {ref.name}: {e}")]
    except SyntaxError as e:
        return [_finding(impl, anchor, "KL003", f"reference {ref.name} has a syntax error at line {e.lineno}: {e.msg}")]
    missing = [n for n in names if n not in _defined_names(tree)]
    if missing:
        return [_finding(impl, anchor, "KL002", f"reference {ref.name} does not define {', '.join(missing)}")]
    return []


def _split_ref(impl: Path, value: str) -> tuple[Path, str | None]:
    """`ref.py:name` -> (sibling path, name); `name` -> (impl, name); `ref.py` -> (path, None)."""
    if ":" in value:
        file, _, name = value.rpartition(":")
        return (impl.parent / file).resolve(), name
    if value.endswith(".py") or "/" in value:
        return (impl.parent / value).resolve(), None
    return impl, value


def _from_pyproject(impl: Path, root: Path | None, mapping: dict[str, str]) -> Path | None:
    if not root or not mapping:
        return None
    try:
        rel = impl.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None
    for pattern, target in mapping.items():
        if fnmatch.fnmatchcase(rel, pattern):
            regex = re.escape(pattern).replace(r"\*\*", "(.*)").replace(r"\*", "([^/]*)")
            m = re.fullmatch(regex, rel)
            match = m.group(1) if m and m.groups() else impl.stem
            return (root / target.format(stem=impl.stem, match=match)).resolve()
    return None


def link_file(impl: Path, source: str, cli_reference: Path | None = None, root: Path | None = None,
              mapping: dict[str, str] | None = None) -> LinkResult:
    """Resolve the reference for `impl`. Returns no link (and a hint) when nothing links it."""
    impl = impl.resolve()
    pragmas = parse_pragmas(source)
    link_pragma = next(((ln, kv) for ln, kv in pragmas if "reference" in kv or "entry" in kv), None)
    try:
        tree_names = _defined_names(parse(source))
    except SyntaxError:
        tree_names = set()
    line1 = Span(0, 0, 0, 1)
    overridden: list[Finding] = []
    if cli_reference is not None:
        # The caller's link wins over whatever the checked text says: a candidate that names its own reference
        # (one that returns what its kernel computes) must not choose what it is judged against.
        overridden = _overridden_pragmas(impl, source, pragmas, cli_reference.resolve())
        link_pragma = None

    if link_pragma and "entry" in link_pragma[1]:
        ln, kv = link_pragma
        anchor = Span(ln, 0, ln, len(split_lines(source)[ln]))
        if "reference" not in kv or "inputs" not in kv:
            return LinkResult(None, [_finding(impl, anchor, "KL002",
                                              "native link needs entry=, reference= and inputs= on the pragma line")])
        ref_path, ref_name = _split_ref(impl, kv["reference"])
        in_path, in_name = _split_ref(impl, kv["inputs"])
        problems = []
        for path, name in ((ref_path, ref_name), (in_path, in_name)):
            if name is None:
                problems.append(_finding(impl, anchor, "KL002", f"native link needs a function name, got {path.name}"))
            elif path == impl:
                if name not in tree_names:
                    problems.append(_finding(impl, anchor, "KL002", f"{name} is not defined in this file"))
            else:
                problems += _check_names(impl, anchor, path, (name,))
        if kv["entry"] not in tree_names:
            problems.append(_finding(impl, anchor, "KL002", f"entry {kv['entry']} is not defined in this file"))
        if problems:
            return LinkResult(None, problems)
        return LinkResult(Link("native", ref_path, "pragma", anchor, reference_name=ref_name or "",
                               inputs_path=in_path, inputs_name=in_name or "", entry=kv["entry"]))

    ref, origin, anchor, hint = None, None, line1, ""
    if cli_reference is not None:
        ref, origin = cli_reference.resolve(), "cli"
    elif link_pragma:
        ln, kv = link_pragma
        anchor = Span(ln, 0, ln, len(split_lines(source)[ln]))
        ref, origin = (impl.parent / kv["reference"]).resolve(), "pragma"
        stray = _stray_words(source, ln, "reference")
        if stray:
            hint = (f"; a path with spaces must be quoted: reference=\"{kv['reference']} {stray}\"")
    else:
        mapped = _from_pyproject(impl, root, mapping or {})
        if mapped is not None:
            ref, origin = mapped, "pyproject"
        elif all(n in tree_names for n in KERNELBENCH_NAMES):
            ref, origin = impl, "self"
    if ref is None:
        return LinkResult(None, [_finding(
            impl, line1, "KL004",
            "no PyTorch reference is linked: add `# kernel-lsp: reference=problem.py` (KernelBench) or "
            "`# kernel-lsp: entry=fn reference=ref_fn inputs=make_inputs` (see docs/linking.md)")])
    problems = _check_names(impl, anchor, ref, KERNELBENCH_NAMES, hint)
    if origin == "cli":
        for f in problems:
            # The caller's reference is unusable: the caller's problem, not the checked file's (the batch API says so
            # apart from the implementation's failures).
            f.data["reference"] = "caller"
    if "ModelNew" not in tree_names:
        problems.append(_finding(impl, anchor, "KL002", "KernelBench link: this file does not define ModelNew"))
    if problems:
        return LinkResult(None, overridden + problems)
    return LinkResult(Link("kernelbench", ref, origin, anchor), overridden)


def _overridden_pragmas(impl: Path, source: str, pragmas: list[tuple[int, dict[str, str]]],
                        cli_reference: Path) -> list[Finding]:
    """A KL008 on each link pragma (`reference=`, `entry=`, `inputs=`) the caller's reference overrides. A
    KernelBench pragma naming the caller's own reference file agrees with it, and is not reported."""
    out = []
    lines = source.splitlines()
    for ln, kv in pragmas:
        keys = [k for k in ("entry", "reference", "inputs") if k in kv]
        if not keys:
            continue
        if keys == ["reference"] and ":" not in kv["reference"] and \
                (impl.parent / kv["reference"]).resolve() == cli_reference:
            continue
        said = " ".join(f"{k}={kv[k]}" for k in keys)
        out.append(_finding(impl, Span(ln, 0, ln, len(lines[ln])), "KL008",
                            f"link pragma ignored: the caller linked {cli_reference.name} (--reference, or the batch "
                            f"API's reference), which wins over \"{said}\" in the file"))
    return out
