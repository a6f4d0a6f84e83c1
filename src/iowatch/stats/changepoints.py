"""Change points in a metric's history (the nightly series), by e-divisive means.

The algorithm is Apache Otava's (Hunter: Fleming et al., ICPE 2023,
doi:10.1145/3578244.3583719): e-divisive means (Matteson & James) picks the
split that most separates a sliding window, a t-test keeps it when p is below
a relaxed threshold ("weak" points), then a merge pass drops the weakest
points until each remaining one has p < max_pvalue and a magnitude above
min_magnitude.

Why our own ~100 lines and not the library: apache-otava pins numpy 2.2 and
pulls BigQuery, gRPC and Slack clients (about 116 MB), and
signal-processing-algorithms needs numpy < 2. Otava stays the
reference: tests/stats/test_changepoints.py holds this module against
otava.analysis.compute_change_points on planted steps when Otava is installed
(the `otava` extra in pyproject.toml).

A change point is only raised as an alert once confirmed_change_points has
checked it with the same A/B compare a maintainer's comparison uses.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy.stats import ttest_ind_from_stats

from iowatch.stats.verdict import IMPROVEMENT, REGRESSION, Verdict, compare


@dataclass(frozen=True)
class ChangePoint:
    index: int  # the first value after the change
    before_mean: float
    after_mean: float
    change_pct: float  # after against before, in % of before
    p_value: float  # two-sided t-test of the segments either side


@dataclass(frozen=True)
class ConfirmedChangePoint(ChangePoint):
    verdict: Verdict  # the A/B compare of the segments before and after


def _qhat(x: np.ndarray) -> np.ndarray:
    """Matteson & James's divergence Q(τ) of x[:τ] against x[τ:] for every τ
    (exponent 1); index τ of the result, 0 where a side has under 2 values."""
    n = len(x)
    d = np.abs(x[:, None] - x[None, :])
    upper = np.triu(d, k=1)
    # within_left[τ]: Σ d over pairs inside x[:τ]; within_right[τ]: inside x[τ:]
    within_left = np.concatenate([[0.0], np.cumsum(upper.sum(axis=0))])[:n + 1]
    within_right = np.concatenate([np.cumsum(upper.sum(axis=1)[::-1])[::-1], [0.0]])
    total = upper.sum()
    q = np.zeros(n + 1)
    for tau in range(2, n - 1):
        m, k = tau, n - tau
        cross = total - within_left[tau] - within_right[tau]
        q[tau] = (m * k / n) * (2 * cross / (m * k) - within_left[tau] / (m * (m - 1) / 2)
                                - within_right[tau] / (k * (k - 1) / 2))
    return q


def _ttest(left: np.ndarray, right: np.ndarray) -> tuple[float, float, float]:
    ml, mr = float(left.mean()), float(right.mean())
    sl = float(left.std()) if len(left) > 1 else 0.0
    sr = float(right.std()) if len(right) > 1 else 0.0
    if len(left) + len(right) <= 2:
        return ml, mr, 1.0
    _, p = ttest_ind_from_stats(ml, sl, len(left), mr, sr, len(right))
    return ml, mr, 1.0 if np.isnan(p) else float(p)


def _window_points(x: np.ndarray, max_pvalue: float) -> list[int]:
    """E-divisive within one window: split where Q is largest, keep splitting
    the pieces while the t-test of the split piece says p < max_pvalue."""
    bounds = [0, len(x)]
    points: list[int] = []
    while True:
        best = None
        for a, b in zip(bounds, bounds[1:]):
            if b - a < 4:
                continue
            q = _qhat(x[a:b])
            tau = int(np.argmax(q))
            if q[tau] > 0 and (best is None or q[tau] > best[0]):
                best = (q[tau], a, a + tau, b)
        if best is None:
            return points
        _, a, tau, b = best
        if _ttest(x[a:tau], x[tau:b])[2] >= max_pvalue:
            return points
        points.append(tau)
        bounds = sorted(bounds + [tau])


def _stats(x: np.ndarray, points: list[int]) -> list[ChangePoint]:
    """Each point judged on the segments between its neighbours."""
    bounds = [0, *points, len(x)]
    out = []
    for i, p in enumerate(points):
        ml, mr, pv = _ttest(x[bounds[i]:p], x[p:bounds[i + 2]])
        change = (mr / ml - 1) * 100 if ml else 0.0
        out.append(ChangePoint(p, ml, mr, change, pv))
    return out


def _magnitude(cp: ChangePoint) -> float:
    """Otava's magnitude: the larger of the forward and backward relative change, in %."""
    back = (cp.before_mean / cp.after_mean - 1) * 100 if cp.after_mean else 0.0
    return max(abs(cp.change_pct), abs(back))


def change_points(values: Sequence[float], *, min_magnitude_pct: float = 5.0,
                  max_pvalue: float = 0.01, window: int = 30) -> list[ChangePoint]:
    """Change points of a series, oldest first (index: the first value after the change)."""
    x = np.asarray(values, dtype=float)
    if window < 4:
        raise ValueError("window must be at least 4")
    # The split pass uses a relaxed threshold, as Otava does (10x below 0.05).
    relaxed = max_pvalue * 10 if max_pvalue < 0.05 else min(max_pvalue * 2, 1.0)
    found: set[int] = set()
    start, step = 0, window // 2
    while start < len(x):
        end = min(start + window, len(x))
        new = [start + p for p in _window_points(x[start:end], relaxed)]
        found.update(new)
        start = max(max(new, default=0), start + step)
    points = sorted(found)
    # Merge: drop the weakest point (highest p, else smallest magnitude) until all hold.
    while points:
        cps = _stats(x, points)
        weakest = max(cps, key=lambda c: c.p_value)
        if weakest.p_value < max_pvalue:
            weakest = min(cps, key=_magnitude)
            if _magnitude(weakest) > min_magnitude_pct:
                return cps
        points.remove(weakest.index)
    return []


def confirmed_change_points(values: Sequence[float], direction: str, min_effect_pct: float = 5.0,
                            *, min_magnitude_pct: float | None = None, max_pvalue: float = 0.01,
                            window: int = 30, fdr: float = 0.05) -> list[ConfirmedChangePoint]:
    """The change points that the A/B compare of the segments either side
    (each bounded by the neighbouring change points and by `window`) calls a
    regression or an improvement."""
    x = np.asarray(values, dtype=float)
    cps = change_points(x, min_magnitude_pct=min_effect_pct if min_magnitude_pct is None
                        else min_magnitude_pct, max_pvalue=max_pvalue, window=window)
    bounds = [0, *(c.index for c in cps), len(x)]
    out = []
    for i, cp in enumerate(cps):
        before = x[max(bounds[i], cp.index - window):cp.index]
        after = x[cp.index:min(bounds[i + 2], cp.index + window)]
        v = compare(before, after, direction=direction, min_effect_pct=min_effect_pct, fdr=fdr)
        if v.outcome in (REGRESSION, IMPROVEMENT):
            out.append(ConfirmedChangePoint(cp.index, cp.before_mean, cp.after_mean,
                                            cp.change_pct, cp.p_value, verdict=v))
    return out
