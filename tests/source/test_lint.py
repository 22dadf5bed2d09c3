"""What the text alone tells (kernel_lsp/source/lint.py): a `# kernel-lsp` comment that is not read as a pragma
is a warning showing the form that is read, and a file that links a reference but defines no Triton kernel is a
PyTorch fallback."""

from __future__ import annotations

import pytest

from kernel_lsp.source.lint import fallback, malformed_pragmas
from tests.conftest import write

KERNEL = "import triton\n\n@triton.jit\ndef k(x_ptr):\n    pass\n"


@pytest.mark.parametrize("line, right", [
    ("# kernel-lsp reference=problem.py", "# kernel-lsp: reference=problem.py"),
    ("# kernel_lsp: reference=problem.py", "# kernel-lsp: reference=problem.py"),
    ("# kernel-lsp : entry=f reference=r inputs=i", "# kernel-lsp: entry=f reference=r inputs=i"),
    ("# kernel-lsp: reference = problem.py", "# kernel-lsp: reference=problem.py"),
    ("# kernel-lsp: refrence=problem.py", "# kernel-lsp: reference=problem.py"),
    ("x = 1  # kernel-lsp ignore[KL200]", "# kernel-lsp: ignore[KL200]"),
    ("x = 1  # kernel-lsp: ignore KL200,KL104", "# kernel-lsp: ignore[KL200, KL104]"),
])
def test_lint_a_malformed_pragma_is_a_warning_that_shows_the_right_form(tmp_path, line, right):
    path = tmp_path / "k.py"
    (found,) = malformed_pragmas(path, f"{line}\n{KERNEL}")
    assert found.code == "KL009" and found.severity.label == "warning" and found.span.line == 0
    assert f"`{right}`" in found.message and found.data["replacement"] == right, found.message


@pytest.mark.parametrize("line", [
    "# kernel-lsp: reference=problem.py",
    "# kernel-lsp: entry=f reference=ref.py:r inputs=i flops=2e9 bytes=4096",
    'x = 1  # kernel-lsp: ignore[KL200,KL104]',
    "# kernel-lsp checks this file on save",  # prose, not a pragma
    "s = '# kernel-lsp reference=problem.py'",  # a string, not a comment
])
def test_lint_a_pragma_that_is_read_and_prose_are_left_alone(tmp_path, line):
    assert malformed_pragmas(tmp_path / "k.py", f"{line}\n{KERNEL}") == []


PROBLEM = '''
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
def get_inputs():
    return [torch.randn(8, 16)]
def get_init_inputs():
    return []
'''

FALLBACK = '''
# kernel-lsp: reference=problem.py
import torch
class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
'''


def test_lint_a_linked_file_without_a_kernel_is_a_fallback_and_an_unlinked_one_is_not(tmp_path):
    write(tmp_path / "problem.py", PROBLEM)
    impl = write(tmp_path / "impl.py", FALLBACK)
    (found,) = fallback(impl, impl.read_text())
    assert found.code == "KL205" and found.severity.label == "error" and found.span.line == 0
    assert "PyTorch fallback" in found.message
    helper = write(tmp_path / "helper.py", "import torch\ndef f(x):\n    return x\n")
    assert fallback(helper, helper.read_text()) == []
    assert fallback(tmp_path / "problem.py", PROBLEM) == []  # the reference itself links nothing
