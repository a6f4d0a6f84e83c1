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

This module finds candidates and charges for having picked them
(`candidates`: e-divisive on one value per kernel, then the selection test
over the family). Whether a candidate is a regression is not decided here:
iowatch.judging.confirm_change_points judges the repetitions of the segments
either side with compare_sides, the A/B every comparison uses.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy.stats import ttest_ind_from_stats

from iowatch.cells import CellKey
from iowatch.stats.verdict import benjamini_hochberg


@dataclass(frozen=True)
class ChangePoint:
    index: int  # the first value after the change
    before_mean: float
    after_mean: float
    change_pct: float  # after against before, in % of before
    p_value: float  # two-sided t-test of the segments either side


@dataclass(frozen=True)
class Candidate(ChangePoint):
    """A change point that holds the selection test over its family, with the
    segments either side (history indices [start, index) and [index, end)),
    each bounded by the neighbouring points and by the window."""
    start: int = 0
    end: int = 0
    p_selection: float = 1.0  # permutation p of the split, given that it was chosen as the best


# Permutations of the selection test (selection_p): the smallest p it can give is
# 1/(PERMUTATIONS + 1) = 0.0005, below what Benjamini–Hochberg needs over a
# family of 40 histories at the shipped 3.5% (0.000875; 999 permutations'
# floor of 0.001 let nothing through there).
PERMUTATIONS = 1999


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


def change_points(values: Sequence[float], *, min_magnitude_pct: float,
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


@dataclass(frozen=True)
class History:
    """One series' values in order (one per kernel, the median of its
    repetitions), as the change points read it; min_effect_pct is the smallest
    step worth a candidate (the study's minimum effect)."""
    key: CellKey
    values: Sequence[float]
    min_effect_pct: float
    repetitions: Sequence[int] = ()  # each kernel's count of repetitions, when known


def _split_t(rows: np.ndarray) -> np.ndarray:
    """|Student t| (variance pooled over the whole row) of x[:τ] against x[τ:]
    for every τ from 2 to n - 2, for each row of `rows` (shape (P, n))."""
    n = rows.shape[1]
    taus = np.arange(2, n - 1)
    c1, c2 = np.cumsum(rows, axis=1), np.cumsum(rows * rows, axis=1)
    s1, s2 = c1[:, taus - 1], c2[:, taus - 1]
    t1, t2 = c1[:, -1:], c2[:, -1:]
    left, right = s1 / taus, (t1 - s1) / (n - taus)
    within = (s2 - taus * left ** 2) + (t2 - s2 - (n - taus) * right ** 2)
    se = np.sqrt(np.maximum(within / (n - 2), 1e-300) * (1 / taus + 1 / (n - taus)))
    return np.abs(right - left) / se


def selection_p(values: Sequence[float], index: int, permutations: int = PERMUTATIONS) -> float:
    """How often a series with no change at all has some split as strong as
    the one found at `index`: the permutation p-value of the split's t against
    the largest t over every split of the permuted values.

    The detector chose this split because it separates the values best; a
    t-test of the same two segments then ignores that choice and calls random
    dips significant (on 40 flat histories of 40 values at CV 5%, most nights
    "confirmed" a regression somewhere). Comparing with the best split of
    shuffled values charges for the choice, as Matteson & James's e-divisive
    does with its permutation test. Logs when every value is positive, as the
    A/B test does. Deterministic: the permutations come from a fixed seed."""
    x = np.asarray(values, dtype=float)
    if len(x) < 5 or not 2 <= index <= len(x) - 2:
        return 1.0
    if (x > 0).all():
        x = np.log(x)
    observed = _split_t(x[None, :])[0, index - 2]
    rng = np.random.default_rng(0)
    shuffled = np.array([rng.permutation(x) for _ in range(permutations)])
    null = _split_t(shuffled).max(axis=1)
    return float((1 + np.count_nonzero(null >= observed * (1 - 1e-12))) / (permutations + 1))


def selection_ps(values: Sequence[float], indices: Sequence[int], level: float) -> dict[int, float]:
    """selection_p of each of a history's change points, tested top-down as
    e-divisive does: the strongest split of the whole history first; once one
    holds (p <= level), the history is cut there and the next strongest split
    is tested within its piece. The points never reached keep p = 1: on a flat
    history the detector's chosen neighbours make each piece look like a step,
    and testing each piece on its own would call them significant."""
    x = np.asarray(values, dtype=float)
    logged = np.log(x) if (x > 0).all() else x
    out = {i: 1.0 for i in indices}
    cuts = [0, len(x)]  # sorted: the history's ends and the points that held

    def piece(i: int) -> tuple[int, int]:
        k = bisect.bisect_left(cuts, i)
        return cuts[k - 1], cuts[k]

    def strength(i: int) -> float:
        a, b = piece(i)
        return _split_t(logged[None, a:b])[0, i - a - 2] if b - a >= 5 and 2 <= i - a <= b - a - 2 else 0.0

    left = set(indices)
    while left:
        best = max(left, key=strength)
        a, b = piece(best)
        out[best] = selection_p(x[a:b], best - a)
        if out[best] > level:
            break
        left.discard(best)
        bisect.insort(cuts, best)
    return out


def candidates(histories: Sequence[History], *, fdr: float, max_pvalue: float = 0.01,
               window: int = 30) -> dict[CellKey, list[Candidate]]:
    """The change points of several histories, judged as one family by the selection test.

    Each history's points (e-divisive means, magnitude at least its minimum
    effect) must pass the selection test (selection_ps): the split is stronger
    than the best split of the same values shuffled, so it is not an artefact
    of having been picked as the best. Its p-values hold Benjamini–Hochberg at
    `fdr` over every history given, points or not: a nightly of 40 deciding
    series is one family, as the cells of one A/B comparison are. The A/B of
    the segments' repetitions is the policy's (iowatch.judging)."""
    found: list[Candidate] = []
    for h in histories:
        x = np.asarray(h.values, dtype=float)
        cps = change_points(x, min_magnitude_pct=h.min_effect_pct, max_pvalue=max_pvalue, window=window)
        bounds = [0, *(c.index for c in cps), len(x)]
        p_sel = selection_ps(x, [c.index for c in cps], fdr) if cps else {}
        for i, cp in enumerate(cps):
            found.append((h.key, Candidate(
                cp.index, cp.before_mean, cp.after_mean, cp.change_pct, cp.p_value,
                start=max(bounds[i], cp.index - window), end=min(bounds[i + 2], cp.index + window),
                p_selection=p_sel[cp.index])))
    adjusted = benjamini_hochberg([c.p_selection for _, c in found], len(histories))
    out: dict[CellKey, list[Candidate]] = {}
    for (key, c), adj in zip(found, adjusted):
        if adj <= fdr:
            out.setdefault(key, []).append(c)
    return out
