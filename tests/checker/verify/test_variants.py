"""Input variants (kernel_lsp/checker/verify/plan/variants.py): copies the verifier hands to each side."""

import torch

from kernel_lsp.checker.verify.plan.variants import clone_inputs, strided, transposed


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


def test_aligned_sizes_share_a_power_of_two_with_the_problems_own():
    from kernel_lsp.checker.verify.plan.variants import aligned_knobs
    own = {"M": 8192, "N": 8192, "K": 8192}
    assert aligned_knobs(own, {"M": 3, "N": 3, "K": 4095}) == {"M": 16, "N": 16, "K": 2048}
    assert aligned_knobs({"N": 1 << 20}, {"N": 16383}) == {"N": 8192}
    assert aligned_knobs({"N": 1000}, {"N": 999}) == {"N": 992}  # 1000 = 8 x 125: multiples of 8
    assert aligned_knobs({"N": 1001}, {"N": 999}) == {}  # an odd size has no aligned path to reach
    assert aligned_knobs({"N": 64, "L": 4096}, {"N": 33, "L": 4095}, at_least=32) == {"N": 33, "L": 2048}


def test_integer_inputs_get_both_signs_zero_and_the_dtypes_limits():
    """Integer inputs used to keep the problem's values, so a kernel that truncates where the reference floors never
    met a negative operand (issue 30 item 2). Floats and bools are left alone; an unsigned tensor has no sign."""
    from kernel_lsp.checker.verify.plan.variants import integer_extremes, integer_signed, outside_profile, sign_profile
    torch.manual_seed(0)
    own = [torch.randint(0, 1000, (4096,), dtype=torch.int32), torch.randn(8), torch.ones(4, dtype=torch.bool),
           torch.randint(0, 200, (64,), dtype=torch.uint8)]
    signed = integer_signed(own)
    assert bool((signed[0] < 0).any()) and bool((signed[0] > 0).any()) and not bool((signed[0] == 0).any())
    assert int(signed[0].abs().max()) <= 999 and signed[0].dtype == torch.int32
    assert signed[1] is own[1] and signed[2] is own[2] and torch.equal(signed[3], own[3])
    extremes = integer_extremes(own)[0]
    info = torch.iinfo(torch.int32)
    for value in (info.min, info.max, 0, 1, -1):
        assert bool((extremes == value).any()), value
    assert outside_profile(signed, sign_profile(own)) == ("input 0 has negative values, the problem's are never "
                                                          "negative")


def test_magnitude_variants_keep_the_signs_the_problem_gives():
    """Tiny and large values of an always-positive input stay positive: precision lost on small positive inputs
    (log1p as log(1 + x)) is then judged as an error inside the problem's distribution, not only as a warning about
    negative values the problem never draws (issue 30 item 8)."""
    from kernel_lsp.checker.verify.plan.variants import TINY, keep_signs, outside_profile, scaled, sign_profile
    torch.manual_seed(0)
    own = [torch.rand(64, 64) + 1e-3, torch.randn(64)]
    profile = sign_profile(own)
    tiny = keep_signs(scaled(TINY), profile)(own)
    assert bool((tiny[0] > 0).all()) and float(tiny[0].abs().max()) < 1e-2 and bool((tiny[1] < 0).any())
    assert outside_profile(tiny, profile) is None


