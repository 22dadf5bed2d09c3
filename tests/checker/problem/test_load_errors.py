"""Who failed is a field of the error (implementation, reference or inputs), never read from its message."""

from __future__ import annotations

from kernel_lsp.checker.pipeline import LOAD_SOURCE
from kernel_lsp.lsp.scheduler import QUICK_SOURCES
from tests.conftest import check_json, write

PROBLEM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()

    def forward(self, x):
        return x * 2.0


n = 64


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return [n]
'''

IMPL = '''
# kernel-lsp: reference=problem.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        if n != 64:
            raise ValueError(f"n = {n}: this kernel only supports the reference's size 64")

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _double[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
        return out
'''


def test_load_implementation_error_mentioning_the_reference_is_reported(tmp_path):
    """ModelNew refuses other sizes with a message that contains the word "reference": that is the
    implementation failing at a size the reference accepts (KL209), not a variant to skip."""
    write(tmp_path / "problem.py", PROBLEM)
    impl = write(tmp_path / "impl.py", IMPL)
    _, doc = check_json(impl, extra=("--no-cache",))
    findings = doc["files"][0]["findings"]
    kl209 = [f for f in findings if f["code"] == "KL209"]
    assert kl209 and "ModelNew could not be built" in kl209[0]["message"], findings
    assert "only supports the reference's size" in kl209[0]["message"]


def test_load_failures_are_not_the_quick_passes_to_withdraw(tmp_path):
    write(tmp_path / "problem.py", PROBLEM)
    impl = write(tmp_path / "impl.py", IMPL.replace("import triton.language as tl", "import triton.language as tl\n"
                                                    "import no_such_module_here"))
    _, doc = check_json(impl, extra=("--no-cache",))
    (f,) = doc["files"][0]["findings"]
    assert f["code"] == "KL005" and f["source"] == LOAD_SOURCE and LOAD_SOURCE not in QUICK_SOURCES
    assert f["range"]["line"] == 5  # the failing import, 0-based


def test_load_errors_out_of_memory_is_one_rule_for_every_caller():
    """The first run, the measure stage and the worker tell an out-of-memory the same way (errors.is_out_of_memory):
    torch's error by name, a host MemoryError, a CUDA library's text, and a player's report of one."""
    from kernel_lsp.checker.player import RemoteError
    from kernel_lsp.checker.problem.errors import is_out_of_memory
    OutOfMemoryError = type("OutOfMemoryError", (RuntimeError,), {})
    assert is_out_of_memory(OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert is_out_of_memory(MemoryError())
    assert is_out_of_memory(RuntimeError("CUDA error: out of memory"))
    assert is_out_of_memory(RemoteError({"text": "Tried to allocate", "oom": True}))
    assert not is_out_of_memory(RemoteError({"text": "index out of range"}))
    assert not is_out_of_memory(RuntimeError("CUDA error: an illegal memory access was encountered"))
    assert not is_out_of_memory(ValueError("shape mismatch"))
