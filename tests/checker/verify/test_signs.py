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


# Repeated eigenvalues (checker/verify/rotations.py): any orthonormal basis of their subspace is right.
REPEATED = torch.block_diag(*[torch.tensor([[2.0, 1.0], [1.0, 2.0]], dtype=torch.float64)] * 4)  # 1 and 3, 4 times


def _other_basis(v, s):
    """v turned by a random rotation inside each cluster of equal values of s: another right basis."""
    from kernel_lsp.checker.verify.rotations import clusters
    out = v.clone()
    g = torch.Generator().manual_seed(1)
    for c in clusters(s, 2.0**-24):
        q, _ = torch.linalg.qr(torch.randn(len(c), len(c), generator=g, dtype=torch.float64))
        out[:, c] = v[:, c] @ q
    return out


def test_rotations_the_reference_returning_values_and_vectors_is_paired():
    assert sign_free_calls(lambda a: torch.linalg.eigh(a), [A]).pairs == ((0, ((1, -2),)),)
    assert sign_free_calls(lambda a: torch.linalg.svd(a), [A]).pairs == ((1, ((0, -2), (2, -1))),)
    assert sign_free_calls(lambda a: a.svd(), [A]).pairs == ((1, ((0, -2), (2, -2))),)
    s_then_v = sign_free_calls(lambda a: tuple(reversed(torch.linalg.eigh(a))), [A])
    assert s_then_v.pairs == ((1, ((0, -2),)),)  # found where the reference puts them
    assert sign_free_calls(lambda a: torch.linalg.eigh(a).eigenvectors, [A]).pairs == ()  # no values: signs only
    scaled = sign_free_calls(lambda a: (lambda s, v: (s, v * s.abs().sqrt().unsqueeze(-2)))(*torch.linalg.eigh(a)), [A])
    assert scaled == ["eigh"] and scaled.pairs == ()  # vectors changed: signs only


def test_rotations_another_basis_of_a_repeated_eigenvalue_is_judged_right():
    s, v = torch.linalg.eigh(REPEATED)
    other = _other_basis(v, s).float()
    found = sign_free_calls(lambda a: torch.linalg.eigh(a), [REPEATED.float()])
    assert not compare_tensor(aligned([s.float(), other], [s, v])[1], v.float(), v).ok  # signs alone: wrong
    y = aligned([s.float(), other], [s, v], found=found)[1]
    assert compare_tensor(y, v.float(), v).ok
    assert float((y.double() - v).abs().max()) < 1e-6


def test_rotations_a_wrong_subspace_or_vectors_not_orthonormal_still_fail():
    s, v = torch.linalg.eigh(REPEATED)
    found = sign_free_calls(lambda a: torch.linalg.eigh(a), [REPEATED.float()])
    swapped = v.clone()
    swapped[:, [3, 4]] = v[:, [4, 3]]  # a vector of eigenvalue 1 where one of 3 belongs: the right values, wrong span
    mixed = _other_basis(v, torch.zeros(8, dtype=torch.float64))  # one rotation over all columns: orthonormal
    scaled = _other_basis(v, s) * 1.01  # the right span, not orthonormal
    for wrong in (swapped, mixed, scaled):
        y = aligned([s.float(), wrong.float()], [s, v], found=found)[1]
        c = compare_tensor(y, v.float(), v)
        assert not c.ok and c.code == "KL200"


def test_rotations_singular_vectors_turn_together_and_null_spaces_alone():
    a = torch.zeros(6, 4, dtype=torch.float64)
    a[:4, :4] = torch.diag(torch.tensor([2.0, 2.0, 1.0, 0.0], dtype=torch.float64))
    u, s, vh = torch.linalg.svd(a)  # full U: its last two columns, and the zero singular value's, any null basis
    found = sign_free_calls(lambda x: torch.linalg.svd(x), [a.float()])
    q = torch.tensor([[0.6, -0.8], [0.8, 0.6]], dtype=torch.float64)
    u2, vh2 = u.clone(), vh.clone()
    u2[:, :2], vh2[:2] = u[:, :2] @ q, (vh.mT[:, :2] @ q).mT  # one rotation on both sides: U S Vh kept
    u2[:, 3:] = u[:, 3:] @ torch.linalg.qr(torch.randn(3, 3, dtype=torch.float64))[0]  # the left null space
    y = aligned([u2.float(), s.float(), vh2.float()], [u, s, vh], found=found)
    assert compare_tensor(y[0], u.float(), u).ok and compare_tensor(y[2], vh.float(), vh).ok
    vh2[:2] = (vh.mT[:, :2] @ q.mT).mT  # V turned the other way: U S Vh is not A
    y = aligned([u2.float(), s.float(), vh2.float()], [u, s, vh], found=found)
    assert not (compare_tensor(y[0], u.float(), u).ok and compare_tensor(y[2], vh.float(), vh).ok)


def test_rotations_a_poison_value_stays_and_is_not_spread():
    s, v = torch.linalg.eigh(REPEATED)
    found = sign_free_calls(lambda a: torch.linalg.eigh(a), [REPEATED.float()])
    y = _other_basis(v, s).float()
    y[0, 0] = 12345.0
    back = aligned([s.float(), y], [s, v], keep=12345.0, found=found)[1]
    assert back[0, 0] == 12345.0 and int((back == 12345.0).sum()) == 1
    y[0, 0] = float("nan")
    back = aligned([s.float(), y], [s, v], found=found)[1]
    assert int(back.isnan().sum()) == 1
