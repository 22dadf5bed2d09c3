"""The error-budget rule on hand-made tensors: PyTorch's own error sets the yardstick."""

import torch

from kernel_lsp.checker.verify.compare import compare_tensor


def _truth_and_ref(dtype, n=4096, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(n, generator=g, dtype=torch.float64)
    return t, t.to(dtype)


def test_compare_accepts_round_to_nearest_in_each_dtype():
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        t, r = _truth_and_ref(dtype)
        assert compare_tensor(r.clone(), r, t).ok


def test_compare_accepts_one_ulp_truncation_in_bf16():
    t, r = _truth_and_ref(torch.bfloat16)
    truncated = (t.float().view(torch.int32) & ~0xFFFF).view(torch.float32).to(torch.bfloat16)
    assert compare_tensor(truncated, r, t).ok


def test_compare_rejects_fp16_rounding_in_an_fp32_task():
    t, r = _truth_and_ref(torch.float32)
    c = compare_tensor(r.half().float(), r, t)
    assert not c.ok and c.code == "KL200" and c.bad_fraction > 0.5


def test_compare_reports_worst_index_and_pytorch_error():
    t, r = _truth_and_ref(torch.float32, n=100)
    y = r.clone()
    y[37] += 1.0
    c = compare_tensor(y, r, t)
    assert not c.ok and c.worst_index == (37,) and c.bad_count == 1 and c.ref_max_abs > 0
    assert "output[37]" in c.message and "PyTorch's own float32 error" in c.message


def test_compare_nan_positions_must_match():
    t, r = _truth_and_ref(torch.float32, n=10)
    t[3] = float("nan")
    r[3] = float("nan")
    y = r.clone()
    assert compare_tensor(y, r, t).ok
    y[3] = 0.0
    c = compare_tensor(y, r, t)
    assert not c.ok and c.code == "KL201" and c.worst_index == (3,)


def test_compare_integers_are_exact_and_shapes_checked():
    a = torch.arange(10, dtype=torch.int8)
    b = a.clone()
    b[4] += 1
    assert compare_tensor(a.clone(), a, a).ok
    assert compare_tensor(b, a, a).code == "KL200"
    assert compare_tensor(a[:5], a, a).code == "KL202"
    assert compare_tensor(a.float(), a, a).code == "KL202"


def test_compare_unwritten_mask_wins():
    t, r = _truth_and_ref(torch.float32, n=10)
    unwritten = torch.zeros(10, dtype=torch.bool)
    unwritten[7:] = True
    c = compare_tensor(r.clone(), r, t, unwritten=unwritten)
    assert c.code == "KL203" and c.bad_count == 3 and c.worst_index == (7,)


def test_compare_quotes_the_elements_own_error_and_the_maxima_apart():
    """The quoted element is the worst one out of budget, with its own errors; the largest absolute error sits on
    another element (within budget at its magnitude) and is named apart, with its index."""
    import torch
    from kernel_lsp.checker.verify.compare import compare_tensor
    t = torch.tensor([1e6, 1.0, 2.0, 3.0])
    y = torch.tensor([1e6 + 0.1, 1.0, 2.09, 3.0])  # [0]: abs 0.125 in fp32, within 3 ulp of 1e6; [2]: abs 0.09, not
    c = compare_tensor(y, t, t.double())
    assert not c.ok and c.worst_index == (2,) and c.bad_count == 1
    assert c.message.startswith("output[2] = 2.09, truth 2 (abs error 0.09, rel 0.045)"), c.message
    assert c.message.endswith("largest errors elsewhere: abs 0.125 at [0]"), c.message


def test_same_finiteness_in_each_float_dtype_fp8_included():
    from kernel_lsp.checker.verify.compare import same_finiteness
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float8_e5m2, torch.float8_e4m3fn):
        a = torch.tensor([1.0, float("nan"), 2.0]).to(dtype)
        assert same_finiteness([a], [a.clone()])
        b = torch.tensor([1.0, 3.0, float("nan")]).to(dtype)
        assert not same_finiteness([a], [b]), dtype


