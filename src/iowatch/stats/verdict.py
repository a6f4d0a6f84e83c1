"""A/B verdicts: one cell (compare) or a whole matrix at once (compare_matrix).

Per cell (DESIGN.md §4): n, mean, median, sd on each side; the % change of the
mean with a bootstrap confidence interval; the Mann–Whitney U p-value; Cliff's
delta; and across the matrix Benjamini–Hochberg adjusted p-values.

The outcome of a cell with at least two samples on each side:
- regression / improvement (by the metric's direction) when the adjusted
  p-value is below the false-discovery rate, the CI excludes 0 and the change
  is at least the study's minimum effect;
- no-change when the whole CI lies inside ±minimum effect (an effect that
  matters is ruled out);
- inconclusive otherwise, with about how many more runs per side would
  resolve the minimum effect at the observed noise.
A side with one sample (published numbers) is judged by size only. Metrics
whose direction is "info" are never a regression or an improvement.

The matrix is computed in bulk (cells grouped by their sample counts), so a
1,000-cell matrix with a 2,000-resample bootstrap takes well under a second.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np
from scipy.special import comb
from scipy.stats import norm

from iowatch.metrics import DIRECTIONS, HIGHER, INFO
from iowatch.stats.wording import sentence

REGRESSION, IMPROVEMENT, NO_CHANGE, INCONCLUSIVE = "regression", "improvement", "no-change", "inconclusive"
OUTCOMES = (REGRESSION, IMPROVEMENT, NO_CHANGE, INCONCLUSIVE)
POWER = 0.8  # needs_runs: runs per side that detect the minimum effect 80% of the time
MW_EFFICIENCY = 0.955  # Mann–Whitney's asymptotic efficiency against the t-test (3/π)


@dataclass(frozen=True)
class SideStats:
    n: int
    mean: float
    median: float
    sd: float  # sample standard deviation (n - 1); 0 for one sample
    min: float
    max: float


@dataclass(frozen=True)
class Verdict:
    base: SideStats
    candidate: SideStats
    # Change of the mean, in % of the base mean: throughput numbers are totals
    # over time (fio's aggrb is one), so the mean is what adds up and what
    # published numbers report; the median is beside it in SideStats.
    change_pct: float | None  # None when the base mean is 0 and the candidate's is not
    ci_low: float | None
    ci_high: float | None
    p_value: float | None  # Mann–Whitney U, two-sided; None when a side has one sample
    cliffs_delta: float  # P(candidate > base) - P(candidate < base)
    direction: str
    min_effect_pct: float
    outcome: str
    needs_runs: int | None  # about this many more runs per side, when inconclusive
    size_only: bool  # a side has one sample: judged by size only
    words: str


@dataclass(frozen=True)
class CellKey:
    study: str
    host: str
    device_class: str
    device: str
    filesystem: str
    group: str
    metric: str


@dataclass(frozen=True)
class CellInput:
    key: CellKey
    base: Sequence[float]
    candidate: Sequence[float]
    direction: str
    min_effect_pct: float = 5.0


@dataclass(frozen=True)
class CellVerdict(Verdict):
    key: CellKey
    p_adjusted: float | None  # Benjamini–Hochberg across the compared matrix


# --- the tests, vectorized over cells of equal sample counts ----------------

@lru_cache(maxsize=256)
def _mw_counts(m: int, n: int) -> np.ndarray:
    """How many arrangements of m + n distinct values give U = 0..m*n."""
    if m == 0 or n == 0:
        return np.ones(1)
    out = np.zeros(m * n + 1)
    out[n:] += _mw_counts(m - 1, n)  # the largest value is from the first sample: U grows by n
    out[: m * (n - 1) + 1] += _mw_counts(m, n - 1)
    return out


@lru_cache(maxsize=256)
def _mw_exact_sf(m: int, n: int) -> np.ndarray:
    """P(U >= u) under the null, for u = 0..m*n."""
    counts = _mw_counts(m, n)
    return np.cumsum(counts[::-1])[::-1] / comb(m + n, m, exact=True)


def _tie_sums(rows: np.ndarray) -> np.ndarray:
    """Σ(t³ - t) over the groups of tied values in each row."""
    out = np.zeros(len(rows))
    srt = np.sort(rows, axis=1)
    tied = np.flatnonzero((np.diff(srt, axis=1) == 0).any(axis=1))
    for i in tied:
        _, t = np.unique(srt[i], return_counts=True)
        out[i] = float((t ** 3 - t).sum())
    return out


def _mann_whitney(u_base: np.ndarray, tie_sums: np.ndarray, nb: int, nc: int) -> np.ndarray:
    """Two-sided p-values as scipy.stats.mannwhitneyu(method='auto') gives them:
    exact without ties when a side has at most 8 samples, else the normal
    approximation with tie and continuity corrections."""
    nbc = nb * nc
    u = np.maximum(u_base, nbc - u_base)
    p = np.empty(len(u))
    exact = (tie_sums == 0) & (min(nb, nc) <= 8) & (max(nb, nc) <= 100)
    if exact.any():
        sf = _mw_exact_sf(nb, nc)
        p[exact] = 2 * sf[np.rint(u[exact]).astype(int)]
    approx = ~exact
    if approx.any():
        n = nb + nc
        var = nbc / 12 * ((n + 1) - tie_sums[approx] / (n * (n - 1)))
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (u[approx] - nbc / 2 - 0.5) / np.sqrt(var)
        p[approx] = np.where(var > 0, 2 * norm.sf(z), 1.0)
    return np.clip(p, 0.0, 1.0)


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (step-up), in the input's order."""
    p = np.asarray(p_values, dtype=float)
    m = len(p)
    if m == 0:
        return []
    order = np.argsort(p)
    ranked = p[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return out.tolist()


def _boot_weights(n: int, n_boot: int, seed: int) -> np.ndarray:
    """Resampling weights (n_boot × n, rows sum to 1): a bootstrap mean is one
    matrix product, so a whole matrix of cells resamples at once."""
    rng = np.random.default_rng([seed, n])
    return rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot) / n


