"""Input variants (kernel_lsp/engine/variants.py): copies the verifier hands to each side."""

import torch

from kernel_lsp.engine.variants import clone_inputs, strided, transposed


def _memory(t):
    """Every element of the tensor's span, gaps included."""
    span = 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    return t.as_strided((span,), (1,))


def test_a_strided_copy_keeps_strides_values_and_the_gaps_between_elements():
    # The gaps are what a kernel that assumes contiguity reads: uninitialized gaps made its finding flip
    # between KL200 and KL201 from run to run (a CI failure on tests/corpus/bug_bias_assumed_contiguous.py).
    for x in strided([torch.randn(7, 5), torch.randn(5)]) + transposed([torch.randn(4, 6)]):
        (y,) = clone_inputs([x])
        assert y.stride() == x.stride() and torch.equal(y, x)
        assert torch.equal(_memory(y), _memory(x))
        assert y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()


def test_a_copy_of_an_expanded_input_is_independent_of_it():
    x = torch.randn(3, 1).expand(3, 4)
    (y,) = clone_inputs([x])
    assert y.stride() == x.stride() and torch.equal(y, x)
    y[0, 0] = 5.0
    assert x[0, 0] != 5.0
