"""Rounding ties made where the reference itself rounds (kernel_lsp/checker/verify/plan/ties.py)."""

import pytest
import torch

from kernel_lsp.checker.verify.plan.ties import NotApplicable, rounded_values, tie_inputs


def int4(x):
    s = (x.abs().amax(dim=1, keepdim=True) / 7.0).clamp_min(1e-8)
    return torch.round(x / s).to(torch.int8)


def test_ties_land_after_a_scale_computed_from_the_data():
    """absmax / 7 of grid values is no power of two, so the grid variant never put x / scale on a half: here every
    element but each row's largest is an exact tie, in float32 and in float64 (issue 30 item 3)."""
    torch.manual_seed(0)
    x = torch.randn(16, 64)
    (tied,) = tie_inputs(int4, int4, [x])
    v32 = rounded_values(int4, [tied])[0]
    v64 = rounded_values(int4, [tied.double()])[0]
    for v in (v32, v64):
        halves = (v - torch.floor(v) == 0.5).double().mean()
        assert float(halves) > 0.9, float(halves)
    assert torch.equal(v32.double(), v64)
    # Ties broken away from zero and to even disagree on about half of them.
    away = torch.sign(v32) * torch.floor(v32.abs() + 0.5)
    assert float((away != torch.round(v32)).double().mean()) > 0.3


def test_ties_do_not_apply_where_nothing_is_rounded():
    with pytest.raises(NotApplicable):
        tie_inputs(lambda x: x * 2, lambda x: x * 2, [torch.randn(8, 8)])


def test_ties_land_through_a_scale_passed_as_an_input():
    """A scale per row passed beside the data (calibrated, drawn in [0.01, 0.03]) is no power of two, so moving x
    alone made no tie; the scales are put on powers of two first, and then x / scale is a half at most elements
    (issue 40: ties through input scales)."""
    def per_row(x, scale):
        return torch.round(x / scale[:, None]).clamp(-128, 127).to(torch.int8)

    torch.manual_seed(0)
    x, scale = 3 * torch.randn(16, 64), torch.rand(16) * 0.02 + 0.01
    tied, tied_scale = tie_inputs(per_row, per_row, [x, scale])
    assert torch.equal(tied_scale, torch.exp2(torch.round(torch.log2(tied_scale))))
    v = (tied.double() / tied_scale.double()[:, None]).reshape(-1)
    inside = v.abs() < 127
    assert float((v[inside] - torch.floor(v[inside]) == 0.5).double().mean()) > 0.9