def _smallest_decidable_n(alpha: float) -> int:
    """Fewest runs per side at which an exact two-sided Mann–Whitney can reach p < alpha."""
    n = 2
    while 2 / comb(2 * n, n) >= alpha:
        n += 1
    return n


def _needs_runs(b: SideStats, c: SideStats, min_effect_pct: float, alpha: float) -> int:
    """Runs per side for 80% power at the minimum effect (two-sample normal
    formula at the observed pooled sd, divided by Mann–Whitney's efficiency),
    minus what each side already has."""
    dof = b.n + c.n - 2
    pooled = math.sqrt(((b.n - 1) * b.sd ** 2 + (c.n - 1) * c.sd ** 2) / dof) if dof > 0 else 0.0
    delta = abs(b.mean) * min_effect_pct / 100
    z = norm.ppf(1 - alpha / 2) + norm.ppf(POWER)
    want = 2 * (z * pooled / delta) ** 2 / MW_EFFICIENCY if delta > 0 else 0.0
    want = max(math.ceil(want), _smallest_decidable_n(alpha))
    return max(1, want - min(b.n, c.n))


def _outcome(direction: str, change: float | None, ci: tuple[float | None, float | None],
             p_adj: float | None, min_effect: float, size_only: bool, fdr: float) -> str:
    if direction == INFO:
        return NO_CHANGE
    if change is None:
        return INCONCLUSIVE
    worse = change < 0 if direction == HIGHER else change > 0
    decided = REGRESSION if worse else IMPROVEMENT
    big = abs(change) >= min_effect
    if size_only:
        return decided if big else NO_CHANGE
    low, high = ci
    if low is None or high is None:
        return INCONCLUSIVE
    if p_adj is not None and p_adj < fdr and big and (low > 0 or high < 0):
        return decided
    if -min_effect < low and high < min_effect:
        return NO_CHANGE
    return INCONCLUSIVE


def _side_stats(x: np.ndarray) -> list[SideStats]:
    n = x.shape[1]
    sd = x.std(axis=1, ddof=1) if n > 1 else np.zeros(len(x))
    return [SideStats(n, float(a), float(m), float(s), float(lo), float(hi)) for a, m, s, lo, hi in
            zip(x.mean(axis=1), np.median(x, axis=1), sd, x.min(axis=1), x.max(axis=1))]


def _group_stats(B: np.ndarray, C: np.ndarray, alpha: float, n_boot: int, seed: int) -> dict:
    """Everything but the outcome for k cells with nb and nc samples (B: k×nb, C: k×nc)."""
    nb, nc = B.shape[1], C.shape[1]
    mb, mc = B.mean(axis=1), C.mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        change = np.where(mb != 0, (mc - mb) / np.abs(mb) * 100, np.where(mc == 0, 0.0, np.nan))
        boot_b = B @ _boot_weights(nb, n_boot, seed).T
        boot_c = C @ _boot_weights(nc, n_boot, seed + 1).T
        boot = (boot_c - boot_b) / np.abs(boot_b) * 100
        boot[(boot_b == 0) & (boot_c == 0)] = 0.0  # nothing on either side: no change
        boot[np.isnan(boot)] = np.inf
        ci = np.percentile(boot, [100 * alpha / 2, 100 * (1 - alpha / 2)], axis=1)
    gt = (C[:, None, :] > B[:, :, None]).sum(axis=(1, 2))
    lt = (C[:, None, :] < B[:, :, None]).sum(axis=(1, 2))
    cliffs = (gt - lt) / (nb * nc)
    if nb > 1 and nc > 1:
        u_base = lt + 0.5 * (nb * nc - gt - lt)  # scipy's U of the first sample
        p = _mann_whitney(u_base, _tie_sums(np.hstack([B, C])), nb, nc)
    else:
        p = np.full(len(B), np.nan)
    return {"base": _side_stats(B), "candidate": _side_stats(C), "change": change,
            "ci_low": ci[0], "ci_high": ci[1], "cliffs": cliffs, "p": p}


