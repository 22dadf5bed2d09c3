"""Statistics for timings: medians and bootstrap confidence intervals, as pure functions of plain numbers.

No torch and no GPU (numpy only), so the rules that turn samples into claims ("0.62x, 95% CI 0.60-0.64") are
tested on any machine with synthetic samples (tests/checker/measure/test_stats.py). The interval is a percentile bootstrap of the ratio
of two medians: each side's samples are resampled with replacement, independently, and the ratio of the two
resampled medians is collected; the 2.5th and 97.5th percentiles bound the 95% interval. Medians, not means: a
timing distribution has a long right tail (interrupts, clock changes) that a median ignores.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BOOTSTRAP_RESAMPLES = 2000


def median(xs: list[float]) -> float:
    if not xs:
        raise ValueError("median of no samples")
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def percentile(xs: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default), q in [0, 100]."""
    if not xs:
        raise ValueError("percentile of no samples")
    s = sorted(xs)
    pos = (len(s) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float

    def below(self, value: float) -> bool:
        """The whole interval lies below `value`."""
        return self.high < value

    def above(self, value: float) -> bool:
        return self.low > value

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


def ratio_of_medians(numerator: list[float], denominator: list[float], confidence: float = 0.95,
                     resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0, numerator_groups: list[int] | None = None,
                     denominator_groups: list[int] | None = None) -> Interval:
    """median(numerator) / median(denominator) with a percentile-bootstrap interval.

    For a speedup, the numerator is the baseline's times and the denominator the implementation's: 2.0 means the
    implementation takes half the time. The seed makes the interval reproducible for the same samples. With
    groups (the input copy of each sample), the bootstrap is clustered: groups are resampled, then samples within
    them, so the interval also holds the spread between memory placements, not only between calls.
    """
    if not numerator or not denominator:
        raise ValueError("a ratio needs samples on both sides")
    rng = np.random.default_rng(seed)
    estimate = median(numerator) / median(denominator)
    a = _resampled_medians(np.asarray(numerator, dtype=np.float64), resamples, rng, numerator_groups)
    b = _resampled_medians(np.asarray(denominator, dtype=np.float64), resamples, rng, denominator_groups)
    return _interval(estimate, a / b, confidence)


def _resampled_medians(xs: "np.ndarray", resamples: int, rng: "np.random.Generator",
                       groups: list[int] | None = None) -> "np.ndarray":
    if groups is None or len(set(groups)) < 2:
        picks = rng.integers(0, len(xs), size=(resamples, len(xs)))
        return np.median(xs[picks], axis=1)
    labels = np.asarray(groups)
    members = [xs[labels == g] for g in sorted(set(groups))]
    k, width = len(members), max(len(m) for m in members)
    # Within each group, `resamples` bootstrap draws (padded with NaN to a common width); then each resample
    # pools the draws of k groups chosen with replacement.
    within = np.full((k, resamples, width), np.nan)
    for c, m in enumerate(members):
        within[c, :, : len(m)] = m[rng.integers(0, len(m), size=(resamples, len(m)))]
    chosen = rng.integers(0, k, size=(resamples, k))
    pooled = within[chosen, np.arange(resamples)[:, None], :].reshape(resamples, k * width)
    return _row_medians_ignoring_nan(pooled)


def _row_medians_ignoring_nan(rows: "np.ndarray") -> "np.ndarray":
    """np.nanmedian(rows, axis=1) for rows that each hold at least one number: sorted, NaN go last, and each row's
    median is read at its own count (numpy's nanmedian takes a masked-array path, 30x slower at these sizes)."""
    ordered = np.sort(rows, axis=1)
    n = np.count_nonzero(~np.isnan(rows), axis=1)
    index = np.arange(len(rows))
    return (ordered[index, (n - 1) // 2] + ordered[index, n // 2]) / 2.0


def _interval(estimate: float, draws: "np.ndarray", confidence: float) -> Interval:
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(draws, [tail, 100.0 - tail])
    return Interval(estimate, float(low), float(high))


def median_interval(xs: list[float], confidence: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES,
                    seed: int = 0, groups: list[int] | None = None) -> Interval:
    """The median of one side with its percentile-bootstrap interval (clustered by `groups` when given)."""
    rng = np.random.default_rng(seed)
    return _interval(median(xs), _resampled_medians(np.asarray(xs, dtype=np.float64), resamples, rng, groups),
                     confidence)


def relative_spread(xs: list[float]) -> float:
    """How far the best sample lies above the median, relative to it (max / median - 1): a ceiling's own
    run-to-run spread, which a claim of exceeding that ceiling must beat."""
    m = median(xs)
    return max(xs) / m - 1.0 if m > 0 else 0.0
