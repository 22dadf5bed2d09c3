"""A reference that draws random numbers it does not seed (issue 27 item 5): said so on the link, with what to do,
instead of blaming a correct implementation with KL200 on every element."""

import json

from tests.conftest import run_cli, write

PROBLEM = """
import torch
import torch.nn as nn
{random}

class Model(nn.Module):
    def forward(self, x):
        return x + torch.rand_like(x)


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
"""

IMPL = """
# kernel-lsp: reference=problem.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        noise = torch.rand_like(x)  # the same draws as the reference, but in another order for strided inputs
        out = torch.empty_like(x)
        _add_kernel[(triton.cdiv(x.numel(), 256),)](x, noise, out, x.numel(), BLOCK=256)
        return out
"""


def _check(tmp_path, random: str):
    write(tmp_path / "problem.py", PROBLEM.format(random=random))
    impl = write(tmp_path / "impl.py", IMPL)
    proc = run_cli("check", str(impl), "--no-cache", "--format", "json")
    return proc, json.loads(proc.stdout)


def test_random_reference_unseeded_draws_are_reported_on_the_link_not_the_implementation(tmp_path):
    proc, doc = _check(tmp_path, "")
    assert proc.returncode == 1
    codes = [d["code"] for d in doc["diagnostics"]]
    assert codes == ["KL007"], doc["diagnostics"]
    (d,) = doc["diagnostics"]
    assert d["range"]["line"] == 0  # the pragma line that links the reference
    assert "not deterministic" in d["message"] and "KERNEL_LSP_RANDOM = True" in d["message"]
    assert "docs/verification.md" in d["message"]
    assert doc["stats"]["verified"] == 0 and doc["stats"]["unlinked"] == 1  # no value was judged


def test_random_reference_declared_random_is_judged_by_distribution(tmp_path):
    proc, doc = _check(tmp_path, "KERNEL_LSP_RANDOM = True\n")
    assert "KL007" not in {d["code"] for d in doc["diagnostics"]}, doc["diagnostics"]
    assert doc["stats"]["verified"] == 1
