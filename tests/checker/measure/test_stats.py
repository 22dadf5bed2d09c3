"""Medians and bootstrap intervals on synthetic timing samples (checker/measure/stats.py)."""

from __future__ import annotations

import random

import pytest

from kernel_lsp.checker.measure.stats import median, median_interval, percentile, ratio_of_medians, relative_spread


def lognormal(center: float, sigma: float, n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [center * rng.lognormvariate(0.0, sigma) for _ in range(n)]


def test_stats_median_and_percentile():
    assert median([3.0, 1.0, 2.0]) == 2.0 and median([4.0, 1.0, 2.0, 3.0]) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 50) == 3.0 and percentile([0.0, 10.0], 25) == 2.5
    with pytest.raises(ValueError):
        median([])


def test_stats_ratio_interval_covers_the_true_ratio_and_is_reproducible():
    base, impl = lognormal(41.0, 0.05, 100, 1), lognormal(25.4, 0.05, 100, 2)
    ci = ratio_of_medians(base, impl)
    assert ci.low < 41.0 / 25.4 < ci.high and ci.low < ci.estimate < ci.high
    assert ratio_of_medians(base, impl) == ci  # the same samples give the same interval


def test_stats_interval_narrows_with_more_samples():
    few = ratio_of_medians(lognormal(10, 0.1, 20, 3), lognormal(10, 0.1, 20, 4))
    many = ratio_of_medians(lognormal(10, 0.1, 400, 5), lognormal(10, 0.1, 400, 6))
    assert (many.high - many.low) < 0.5 * (few.high - few.low)


def test_stats_equal_sides_give_an_interval_that_contains_one():
    ci = ratio_of_medians(lognormal(10, 0.1, 60, 7), lognormal(10, 0.1, 60, 8))
    assert ci.contains(1.0) and not ci.below(1.0) and not ci.above(1.0)


def test_stats_a_clear_slowdown_lies_wholly_below_one():
    ci = ratio_of_medians(lognormal(25.4, 0.03, 50, 9), lognormal(41.0, 0.03, 50, 10))
    assert ci.below(1.0) and 0.58 < ci.estimate < 0.66


def test_stats_coverage_of_the_95_percent_interval_on_repeated_experiments():
    """Over 60 experiments with a known ratio, the interval should miss it rarely (about 5%, allow up to 20%)."""
    misses = 0
    for k in range(60):
        ci = ratio_of_medians(lognormal(12.0, 0.08, 40, 100 + k), lognormal(8.0, 0.08, 40, 500 + k), resamples=500)
        misses += not ci.contains(1.5)
    assert misses <= 12


def test_stats_median_interval_and_spread():
    xs = lognormal(5.0, 0.02, 80, 11)
    ci = median_interval(xs)
    assert ci.low <= median(xs) <= ci.high
    assert relative_spread([100.0, 101.0, 99.0, 102.0]) == pytest.approx(102.0 / 100.5 - 1)


def test_stats_clustered_interval_holds_the_spread_between_placements():
    """Four memory placements at +-1.5%, each very steady: the plain interval is far too narrow to cover another
    run's placements; clustering by placement widens it to the spread between them."""
    xs, groups = [], []
    for g, offset in enumerate([1.0, 1.015, 0.985, 1.01]):
        xs += lognormal(100 * offset, 0.003, 50, 20 + g)
        groups += [g] * 50
    plain, clustered = median_interval(xs), median_interval(xs, groups=groups)
    assert (clustered.high - clustered.low) > 3 * (plain.high - plain.low)
    assert clustered.low < 99.5 and clustered.high > 101.0
    ratio = ratio_of_medians(xs, xs, numerator_groups=groups, denominator_groups=groups)
    assert ratio.contains(1.0) and ratio.high - ratio.low > 0.01


def test_stats_row_medians_ignoring_nan_are_numpys_nanmedian():
    import numpy as np

    from kernel_lsp.checker.measure.stats import _row_medians_ignoring_nan
    rng = np.random.default_rng(3)
    rows = rng.exponential(size=(500, 37))
    counts = rng.integers(1, 38, size=500)  # each row padded with NaN after its own count, as the bootstrap pads
    rows[np.arange(37)[None, :] >= counts[:, None]] = np.nan
    assert np.array_equal(_row_medians_ignoring_nan(rows), np.nanmedian(rows, axis=1))
