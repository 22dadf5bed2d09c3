"""Outputs defined up to sign (checker/verify/signs.py): which references have them, and how an output's vectors are
brought to the truth's signs without moving anything else."""

import torch

from kernel_lsp.checker.verify.compare import compare_tensor
from kernel_lsp.checker.verify.signs import aligned, sign_free_calls, signs_toward

A = torch.randn(4, 6, 6, generator=torch.Generator().manual_seed(0))
A = A @ A.mT


def test_signs_the_decompositions_a_reference_calls_are_seen_in_any_form():
    assert sign_free_calls(lambda a: torch.linalg.eigh(a)[1], [A]) == ["eigh"]
    assert sign_free_calls(lambda a: a.svd()[0], [A]) == ["svd"]
    assert sign_free_calls(lambda a: torch.linalg.qr(a).Q @ torch.linalg.svd(a).U, [A]) == ["qr", "svd"]
    assert sign_free_calls(lambda a: torch.linalg.eigvalsh(a), [A]) == []  # eigenvalues have no sign to pick
    assert sign_free_calls(lambda a: a.relu(), [A]) == []
    assert sign_free_calls(lambda a: 1 / 0, [A]) == []  # a reference that cannot run: nothing claimed


def test_signs_columns_rows_or_the_whole_tensor_are_flipped_to_the_truth():
    _, v = torch.linalg.eigh(A.double())
    cols = torch.tensor([1.0, -1, 1, -1, -1, 1], dtype=torch.float64)
    (back,) = aligned([(v * cols).float()], [v])
    assert torch.equal(back, v.float())  # each column brought back, exactly
    (back,) = aligned([(v.mT * cols[:, None]).float()], [v.mT])  # rows (an SVD's Vh)
    assert torch.equal(back, v.mT.float())
    (back,) = aligned([-v[:, :, 0].float()], [v[:, :, 0]])  # a batch of vectors: one sign per vector (row)
    assert torch.equal(back, v[:, :, 0].float())
    assert signs_toward(v.float(), v) is None  # nothing to flip


def test_signs_only_signs_move_a_wrong_magnitude_still_fails():
    _, v = torch.linalg.eigh(A.double())
    wrong = (-v * 1.01).float()
    (y,) = aligned([wrong], [v])
    c = compare_tensor(y, v.float(), v)
    assert not c.ok and c.code == "KL200"


def test_signs_a_poison_value_marking_unwritten_elements_is_kept():
    _, v = torch.linalg.eigh(A.double())
    y = (-v).float()
    y[0, 0, 0] = 12345.0  # the second run's sentinel: never written
    (back,) = aligned([y], [v], keep=12345.0)
    assert back[0, 0, 0] == 12345.0 and torch.equal(back[1:], v[1:].float())
