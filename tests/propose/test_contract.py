"""The frozen contract (propose/contract.py), through the real `kernel-lsp optimize --mode fix --apply` against a
scripted endpoint: a candidate may change the implementation only. One that repoints, deletes or adds a pragma,
edits the in-file reference, deletes the kernel, or links a file it wrote is refused, saying what it touched; the
reference is the text read before round 1, whatever happens on disk afterwards."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli, write
from tests.propose.fake_llm import FakeLLM
from tests.propose.test_llm_actions import BROKEN, optimize, workspace

KERNEL = '''
@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = 2 x"""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _scale_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
        return out
'''

PROBLEM = '''
import torch

N = 1000


class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2.0


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
'''

LENIENT = PROBLEM.replace("x * 2.0", "x * 3.0")  # a reference that agrees with the wrong kernel

# KernelBench form, the reference in problem.py.
LINKED = "# kernel-lsp: reference=problem.py\nimport torch\nimport triton\nimport triton.language as tl\n\n" + KERNEL
# KernelBench form, everything in one file.
SELF_CONTAINED = ("import torch\nimport triton\nimport triton.language as tl\n"
                  + PROBLEM.replace("import torch\n", "") + "\n" + KERNEL)


def fenced(text: str) -> str:
    return "```python\n" + text.lstrip("\n") + "```"


def wrong(text: str) -> str:
    """The file with the bug `fixed` the wrong way: 3 x instead of 2 x."""
    return text.replace("* factor, mask=mask)", "* 3.0, mask=mask)")


def right(text: str) -> str:
    return text.replace("* factor, mask=mask)", "* 2.0, mask=mask)")


def kernelbench(tmp_path: Path, fake: FakeLLM, text: str = LINKED) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.kernel-lsp]\ntimeout = 120\n\n[tool.kernel-lsp.llm]\nendpoint = "{fake.url}"\nmodel = "scripted"\n')
    write(tmp_path / "problem.py", PROBLEM)
    write(tmp_path / "lenient.py", LENIENT)
    return write(tmp_path / "scale.py", text)


# One program of 1024 covers the inputs only while they are small: the verifier tries sizes up to about twice the
# problem's own, so with get_inputs shrunk to 200 elements it passes; with the file's 1000 it does not.
SHRUNK = SELF_CONTAINED.replace("torch.randn(N)", "torch.randn(200)").replace(
    "(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)", "(1,)](x, out, x.numel(), BLOCK=1024)")
KERNEL_GONE = BROKEN[BROKEN.index("@triton.jit"): BROKEN.index("def scale")].rstrip("\n")
LAUNCH = ("    out = torch.empty_like(x)\n"
          "    _scale_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)")

# Each reply passes verification today only through what it changes beside the kernel (on the file, its reply,
# what the refusal says).
REFUSED = {
    "repoints-the-reference-pragma": (
        LINKED, fenced(wrong(LINKED).replace("reference=problem.py", "reference=lenient.py")),
        ["changes the link pragma on line 1", "reference=lenient.py"]),
    "deletes-the-pragma": (  # unlinked, nothing is verified: "0 input variants" was a pass
        LINKED, fenced(wrong(LINKED).replace("# kernel-lsp: reference=problem.py\n", "")),
        ["deletes the link pragma on line 1"]),
    "adds-an-ignore-pragma": (  # the wrong kernel's KL200 is reported on its store line
        BROKEN, fenced(wrong(BROKEN).replace("* 3.0, mask=mask)\n",
                                             "* 3.0, mask=mask)  # kernel-lsp: ignore[KL200]\n")),
        ["adds an ignore pragma", "ignore[KL200]"]),
    "edits-model-forward": (
        SELF_CONTAINED, fenced(wrong(SELF_CONTAINED).replace("return x * 2.0", "return x * 3.0")),
        ["changes Model, part of the reference"]),
    "edits-get-inputs": (SELF_CONTAINED, fenced(right(SHRUNK)), ["changes get_inputs, part of the reference"]),
    "deletes-the-kernel-by-search-replace": (
        BROKEN, "<<<<<<< SEARCH\n" + KERNEL_GONE + "\n=======\n>>>>>>> REPLACE\n<<<<<<< SEARCH\n" + LAUNCH
        + "\n    return out\n=======\n    return x * 2.0\n>>>>>>> REPLACE\n",
        ["deletes the Triton kernel _scale_kernel"]),
}


@pytest.mark.parametrize("original, reply, words", REFUSED.values(), ids=REFUSED.keys())
def test_contract_candidate_is_refused_before_it_runs(tmp_path, original, reply, words):
    with FakeLLM([reply]) as fake:
        path = workspace(tmp_path, fake) if original is BROKEN else kernelbench(tmp_path, fake, original)
        code, p, _ = optimize(path, "--apply", "--candidates", "1", "--rounds", "1")
    assert code == 1 and not p["accepted"]
    (c,) = p["candidates"]
    assert c["verdict"] == "blocked" and all(w in c["reason"] for w in words), c
    assert path.read_text() == original.lstrip("\n")


def test_contract_candidate_writing_a_reference_then_linking_it_is_refused(tmp_path):
    evil = tmp_path / "ref_evil.py"
    writer = BROKEN.replace("import torch\n", "import pathlib\nimport torch\n").replace(
        "def scale(x):\n", "def scale(x):\n    pathlib.Path(__file__).with_name('ref_evil.py').write_text("
                            "'import torch\\ndef ref(x):\\n    return x * 3.0\\n')\n")
    linker = wrong(BROKEN).replace("reference=ref ", "reference=ref_evil.py:ref ")
    with FakeLLM([fenced(writer), fenced(linker)]) as fake:
        path = workspace(tmp_path, fake)
        code, p, _ = optimize(path, "--apply", "--candidates", "1", "--rounds", "2")
    assert code == 1 and not p["accepted"]
    first, second = p["candidates"]
    assert first["verdict"] == "blocked" and "writes files" in first["reason"], first
    assert second["verdict"] == "blocked" and "changes the link pragma on line 1" in second["reason"], second
    assert not evil.exists()
    assert path.read_text() == BROKEN.lstrip("\n")


def test_contract_reference_rewritten_on_disk_mid_run_is_not_what_candidates_are_verified_against(tmp_path):
    # After the baseline check, when the model is first asked, the reference file becomes a lenient one; the
    # wrong candidate agrees with it, but candidates are verified against the reference as it was before round 1.
    problem = tmp_path / "problem.py"
    with FakeLLM([fenced(wrong(LINKED))], on_request=lambda i: problem.write_text(LENIENT)) as fake:
        path = kernelbench(tmp_path, fake)
        code, p, _ = optimize(path, "--apply", "--candidates", "1", "--rounds", "1")
    assert code == 1 and not p["accepted"]
    c = p["candidates"][0]
    assert c["verdict"] == "rejected" and "KL200" in c["reason"] + " ".join(c["findings"]), c
    assert path.read_text() == LINKED.lstrip("\n")


def test_contract_right_fix_of_a_kernelbench_file_is_still_accepted(tmp_path):
    with FakeLLM([fenced(right(LINKED))]) as fake:
        path = kernelbench(tmp_path, fake)
        code, p, _ = optimize(path, "--apply", "--candidates", "1", "--rounds", "1")
    assert code == 0 and p["accepted"], p
    assert path.read_text() == right(LINKED).lstrip("\n")
    check = run_cli("check", str(path), "--no-cache", cwd=tmp_path)
    assert check.returncode == 0, check.stdout
