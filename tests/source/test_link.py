from pathlib import Path

from kernel_lsp.source.link import ignored_codes, link_file
from tests.conftest import write

KB_PROBLEM = '''
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2
def get_inputs():
    return [torch.randn(8)]
def get_init_inputs():
    return []
'''


def _impl(tmp_path: Path, header: str = "") -> Path:
    return write(tmp_path / "impl.py", header + "\nimport triton\nclass ModelNew:\n    pass\n")


def test_link_pragma_kernelbench(tmp_path):
    write(tmp_path / "probs" / "p1.py", KB_PROBLEM)
    impl = _impl(tmp_path, "# kernel-lsp: reference=probs/p1.py\n")
    res = link_file(impl, impl.read_text())
    assert res.findings == [] and res.link.kind == "kernelbench" and res.link.origin == "pragma"
    assert res.link.reference == (tmp_path / "probs" / "p1.py").resolve()


def test_link_cli_reference_wins(tmp_path):
    ref = write(tmp_path / "ref.py", KB_PROBLEM)
    impl = _impl(tmp_path)
    res = link_file(impl, impl.read_text(), cli_reference=ref)
    assert res.link.origin == "cli" and res.link.reference == ref.resolve()


def test_link_pyproject_glob(tmp_path):
    write(tmp_path / "problems" / "softmax.py", KB_PROBLEM)
    impl = write(tmp_path / "solutions" / "softmax_triton.py", "import triton\nclass ModelNew:\n    pass\n")
    res = link_file(impl, impl.read_text(), root=tmp_path, mapping={"solutions/*_triton.py": "problems/{match}.py"})
    assert res.link.origin == "pyproject" and res.link.reference.name == "softmax.py"


def test_link_self_contained_kernelbench(tmp_path):
    impl = write(tmp_path / "both.py", KB_PROBLEM + "\nimport triton\nclass ModelNew(Model):\n    pass\n")
    res = link_file(impl, impl.read_text())
    assert res.link.origin == "self"


def test_link_native_same_file_and_sibling(tmp_path):
    write(tmp_path / "ref.py", "def torch_ref(x):\n    return x\ndef make():\n    return []\n")
    impl = write(tmp_path / "k.py", "# kernel-lsp: entry=run reference=ref.py:torch_ref inputs=make_local\n"
                 "def run(x):\n    return x\ndef make_local():\n    return []\n")
    res = link_file(impl, impl.read_text())
    assert res.findings == [] and res.link.kind == "native"
    assert res.link.reference.name == "ref.py" and res.link.inputs_path == impl.resolve()


def test_link_missing_reference_is_one_finding_on_pragma_line(tmp_path):
    impl = _impl(tmp_path, "import os\n# kernel-lsp: reference=nope.py\n")
    res = link_file(impl, impl.read_text())
    assert res.link is None and len(res.findings) == 1
    f = res.findings[0]
    assert f.code == "KL002" and f.span.line == 1 and "nope.py" in f.message


def test_link_broken_reference_syntax(tmp_path):
    write(tmp_path / "bad.py", "def Model(:\n")
    impl = _impl(tmp_path, "# kernel-lsp: reference=bad.py\n")
    (f,) = link_file(impl, impl.read_text()).findings
    assert f.code == "KL003" and "syntax error" in f.message


def test_link_reference_lacking_names(tmp_path):
    write(tmp_path / "half.py", "class Model:\n    pass\n")
    impl = _impl(tmp_path, "# kernel-lsp: reference=half.py\n")
    (f,) = link_file(impl, impl.read_text()).findings
    assert f.code == "KL002" and "get_inputs" in f.message and "get_init_inputs" in f.message


def test_link_nothing_linked_is_a_hint(tmp_path):
    impl = write(tmp_path / "k.py", "import triton\n")
    (f,) = link_file(impl, impl.read_text()).findings
    assert f.code == "KL004" and f.severity.label == "hint"


def test_ignore_pragma_parsing():
    src = "x = 1  # kernel-lsp: ignore[KL200, KL104]\ny = 2\n"
    assert ignored_codes(src) == {0: {"KL200", "KL104"}}


def test_link_a_quoted_path_with_spaces(tmp_path):
    """Issue 27 item 6: `reference=réf problem.py` could not be written, quoted or not."""
    write(tmp_path / "réf problem.py", KB_PROBLEM)
    for quoted in ('"réf problem.py"', "'réf problem.py'"):
        impl = _impl(tmp_path, f"# kernel-lsp: reference={quoted}\n")
        res = link_file(impl, impl.read_text())
        assert res.findings == [] and res.link.reference == (tmp_path / "réf problem.py").resolve(), res.findings
    impl = _impl(tmp_path, "# kernel-lsp: reference=réf problem.py\n")
    (f,) = link_file(impl, impl.read_text()).findings
    assert f.code == "KL002" and 'must be quoted: reference="réf problem.py"' in f.message, f.message


def test_link_a_folder_is_said_to_be_a_folder(tmp_path):
    """Issue 27 item 6: `reference=.` said "not found" for a folder that exists."""
    impl = _impl(tmp_path, "# kernel-lsp: reference=.\n")
    (f,) = link_file(impl, impl.read_text()).findings
    assert f.code == "KL002" and "is a folder" in f.message and "not found" not in f.message, f.message


def test_link_caller_reference_wins_over_the_files_link_pragmas(tmp_path):
    """--reference (and the batch API's reference) wins over a native pragma naming the file's own reference, and
    each overridden pragma line is reported (KL008, information); a pragma naming the caller's own file is not."""
    ref = write(tmp_path / "ref.py", KB_PROBLEM)
    impl = _impl(tmp_path, "# kernel-lsp: entry=fake reference=myref inputs=make_inputs\n"
                           "def fake(x):\n    return x\ndef myref(x):\n    return x\ndef make_inputs():\n    return []\n")
    res = link_file(impl, impl.read_text(), cli_reference=ref)
    assert res.link.origin == "cli" and res.link.kind == "kernelbench" and res.link.reference == ref.resolve()
    assert [(f.code, f.span.line, f.severity.name) for f in res.findings] == [("KL008", 0, "INFO")]
    assert "entry=fake reference=myref inputs=make_inputs" in res.findings[0].message
    same = _impl(tmp_path, "# kernel-lsp: reference=ref.py\n")
    res = link_file(same, same.read_text(), cli_reference=ref)
    assert res.link.origin == "cli" and res.findings == []
