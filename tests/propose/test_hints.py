"""The optimize prompt's techniques (kernel_lsp/propose/hints.py): each offered where the file shows the pattern it
improves, none where it does not, and never in a fix prompt."""

from __future__ import annotations

from kernel_lsp.propose.hints import HINTS, optimization_hints
from kernel_lsp.propose.prompt import messages
from tests.conftest import ROOT

PER_ELEMENT_RNG = '''
@triton.jit
def _uniform_kernel(out_ptr, n, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.rand(seed, offs), mask=offs < n)
'''

TWO_PASS_ROW = '''
@triton.jit
def _norm_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    total = tl.sum(acc, axis=0)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
        tl.store(out_ptr + row * n_cols + cols, x / total, mask=cols < n_cols)
'''


def names(text: str) -> set[str]:
    return {h.name for h in optimization_hints(text)}


def test_each_hint_is_offered_where_its_pattern_shows():
    assert "four random numbers per Philox call" in names(PER_ELEMENT_RNG)
    assert {"a row read once, from registers", "cache hints on streaming loads"} <= names(TWO_PASS_ROW)
    assert "one software pipeline over a persistent loop" in names(
        "for tile in tl.range(pid, tiles, NUM_SMS):\n    acc = tl.dot(a, b, acc)")
    assert "fp32 accuracy from TF32 tensor cores" in names('acc += tl.dot(a, b, input_precision="ieee")')
    assert "casts inside the kernel" in names("w = self.conv.weight.to(x.dtype)")


def test_no_hint_where_the_technique_is_already_used():
    assert names("r0, r1, r2, r3 = tl.rand4x(seed, offs)") == set()
    assert "one software pipeline over a persistent loop" not in names(
        "for tile in tl.range(pid, tiles, NUM_SMS, flatten=True):\n    acc = tl.dot(a, b, acc)")
    assert "fp32 accuracy from TF32 tensor cores" not in names('acc += tl.dot(a, b, input_precision="tf32x3")')
    # This session's rewritten tasks show none of the patterns their rewrites removed.
    for task in ("Random/uniform_init", "Random/dropout", "Normalization/layer_norm", "Loss/cross_entropy"):
        got = names((ROOT / "tasks" / f"{task}_triton.py").read_text())
        assert not got & {"four random numbers per Philox call", "a row read once, from registers"}, (task, got)


def test_the_optimize_prompt_carries_the_hints_and_the_fix_prompt_does_not():
    optimize = messages("optimize", "k.py", PER_ELEMENT_RNG, None, None, [])[1]["content"]
    fix = messages("fix", "k.py", PER_ELEMENT_RNG, None, None, [])[1]["content"]
    assert "## Techniques that made verified Triton kernels faster" in optimize and "tl.rand4x" in optimize
    assert "Techniques" not in fix and "tl.rand4x" not in fix
    plain = messages("optimize", "k.py", "def f():\n    return 1\n", None, None, [])[1]["content"]
    assert "Techniques" not in plain


def test_every_hint_has_a_distinct_name_and_words():
    assert len({h.name for h in HINTS}) == len(HINTS) and all(len(h.text) > 80 for h in HINTS)