def test_compare_judges_the_same_with_and_without_nonfinite_elements():
    """The all-finite fast path and the NaN-aware path agree on the finite elements' verdict and numbers."""
    t = torch.linspace(-3, 3, 101, dtype=torch.float64)
    r = t.float()
    y = r.clone()
    y[7] += 1e-3  # out of budget
    fast = compare_tensor(y, r, t)
    t2, r2, y2 = (torch.cat([x, torch.tensor([float("nan")], dtype=x.dtype)]) for x in (t, r, y))
    slow = compare_tensor(y2, r2, t2)
    assert not fast.ok and not slow.ok and fast.code == slow.code == "KL200"
    assert (fast.worst_index, fast.bad_count, fast.max_abs) == (slow.worst_index, slow.bad_count, slow.max_abs)


def test_compare_judges_a_float64_output_at_float64():
    """The accumulation floor uses the output's own roundoff where it is finer than fp32: a float64 result rounded
    to float32 (about 1e-7 relative) was inside 8 * 2^-24 * A and passed (issue 30 item 4)."""
    t = torch.rand(4096, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) + 0.5
    assert compare_tensor(t.clone(), t.clone(), t, abs_terms=t.clone()).ok
    c = compare_tensor(t.float().double(), t.clone(), t, abs_terms=t.clone())
    assert not c.ok and c.code == "KL200" and c.bad_fraction > 0.5


def test_compare_adds_the_constants_allowance_per_element_once():
    """How far the truth moves with its float constants in fp32 is added to each element's own budget, not three
    times the tensor's largest move to every element (which let a small element be off by that much)."""
    t = torch.tensor([1.0, 1e-3] * 512, dtype=torch.float64)
    moved = 1e-7 * t  # the constants move each element by 1e-7 relative
    y = t * (1 + 1e-7)
    assert compare_tensor(y.float(), t.float(), t, constants=moved).ok
    y = t.clone()
    y[1] += 2e-7  # 2e-4 relative on a small element: well within 3 x the largest move, far beyond its own
    c = compare_tensor(y.float(), t.float(), t, constants=moved)
    assert not c.ok and c.worst_index == (1,) and "float constants rounded to fp32" in c.message


