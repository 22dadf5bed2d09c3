"""A reference that draws random numbers it does not seed (issue 27 item 5): said so on the link, with what to do,
instead of blaming a correct implementation with KL200 on every element."""

import json
import shutil

import pytest
import torch

from tests.conftest import CORPUS, run_cli, write

# The corpus's softmax problem with noise added to its input: a correct softmax kernel can only match it by
# drawing the same numbers in the same order.
PROBLEM = """
import torch
import torch.nn as nn
{random}

class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x + torch.rand_like(x), dim=1)


def get_inputs():
    return [torch.rand(8, 64)]


def get_init_inputs():
    return []
"""


def _check(tmp_path, random: str):
    write(tmp_path / "problem.py", PROBLEM.format(random=random))
    impl = shutil.copy(CORPUS / "kb_softmax_ok" / "impl.py", tmp_path / "impl.py")
    proc = run_cli("check", str(impl), "--no-cache", "--format", "json", "--timeout", "300")
    return proc, json.loads(proc.stdout)


def test_random_reference_unseeded_draws_are_reported_on_the_link_not_the_implementation(tmp_path):
    proc, doc = _check(tmp_path, "")
    assert proc.returncode == 1
    codes = [d["code"] for d in doc["diagnostics"]]
    assert codes == ["KL007"], doc["diagnostics"]
    (d,) = doc["diagnostics"]
    assert d["range"]["line"] == 2  # the pragma line that links the reference
    assert "not deterministic" in d["message"] and "KERNEL_LSP_RANDOM = True" in d["message"]
    assert "docs/verification.md" in d["message"]
    assert doc["stats"]["verified"] == 0 and doc["stats"]["unlinked"] == 1  # no value was judged


def test_random_reference_declared_random_is_judged_by_distribution(tmp_path):
    proc, doc = _check(tmp_path, "KERNEL_LSP_RANDOM = True\n")
    assert "KL007" not in {d["code"] for d in doc["diagnostics"]}, doc["diagnostics"]
    assert doc["stats"]["verified"] + doc["stats"]["failed"] == 1  # judged (a softmax without the noise may fail)


def draws_after(seed_with, seed: int, device: str) -> tuple:
    import torch
    torch.randn(9, device=device)  # the generators moved on first
    seed_with(seed)
    return (torch.randn(5, device=device), torch.rand(3, device=device), torch.randint(0, 100, (4,), device=device))


def test_the_checks_seed_draws_what_torch_manual_seed_draws():
    """problem.manual_seed (the judge's seeding, without torch.manual_seed's queue for backends that never start)
    leaves the CPU's generator where torch.manual_seed leaves it."""
    import torch

    from kernel_lsp.checker.problem.problem import manual_seed
    for seed in (0, 7, 2**40 + 3):
        expected, got = draws_after(torch.manual_seed, seed, "cpu"), draws_after(manual_seed, seed, "cpu")
        assert all(torch.equal(a, b) for a, b in zip(expected, got))


@pytest.mark.gpu
def test_gpu_the_checks_seed_draws_on_the_gpu_what_torch_manual_seed_draws():
    """The same for the GPU's generator, which a reference drawing on the GPU uses."""
    from kernel_lsp.checker.problem.problem import manual_seed
    for seed in (0, 7):
        expected, got = draws_after(torch.manual_seed, seed, "cuda"), draws_after(manual_seed, seed, "cuda")
        assert all(torch.equal(a, b) for a, b in zip(expected, got))


def test_a_failing_random_check_confirms_its_first_finding_only(tmp_path):
    """A finding of the distribution or dependence test stands only after CONFIRM_DRAWS more of the reference's draws;
    once one has, the check fails, and the other variants' findings are not confirmed again (a wrong dropout's check
    called the reference 1,062 times where 278 do)."""
    from kernel_lsp.checker.verify.truth import CONFIRM_DRAWS, DEPENDENCE_DRAWS
    calls = tmp_path / "calls"
    source = (CORPUS / "bug_dropout_reads_reversed.py").read_text()
    source = source.replace("def ref(x, seed):\n", f"def ref(x, seed):\n    open({str(calls)!r}, 'a').write('.')\n")
    write(tmp_path / "case.py", source)
    write(tmp_path / "pyproject.toml", "[tool.kernel-lsp]\nsandbox = false\n")  # the reference writes its count
    proc = run_cli("check", str(tmp_path / "case.py"), "--no-cache", "--format", "json", "--timeout", "300")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and {d["code"] for d in doc["diagnostics"]} == {"KL200"}, doc["diagnostics"]
    assert "over 65 draws" in doc["diagnostics"][0]["message"]  # the first finding was confirmed
    n = len(calls.read_text())  # about 20 variants, each the reference's call and its DEPENDENCE_DRAWS, and one confirm
    assert CONFIRM_DRAWS < n <= 2 * CONFIRM_DRAWS + 20 * (DEPENDENCE_DRAWS + 3), n