def test_integers_a_reference_rejects_are_screened_on_the_cpu_before_a_gpu_sees_them():
    """Negative indices make index_add raise on the CPU and fail a device-side assert on a GPU, which ends the
    job's CUDA context (tasks/Index/index_add on the H200): a GPU verifier tries such variants on a CPU copy first."""
    from kernel_lsp.checker.verify.plan.variants import integer_signed
    from kernel_lsp.checker.verify.verifier import screen_on_cpu

    class Model(torch.nn.Module):
        def forward(self, src, idx):
            return torch.zeros(8, src.shape[1]).index_add(0, idx, src)

    torch.manual_seed(0)
    own = [torch.randn(32, 4), torch.randint(0, 8, (32,))]
    assert screen_on_cpu(Model(), own, own) is None
    signed = integer_signed(own)
    assert (signed[1] < 0).any()
    why = screen_on_cpu(Model(), signed, own)
    assert why.startswith("the reference rejects these integers on the CPU") and "index" in why.lower(), why

    class Tied(Model):  # runs only where its inputs are not on the CPU: nothing can be tried first
        def forward(self, src, idx):
            if src.device.type == "cpu":
                raise RuntimeError("Expected all tensors to be on the same device")
            return super().forward(src, idx)
    assert screen_on_cpu(Tied(), signed, own).startswith("the reference does not run on a CPU copy")


def test_a_size_variant_that_crops_integers_is_screened_on_the_cpu_before_a_gpu_sees_them():
    """index_select's table and indices at one row each (the unit-size variant): the index, drawn for 65536 rows, is
    out of range at one, a device-side assert on a GPU that ended the check with KL300 (tasks/Index on an H100). Such
    a size variant is tried on a CPU copy first, as the integer variants are; one of floats alone is not."""
    from kernel_lsp.checker.verify.plan.shapes import apply
    from kernel_lsp.checker.verify.plan.variants import Variant
    from kernel_lsp.checker.verify.runs import needs_cpu_screen
    from kernel_lsp.checker.verify.verifier import screen_on_cpu

    class Gather(torch.nn.Module):
        def forward(self, table, idx):
            return torch.index_select(table, 0, idx)

    torch.manual_seed(0)
    own = [torch.randn(64, 8), torch.randint(32, 64, (64,))]
    setting = {("tensor", 0, 0): 1, ("tensor", 1, 0): 1}
    one = apply(own, setting, 21)
    assert [tuple(x.shape) for x in one] == [(1, 8), (1,)]
    unit = Variant("unit-size-1", "size", 21, {}, None, "a batch of one", setting)
    assert needs_cpu_screen(unit, one) and not needs_cpu_screen(unit, [own[0][:1]])
    assert not needs_cpu_screen(Variant("odd-size", "size", 8, {"n": 63}, None, "odd sizes"), own)
    why = screen_on_cpu(Gather(), one, None)
    assert why.startswith("the reference raises on a CPU copy of these inputs") and "index" in why.lower(), why
    assert screen_on_cpu(Gather(), apply(own, {("tensor", 1, 0): 1}, 21), None) is None  # the table keeps its rows


def test_structured_rows_give_each_row_one_structure_in_turn():
    """Zeros, a constant, a large common offset, sorted, reversed, three repeated values, six decades of magnitudes,
    and rows as drawn with a column of zeros; a vector is cut into eight rows; integer tensors are left alone."""
    from kernel_lsp.checker.verify.plan.variants import STRUCTURES, structured_rows
    torch.manual_seed(0)
    x, idx = torch.randn(16, 40), torch.arange(5)
    (y, same_idx) = structured_rows([x, idx])
    assert torch.equal(same_idx, idx) and y.shape == x.shape and y.dtype == x.dtype
    rows = {kind: y[r] for r, kind in enumerate(STRUCTURES)}
    assert not rows["zeros"].any() and rows["constant"].unique().numel() == 1
    assert rows["offset"].mean() > 50 * rows["offset"].std()
    assert torch.equal(rows["sorted"], rows["sorted"].sort().values)
    assert torch.equal(rows["reversed"], rows["reversed"].sort(descending=True).values)
    assert rows["duplicates"].unique().numel() <= 3
    mags = rows["magnitudes"].abs()
    assert mags.max() / mags[mags > 0].min() > 1e3
    assert (y[7::8, 20] == 0).all() and y[7].count_nonzero() == 39
    (v,) = structured_rows([torch.randn(64)])
    assert not v[:8].any() and v[8:16].unique().numel() == 1