def test_compare_a_float64_reference_moves_when_its_inputs_move_by_one_ulp():
    """The spread that stands in for PyTorch's own error where it is 0 by construction (a float64 problem's
    reference is its own truth): the one-ulp nudge was computed in float32, so float64 inputs never moved."""
    from kernel_lsp.checker.verify.probes import reference_spread
    x = torch.randn(32, 200, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    (spread,) = reference_spread(lambda x: torch.softmax(x, dim=-1), [x], [torch.softmax(x, dim=-1)], [])
    assert 0 < spread < 1e-14


def test_compare_no_budget_is_below_half_an_ulp_at_the_truth():
    """A truth below the output dtype's smallest subnormal rounds to zero there: that is no error. The ulp terms of
    the budget vanish with the truth; its floor, half the smallest subnormal, does not. One subnormal off a zero
    truth is still flagged."""
    t = torch.full((8,), 1e-46, dtype=torch.float64)  # fp32's smallest subnormal is 1.4e-45
    r = t.float()
    y = torch.zeros(8)
    assert compare_tensor(y, r, t).ok
    zero = torch.zeros(8, dtype=torch.float64)
    y[3] = torch.finfo(torch.float32).tiny * 2.0**-23  # the smallest fp32 subnormal
    assert not compare_tensor(y, torch.zeros(8), zero).ok


def test_the_float64_reference_makes_its_own_tensors_in_float64():
    """A reference with no float inputs (logspace from a length): its truth is computed with float64 as the default
    dtype, and the default is restored after, also when the reference raises."""
    import inspect

    from kernel_lsp.checker.problem.problem import float64_reference

    def ref(n):
        return torch.logspace(0.0, 3.0, n)

    def broken(n):
        raise ValueError(n)

    truth = float64_reference(ref)(1000)
    assert truth.dtype == torch.float64 and torch.get_default_dtype() == torch.float32
    assert (truth - ref(1000).double()).abs().max() > 0  # PyTorch's float32 error is now measurable
    assert inspect.unwrap(float64_reference(ref)) is ref
    try:
        float64_reference(broken)(3)
    except ValueError:
        pass
    assert torch.get_default_dtype() == torch.float32

    class Model(torch.nn.Module):
        def forward(self, n):
            return torch.ones(n) / 3

    model = float64_reference(Model())
    assert model(4).dtype == torch.float64 and type(model).forward is Model.forward
    assert torch.get_default_dtype() == torch.float32


def test_compare_a_serial_sum_of_a_constant_row_gets_the_worst_case_floor():
    """A kernel that sums a row one term after another in fp32 (tests/corpus/ok_sigmoid_mean_serial.py) is off by
    about sqrt(n) u times the sum on random rows, but on the structured variant's constant row every rounding leans
    the same way: on an H200 the mean of 2048 equal terms came out 1.1e-5 off (2.5 times the sqrt(n) floor). That row
    is judged with the worst case, n u; a random row keeps sqrt(n)'s floor, so an error that size is still caught."""
    import numpy as np
    n, c = 2048, np.float32(0.8175744)
    acc = np.float32(0.0)
    for _ in range(n):  # the serial order, in fp32
        acc = np.float32(acc + c)
    y = torch.tensor([float(np.float32(acc / np.float32(n)))], dtype=torch.float32)
    t = torch.tensor([float(c)], dtype=torch.float64)
    r = t.float()  # PyTorch's own mean of a constant row is exact to the ulp
    args = {"abs_terms": t.clone(), "terms": float(n)}
    grown = float((y.double() - t).abs())
    assert grown > 2 * n ** 0.5 * 2.0 ** -24 * float(c)  # past the sqrt(n) floor, within n u
    assert compare_tensor(y, r, t, correlated=True, **args).ok
    assert not compare_tensor(y, r, t, **args).ok


def test_compare_an_integer_element_may_take_the_float64_paths_value_where_pytorchs_own_differs():
    """round(x / s) at a quotient a few ulps from a tie: on an H100 PyTorch divided by the scalar 7.0 through its
    reciprocal and rounded 3.5 - 1 ulp down to 3, a kernel with correctly rounded divisions (and the float64 path) got
    4 (tests/corpus/ok_int4_quantize_ties_even.py). Where PyTorch and the float64 path agree, as at an exact tie,
    their value is the only right one: rounding ties away from zero is still an error there."""
    y = torch.tensor([4, 2, 7], dtype=torch.int8)
    r = torch.tensor([3, 2, 7], dtype=torch.int8)  # PyTorch in the task's dtype, off at the first element
    t = torch.tensor([4, 2, 7], dtype=torch.int8)  # the reference's float64 path, cast as it casts
    assert compare_tensor(y, r, t).ok and compare_tensor(r.clone(), r, t).ok
    assert not compare_tensor(torch.tensor([4, 3, 7], dtype=torch.int8), r, t).ok  # 2.5 -> 3: half away from zero
    assert not compare_tensor(y, r, r).ok  # no float64 truth: PyTorch's own result is exact


def test_compare_a_nan_finding_also_judges_the_finite_elements():
    t = torch.tensor([0.25, 0.5, 0.25, 1.0], dtype=torch.float64)
    r = t.float()
    wrong = compare_tensor(torch.tensor([0.9, 0.5, 0.25, float("nan")]), r, t)
    assert wrong.code == "KL201" and "the finite elements are wrong too: output[0] = 0.9" in wrong.message
    right = compare_tensor(torch.tensor([0.25, 0.5, 0.25, float("nan")]), r, t)
    assert right.code == "KL201" and "finite elements" not in right.message
