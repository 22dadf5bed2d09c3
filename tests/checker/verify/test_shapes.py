"""Size symbols read from the inputs (kernel_lsp/checker/verify/plan/shapes.py): which settings become variants."""

import torch

from kernel_lsp.checker.verify.plan import shapes


def _accepts_bias_add(setting):
    """x (M, N) + b (N): the reference needs x's columns equal to b's length."""
    x1 = setting.get(("tensor", 0, 1), 96)
    b0 = setting.get(("tensor", 1, 0), 96)
    return x1 == b0


def test_positions_take_every_dim_and_only_ints_that_equal_one():
    inputs = [torch.zeros(96, 96), torch.zeros(96), 96, 3, 1000]
    pos = shapes.positions(inputs, [96, 5, 7])
    assert pos == {("tensor", 0, 0): 96, ("tensor", 0, 1): 96, ("tensor", 1, 0): 96, ("int", 2): 96,
                   ("init", 0): 96}


def test_split_tells_apart_the_equal_sizes_the_reference_lets_differ():
    pos = shapes.positions([torch.zeros(96, 96), torch.zeros(96)], None)
    (setting,) = shapes.split_settings(pos, _accepts_bias_add)
    assert setting == {("tensor", 0, 0): 97}  # rows alone: columns and bias stay tied
    assert shapes.split_pairs(setting, pos) == {(("tensor", 0, 0), ("tensor", 0, 1)),
                                                (("tensor", 0, 0), ("tensor", 1, 0))}


def test_split_gives_nothing_when_sizes_differ_or_the_reference_ties_them_all():
    assert shapes.split_settings(shapes.positions([torch.zeros(16, 96)], None), lambda s: True) == []
    assert shapes.split_settings(shapes.positions([torch.zeros(96, 96)], None), lambda s: False) == []


def test_split_covers_remaining_pairs_with_a_second_setting():
    # three equal dims, each pair separable only alone: one setting cannot split all pairs
    pos = shapes.positions([torch.zeros(64, 64, 64)], None)
    settings = shapes.split_settings(pos, lambda s: len(s) == 1)
    covered = set().union(*(shapes.split_pairs(s, pos) for s in settings))
    assert len(settings) == 2 and len(covered) == 3


def test_together_shrinks_for_the_interpreter_and_never_below_an_index():
    inputs = [torch.zeros(512, 512), torch.tensor([0, 300])]
    pos = shapes.positions(inputs, None)
    t = shapes.together(pos, lambda s: True, lambda s: shapes.elements(inputs, s), 1 << 15, 1 << 13, 1 << 17,
                        shapes.int_max(inputs))
    assert t.base and all(n > 300 for n in t.base.values())
    assert t.small == {}  # 3 and 5 would put index 300 out of range
    assert t.odd == {} or all(n % 2 for n in t.odd.values())


def test_together_odd_small_larger_without_a_base():
    inputs = [torch.zeros(32, 48)]
    pos = shapes.positions(inputs, None)
    t = shapes.together(pos, lambda s: True, lambda s: shapes.elements(inputs, s), None, 1 << 22, 1 << 24, 0)
    assert t.base == {} and t.odd == {("tensor", 0, 0): 33, ("tensor", 0, 1): 49}
    assert t.small == {("tensor", 0, 0): 3, ("tensor", 0, 1): 5}
    assert t.larger == {("tensor", 0, 0): 65, ("tensor", 0, 1): 97}


def test_apply_crops_and_grows_from_the_tensors_own_values():
    x = torch.randn(8, 6)
    idx = torch.tensor([0, 5, 7])
    y, j, n = shapes.apply([x, idx, 8], {("tensor", 0, 0): 5, ("tensor", 0, 1): 9, ("tensor", 1, 0): 7,
                                         ("int", 2): 9}, seed=1)
    assert y.shape == (5, 9) and torch.equal(y[:, :6], x[:5])
    grown = y[:, 6:].reshape(-1)
    assert bool((grown.abs() <= x.abs().max() * 1.01).all()) and not bool(torch.isin(grown, x).any())  # jittered
    assert j.shape == (7,) and set(j.tolist()) <= {0, 5, 7} and n == 9  # indices drawn from its own values


def test_a_mis_sized_out_tensor_is_no_size_the_reference_accepts():
    """torch.add(x, y, out=out) resizes an out of another size with a deprecation warning: a split variant that gave
    `out` its own size made an implementation that refuses it a KL209 error (issue 30 item 10)."""
    import torch

    from kernel_lsp.checker.problem.problem import Problem
    ref = lambda x, y, out: torch.add(x, y, out=out)  # noqa: E731
    inputs = [torch.randn(30), torch.randn(30), torch.empty(30)]
    problem = Problem(lambda knobs, init: (ref, ref), lambda: inputs, None, make_reference=lambda init: ref)
    assert problem.accepts({}, {}, inputs)
    assert not problem.accepts({}, {("tensor", 2, 0): 31}, inputs)
    assert problem.accepts({}, {("tensor", 0, 0): 31, ("tensor", 1, 0): 31, ("tensor", 2, 0): 31}, inputs)


def test_unit_sizes_set_each_size_to_one_wherever_it_occurs_largest_first():
    """x (64, 96) + b (96): the columns are set to 1 in x and b together (the reference ties them), the rows alone;
    a setting the reference rejects is left out, and at most MAX_UNIT_VARIANTS are made."""
    pos = shapes.positions([torch.zeros(64, 96), torch.zeros(96)], None)
    ones = shapes.unit_settings(pos, {}, _accepts_bias_add)
    assert ones == [{("tensor", 0, 1): 1, ("tensor", 1, 0): 1}, {("tensor", 0, 0): 1}]
    assert shapes.unit_settings(pos, {}, lambda s: ("tensor", 0, 0) not in s) == [
        {("tensor", 0, 1): 1, ("tensor", 1, 0): 1}]
    many = shapes.positions([torch.zeros(2, 3, 4, 5, 6)], None)
    assert len(shapes.unit_settings(many, {}, lambda s: True)) == shapes.MAX_UNIT_VARIANTS