def _finite(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


def compare_matrix(cells: Sequence[CellInput], *, fdr: float = 0.05, alpha: float = 0.05,
                   n_boot: int = 2000, seed: int = 0) -> list[CellVerdict]:
    """Verdicts for every cell, p-values adjusted by Benjamini–Hochberg at `fdr`
    across the cells that have a p-value. CIs are at level 1 - alpha."""
    groups: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, cell in enumerate(cells):
        if cell.direction not in DIRECTIONS:
            raise ValueError(f"{cell.key}: direction {cell.direction!r} is not one of {DIRECTIONS}")
        if len(cell.base) == 0 or len(cell.candidate) == 0:
            raise ValueError(f"{cell.key}: a side has no samples")
        groups[(len(cell.base), len(cell.candidate))].append(i)
    per_cell: list[dict] = [{} for _ in cells]
    for (nb, nc), idx in groups.items():
        B = np.array([cells[i].base for i in idx], dtype=float).reshape(len(idx), nb)
        C = np.array([cells[i].candidate for i in idx], dtype=float).reshape(len(idx), nc)
        g = _group_stats(B, C, alpha, n_boot, seed)
        for j, i in enumerate(idx):
            per_cell[i] = {k: v[j] for k, v in g.items()}
    with_p = [i for i, c in enumerate(per_cell) if not math.isnan(c["p"])]
    adjusted = dict(zip(with_p, benjamini_hochberg([per_cell[i]["p"] for i in with_p])))
    out = []
    for i, (cell, s) in enumerate(zip(cells, per_cell)):
        size_only = min(len(cell.base), len(cell.candidate)) == 1
        change = _finite(s["change"])
        ci = (_finite(s["ci_low"]), _finite(s["ci_high"])) if change is not None else (None, None)
        if None in ci:
            ci = (None, None)  # the base resampled to 0: no finite interval
        p_adj = adjusted.get(i)
        outcome = _outcome(cell.direction, change, ci, p_adj, cell.min_effect_pct, size_only, fdr)
        needs = (_needs_runs(s["base"], s["candidate"], cell.min_effect_pct, fdr)
                 if outcome == INCONCLUSIVE and not size_only and change is not None else None)
        words = sentence(cell.key.metric, cell.direction, s["base"].mean, s["candidate"].mean, change,
                         outcome, size_only=size_only, min_effect_pct=cell.min_effect_pct,
                         needs_runs=needs)
        out.append(CellVerdict(
            base=s["base"], candidate=s["candidate"], change_pct=change, ci_low=ci[0], ci_high=ci[1],
            p_value=None if math.isnan(s["p"]) else float(s["p"]), cliffs_delta=float(s["cliffs"]),
            direction=cell.direction, min_effect_pct=cell.min_effect_pct, outcome=outcome,
            needs_runs=needs, size_only=size_only, words=words, key=cell.key, p_adjusted=p_adj))
    return out


def compare(base: Sequence[float], candidate: Sequence[float], *, direction: str,
            min_effect_pct: float = 5.0, alpha: float = 0.05, n_boot: int = 2000, seed: int = 0,
            metric: str | None = None) -> Verdict:
    """The verdict on one cell: compare_matrix of a matrix of one (its adjusted
    p-value is its p-value). `metric` only names the thing in `words`."""
    key = CellKey("", "", "", "", "", "", metric or "")
    (v,) = compare_matrix([CellInput(key, base, candidate, direction, min_effect_pct)],
                          fdr=alpha, alpha=alpha, n_boot=n_boot, seed=seed)
    fields = {f: getattr(v, f) for f in Verdict.__dataclass_fields__}
    return Verdict(**fields)


def mann_whitney_p(x: Sequence[float], y: Sequence[float]) -> float:
    """Two-sided Mann–Whitney U p-value of two samples (at least 2 each)."""
    X, Y = np.asarray([x], dtype=float), np.asarray([y], dtype=float)
    if X.shape[1] < 2 or Y.shape[1] < 2:
        raise ValueError("Mann–Whitney needs at least two samples on each side")
    return float(_group_stats(X, Y, 0.05, 1, 0)["p"][0])


def cliffs_delta(x: Sequence[float], y: Sequence[float]) -> float:
    """Cliff's delta of y against x: P(y > x) - P(y < x) over all pairs."""
    X, Y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return float(((Y[None, :] > X[:, None]).sum() - (Y[None, :] < X[:, None]).sum()) / (len(X) * len(Y)))
