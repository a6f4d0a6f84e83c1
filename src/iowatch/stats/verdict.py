"""A/B verdicts: one cell (compare) or a whole family of cells at once (compare_matrix).

Why these tests (issue 11; docs/verdicts.md has the measurements):
- The change is judged on log values with a t-test (Student's pooled t when
  the sides have equal counts, which is robust to unequal variances there;
  Welch's otherwise). Throughput and time are ratios: on the log scale the
  noise is symmetric and the test is free of scale, and the CI of the change
  comes from the same statistic, so the point, the CI and the p-value never
  disagree. Mann–Whitney, which iowatch used first, cannot go below
  p = 2/252 at 5 runs a side or 0.1 at 3: after a correction for a
  40-cell matrix it could never flag anything. Its p-value stays available
  (mann_whitney_p) as evidence for the bisect report.
- Regressions are tested one-sided in the metric's worse direction, and
  Benjamini–Hochberg controls the false-discovery rate over the family of
  the comparison's deciding cells; improvements are a second family, tested
  the same way (they never open anything).
- Each test uses the share of the rate that its look may spend
  (iowatch.stats.sequential): 5 runs a side is the first look, 20 the last,
  and a look spends what its information (the effective count) added since
  the schedule's previous look, so a fixed base never spends a level twice.
- Suspicion borrows the family's variance; confirmation does not. At 5 runs
  a side a cell's own variance rests on 8 degrees of freedom, and a per-cell
  2% needs t > 2.45 instead of the normal 2.05: that gap, not the noise,
  kept a -20% cell at CV 10% from being suspected 90% of the time. The
  screen for "suspected" uses the moderated t of Smyth (2004), the empirical
  Bayes test limma applies to thousands of genes measured a few times each:
  the family's log-scale variances give a prior (s0², and d0 degrees of
  freedom from how much more they spread than sampling explains), each
  cell's variance is shrunk toward it and the test gains d0 degrees of
  freedom. Confirmation, "no change" and the CI stay on the cell's own t:
  measured on real matrices, whose cells' noise differs (a buffered reader at
  CV 40% beside a throttled cell at CV 3%), lending variances to the
  confirmation raised clean checks' false alarms (5.3% -> 6.0%) and lost
  real 25-40% slowdowns (98.9% -> 92.0%), because a quiet cell's variance
  was pulled up and a noisy one's down. Nothing on PyPI does this alone
  (limma is R; its Python ports pull in whole RNA-seq toolkits), and it is a
  dozen lines of textbook moments: see variance_prior.

Outcomes of a cell with at least two samples a side:
- regression: the adjusted one-sided p is within the look's level and the
  slowdown is at least the study's minimum effect;
- improvement: the same, the other way;
- no-change: a slowdown beyond the minimum effect is ruled out (the 80%
  one-sided bound of the change lies inside it), said with what was ruled out;
  at the cap, a cell still undecided is "no change within X%" (bound_pct,
  the equivalence bound: the slowdown the same bound cannot rule out at its
  repetitions, rounded up)
  unless its screen holds Benjamini–Hochberg over the family at SUSPECT_P (then it stays
  suspected): an equivalence a maintainer can act on, where "unsure" at the
  cap could only be rerun for ever (issue 24: no clean 40-cell check ended
  "no change", and 36-40% ended "suspected");
- suspected: not confirmed, but the cell is unlikely to be clean (one-sided
  p <= SUSPECT_P on the moderated t, with a slowdown beyond the minimum
  effect), or,
  with fewer than FEW_RUNS a side, the drop is over BIG_DROP times the
  minimum effect: rerun to confirm;
- inconclusive: "unsure, rerun", with about how many more runs a side would
  decide it at the observed noise when that is within the cap, else that the
  cap cannot decide it at this noise (iowatch.vocabulary.wording.rerun_words).
A side with one sample (published numbers) is judged by size only. Metrics
whose direction is "info" are never a regression or an improvement.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy.special import digamma, ndtri, polygamma, stdtr, stdtrit
from scipy.stats import mannwhitneyu

from iowatch.cells import CellKey
from iowatch.metrics import DIRECTIONS, HIGHER, INFO
from iowatch.stats.blocks import within_rounds
from iowatch.stats import boots as boots_policy
from iowatch.stats.boots import BootVariance, with_boot_offsets
from iowatch.stats.detectable import minimum_detectable_effect
from iowatch.stats.family import SlowerFamily, slower_family
from iowatch.stats import sequential
from iowatch.stats.sequential import (LINEAR, decision_chances, effective_n, family_futile,
                                      level_at, look_level)
from iowatch.vocabulary.outcomes import Outcome, reach, worse_side
from iowatch.vocabulary.wording import sentence

# The cell's outcomes, by the vocabulary's words (iowatch.vocabulary.outcomes).
# SLOWER is "slower by less than X%, not confirmed" (issue 41): at the cap, a
# cell that Benjamini-Hochberg at the family's rate selects as slower
# (iowatch.stats.family) and whose family-adjusted interval reaches beyond the
# minimum effect, but which is not a confirmed regression. Never "no change".
REGRESSION, SUSPECTED, SLOWER, IMPROVEMENT, NO_CHANGE, INCONCLUSIVE = (
    o.word for o in (Outcome.REGRESSION, Outcome.SUSPECTED, Outcome.SLOWER, Outcome.IMPROVEMENT,
                     Outcome.NO_CHANGE, Outcome.UNSURE))
SUSPECT_P = 0.02  # one-sided, per cell: at most 2% of clean cells are suspected
BIG_DROP = 3.0  # with fewer than FEW_RUNS a side, a drop over 3x the minimum effect is suspected
# Below 3 a side the t-test has 2 degrees of freedom or fewer and cannot give a
# small p-value; from 3 on, the test decides: a big drop alone, at 30% noise,
# would flag one clean cell in five (bench/accuracy measured 20.6% at 5 a side).
FEW_RUNS = 3
SAME_CONFIDENCE = 0.8  # the one-sided bound that rules a slowdown out
POWER = 0.8  # needs_runs: runs a side that confirm the minimum effect 80% of the time
# Fewer tested cells than this and a family's spread of variances says too
# little to borrow from (a moment estimate of a variance from a handful of values).
PRIOR_MIN_CELLS = 6


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
    # Change of the candidate against the base, in %: of the geometric means
    # when every value is positive (the log-scale test), else of the means.
    change_pct: float | None  # None when the base is 0 and the candidate is not
    ci_low: float | None  # 95% confidence interval of the change
    ci_high: float | None
    p_value: float | None  # two-sided t-test; None when a side has one sample
    p_worse: float | None  # one-sided: the candidate is worse
    cliffs_delta: float  # P(candidate > base) - P(candidate < base)
    direction: str
    min_effect_pct: float
    outcome: str
    needs_runs: int | None  # about this many more runs a side, when unsure and within the cap
    size_only: bool  # a side has one sample: judged by size only
    words: str
    cap: int  # the most repetitions a side this cell may take (its study's max_runs)
    level: float | None = None  # the share of the false-discovery rate this look may use
    # The largest slowdown (in % of the base, in the metric's worse direction)
    # that the data cannot rule out at 80% confidence; <= 0 when none.
    hidden_pct: float | None = None
    budget_spent: bool = False  # unsure at the cap: no more runs will be added
    # The budget was spent before the cap: no decision was in reach by it on the
    # current trend (iowatch.stats.sequential.futile, issue 41 item 3).
    futile: bool = False
    # One-sided p of the worse direction with the family's variance lent (the
    # moderated t): what "suspected" reads. p_worse when the family lends nothing.
    p_worse_family: float | None = None
    # The minimum detectable effect at these repetitions (iowatch.stats.detectable):
    # the smallest true slowdown, in %, this cell's noise lets the test confirm
    # with 80% power, whatever the change observed. None when judged by size only.
    mde_pct: float | None = None
    # The equivalence bound: the slowdown (in %, rounded up, at least 0) that the
    # 80% one-sided bound cannot rule out. A "no-change" with bound_pct above the
    # minimum effect is "no change within bound_pct%" (the cap came first).
    bound_pct: float | None = None
    # Boots a side when the test was on boot means (a side's values came from two
    # or more boots); None: one boot a side, the values tested as they are.
    boots: tuple[int, int] | None = None
    # Diagnostics of a boot-means test (one-way ANOVA moments on the test's scale):
    # the within-boot sd in % and the share of the variance that lies between boots.
    within_boot_sd_pct: float | None = None
    between_boot_share: float | None = None
    # Boots a side, whatever the test (issue 41 item 1): a value without a boot
    # label is a boot of its own. None when judged by size only.
    boot_counts: tuple[int, int] | None = None
    # A side of one boot (issue 41 item 1): `one_boot` when a confirmed change was
    # held ("suspected: one boot a side") because nothing recorded the cell's
    # variance between boots; `boot_variance` the recorded variance
    # (iowatch.stats.boots) the test added to a one-boot side instead.
    one_boot: bool = False
    boot_variance: BootVariance | None = None
    # Rounds of a check as blocks (iowatch.stats.blocks): with two or more rounds
    # that measured both sides, the rounds' drift (the fastest round's level less
    # the slowest's, later minus earlier, in %) and those two rounds; `blocked`
    # when the rounds differed beyond chance and the change was judged within rounds.
    drift_pct: float | None = None
    drift_rounds: tuple | None = None
    blocked: bool = False
    # The drift's 95% CI in % (the two rounds' levels, the within-round spread),
    # and the F test's p that the rounds' levels differ (what `blocked` reads).
    drift_ci: tuple[float, float] | None = None
    drift_p: float | None = None
    # The two numbers the words compare (base, candidate) and what they are
    # ("geometric mean", "mean"): a report shows these, not a third statistic.
    centre: tuple[float, float] | None = None
    statistic: str | None = None

    @property
    def within_pct(self) -> float | None:
        """X of "no change within X%" (or of "slower by less than X%"): the 95%
        CI's reach, when it is beyond the minimum effect (iowatch.vocabulary.reach)."""
        return reach(self.outcome, (self.ci_low, self.ci_high), self.direction,
                     self.min_effect_pct)


@dataclass(frozen=True)
class CellInput:
    key: CellKey
    base: Sequence[float]
    candidate: Sequence[float]
    direction: str
    min_effect_pct: float  # the study's: a required argument, never a default
    cap: int | None = None  # the study's max_runs; None: compare_matrix's cap
    # The boot each value came from (any hashable label, one per value); None:
    # each value its own boot, as independent repetitions.
    base_boots: Sequence | None = None
    candidate_boots: Sequence | None = None
    # The round (block) each value came from, both sides with the same labels;
    # None: no rounds, the values pooled.
    base_rounds: Sequence | None = None
    candidate_rounds: Sequence | None = None
    # The host's recorded variance between boots of this cell (iowatch.stats.boots),
    # for a side of one boot; None: nothing recorded.
    boot_variance: BootVariance | None = None


@dataclass(frozen=True)
class CellVerdict(Verdict):
    key: CellKey = None  # type: ignore[assignment]
    p_adjusted: float | None = None  # Benjamini–Hochberg over the family, in the tested direction
    # When ci_low/ci_high are the family-adjusted interval (a "slower" or a "no
    # change within X%" cell, iowatch.stats.family): the family's m cells and the
    # interval's level (0.99875 for 1 - 0.05/40); None: the cell's own 95% CI.
    ci_family: int | None = None
    ci_level: float | None = None


def benjamini_hochberg(p_values: Sequence[float], family_size: int | None = None) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (step-up), in the input's order.
    `family_size` counts hypotheses of the family that were not tested (a
    history without a candidate change point): the same as each adding p = 1."""
    p = np.asarray(p_values, dtype=float)
    if len(p) == 0:
        return []
    m = max(len(p), family_size or 0)
    order = np.argsort(p)
    ranked = p[order] * m / np.arange(1, len(p) + 1)
    adjusted = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(len(p))
    out[order] = np.minimum(adjusted, 1.0)
    return out.tolist()


def _side_stats(x: np.ndarray) -> SideStats:
    v = sorted(x.tolist())
    n = len(v)
    mean = sum(v) / n
    sd = math.sqrt(sum((a - mean) ** 2 for a in v) / (n - 1)) if n > 1 else 0.0
    median = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    return SideStats(n, mean, median, sd, v[0], v[-1])


def side_stats(values: Sequence[float]) -> SideStats:
    """n, mean, median, sd, min and max of some values, as a verdict states a
    side (retention summarises a run's values with it too)."""
    return _side_stats(np.asarray(values, dtype=float))


@dataclass
class _Cell:
    """One cell's statistics before the family decides."""
    base: SideStats
    candidate: SideStats
    change: float | None
    ci: tuple[float | None, float | None]
    p_two: float | None
    p_worse: float | None
    p_better: float | None
    cliffs: float
    worse: float | None  # the change in the worse direction, % (positive: worse)
    hidden: float | None
    sd_log: float | None  # pooled sd on the test's scale (for needs_runs)
    n_eff: float
    size_only: bool
    se: float | None = None  # standard error of the difference on the test's scale
    log_scale: bool = True
    centre: tuple[float, float] | None = None  # the values the change is between (words)
    p_screen: float | None = None  # one-sided p of the worse direction, the family's variance lent
    boots: tuple[int, int] | None = None  # boots a side of a boot-means test
    within_boot_sd_pct: float | None = None
    between_boot_share: float | None = None
    drift_pct: float | None = None
    drift_rounds: tuple | None = None
    blocked: bool = False
    drift_ci: tuple[float, float] | None = None
    drift_p: float | None = None
    d: float | None = None  # the difference on the test's scale, and its degrees of freedom
    df: float | None = None
    one_boot: bool = False  # a side is one boot and no recorded variance stood in
    boot_variance: BootVariance | None = None  # the recorded variance the test added

    def interval(self, alpha: float) -> tuple[float, float] | None:
        """The change's two-sided CI at level 1 - alpha, in %, from the same t as
        the 95% CI (a family-adjusted interval); None without a t."""
        if self.d is None or self.se is None or self.df is None:
            return None
        half = float(stdtrit(self.df, 1 - alpha / 2)) * self.se
        to_pct = (lambda v: math.expm1(v) * 100) if self.log_scale else (lambda v: v * 100)
        return (to_pct(self.d - half), to_pct(self.d + half))


@dataclass(frozen=True)
class VariancePrior:
    """What a family's cells say about the variance of one repetition on the
    log scale: `var` (s0²), worth `df` (d0) degrees of freedom to each cell."""
    df: float
    var: float

    def moderate(self, v: float, df: float) -> float:
        """A cell's variance on `df` degrees of freedom, shrunk toward the family's."""
        return (self.df * self.var + df * v) / (self.df + df)


def _trigamma_inverse(x: float) -> float:
    """y with trigamma(y) = x: Newton's method from y = 0.5 + 1/x, which
    converges monotonically for this function (Smyth 2004, section 6.2)."""
    if x > 1e7:
        return 1 / math.sqrt(x)
    if x < 1e-6:
        return 1 / x
    y = 0.5 + 1 / x
    for _ in range(50):
        tri = float(polygamma(1, y))
        step = tri * (1 - tri / x) / float(polygamma(2, y))
        y += step
        if -step / y < 1e-8:
            break
    return y


def variance_prior(variances: Sequence[float], dfs: Sequence[float]) -> VariancePrior | None:
    """The moderated t's prior from a family's log-scale cell variances and
    their degrees of freedom, by the moments of log s² (Smyth 2004): their
    mean gives s0², their spread beyond what sampling alone explains gives d0
    (small when the cells' noise truly differs). d0 is at most the family's
    own degrees of freedom: it cannot lend more than it measured. None for a
    family of fewer than PRIOR_MIN_CELLS cells with a variance."""
    v, d = np.asarray(variances, dtype=float), np.asarray(dfs, dtype=float)
    keep = (v > 0) & (d > 0)
    v, d = v[keep], d[keep]
    if len(v) < PRIOR_MIN_CELLS:
        return None
    e = np.log(v) - digamma(d / 2) + np.log(d / 2)  # unbiased for log σ² on each cell
    spread = float(e.var(ddof=1) - polygamma(1, d / 2).mean())
    most = float(d.sum())
    d0 = min(2 * _trigamma_inverse(spread), most) if spread > 0 else most
    return VariancePrior(d0, math.exp(float(e.mean()) + digamma(d0 / 2) - math.log(d0 / 2)))


def _log_variance(b: np.ndarray, c: np.ndarray) -> tuple[float, int] | None:
    """A cell's pooled variance of log values and its degrees of freedom, for
    the family's prior; None for a cell the log-scale t-test does not judge."""
    if min(len(b), len(c)) < 2 or not ((b > 0).all() and (c > 0).all()):
        return None
    xb, xc = np.log(b), np.log(c)
    df = len(b) + len(c) - 2
    return float(((xb - xb.mean()) ** 2).sum() + ((xc - xc.mean()) ** 2).sum()) / df, df


def _t_scale(xb: np.ndarray, xc: np.ndarray, prior: VariancePrior | None = None
             ) -> tuple[float, float, float]:
    """The standard error of the difference of means, its degrees of freedom and the
    pooled sd: Student's pooled t for equal counts, Welch's otherwise. With a
    prior, the moderated t: each variance shrunk toward the family's, and the
    prior's degrees of freedom added to the test's (for Welch, to each side's)."""
    nb, nc = len(xb), len(xc)
    vb, vc = float(xb.var(ddof=1)), float(xc.var(ddof=1))
    pooled = ((nb - 1) * vb + (nc - 1) * vc) / (nb + nc - 2)
    d0 = prior.df if prior is not None else 0.0
    if prior is not None:
        pooled = prior.moderate(pooled, nb + nc - 2)
        vb, vc = prior.moderate(vb, nb - 1), prior.moderate(vc, nc - 1)
    if nb == nc:
        return math.sqrt(pooled * 2 / nb), d0 + 2 * nb - 2, math.sqrt(pooled)
    se = math.sqrt(vb / nb + vc / nc)
    df = (vb / nb + vc / nc) ** 2 / ((vb / nb) ** 2 / (d0 + nb - 1) + (vc / nc) ** 2 / (d0 + nc - 1)) \
        if se > 0 else d0 + nb + nc - 2
    return se, df, math.sqrt(pooled)


def _boot_means(x: np.ndarray, labels: Sequence | None) -> tuple[np.ndarray, np.ndarray] | None:
    """(the mean of each boot's values, each boot's count), in first-seen order;
    None without labels or with one boot."""
    if labels is None:
        return None
    if len(labels) != len(x):
        raise ValueError(f"{len(labels)} boot labels for {len(x)} values")
    order = {label: i for i, label in enumerate(dict.fromkeys(labels))}
    if len(order) < 2:
        return None
    idx = np.asarray([order[label] for label in labels])
    counts = np.bincount(idx)
    return np.bincount(idx, weights=x) / counts, counts


def _independent(labels: Sequence | None) -> bool:
    """No labels, or each value its own boot (a check at one repetition a boot):
    the values are independent draws of the kernel, the boots' noise in each."""
    return labels is None or len(set(labels)) == len(labels)


def _boot_t_scale(mb: np.ndarray, mc: np.ndarray) -> tuple[float, float, float]:
    """_t_scale on boot means: Student's pooled t for equal boot counts, Welch's
    for unequal ones with two boots or more a side, and pooled again when a side
    is one boot (its variance borrowed from the other side's boots)."""
    if len(mb) == len(mc) or min(len(mb), len(mc)) >= 2:
        return _t_scale(mb, mc)
    df = len(mb) + len(mc) - 2
    ss = float(((mb - mb.mean()) ** 2).sum() + ((mc - mc.mean()) ** 2).sum())
    pooled = ss / df
    return math.sqrt(pooled * (1 / len(mb) + 1 / len(mc))), df, math.sqrt(pooled)


def _anova(sides: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple[float, float | None]:
    """Within-boot sd and the between-boot share of variance, by one-way ANOVA
    moments over both sides' boots (values, boot means, counts): diagnostics."""
    ss_w = df_w = 0.0
    means, sizes = [], []
    for x, m, n in sides:
        idx = np.repeat(np.arange(len(m)), n)
        ss_w += float(((x - m[idx]) ** 2).sum())
        df_w += len(x) - len(m)
        means.append(m - m.mean())
        sizes.append(n)
    within = ss_w / df_w if df_w > 0 else 0.0
    dev = np.concatenate(means)
    k = len(dev) - len(sides)
    if k <= 0:
        return math.sqrt(within), None
    between = max(float((dev ** 2).sum()) / k - within * float(np.mean(1 / np.concatenate(sizes))), 0.0)
    total = between + within
    return math.sqrt(within), (between / total if total > 0 else None)


def _cell_stats(b: np.ndarray, c: np.ndarray, direction: str,
                prior: VariancePrior | None = None, boots: tuple[Sequence | None, Sequence | None]
                = (None, None), rounds: tuple[Sequence | None, Sequence | None] = (None, None),
                boot_variance: BootVariance | None = None) -> _Cell:
    nb, nc = len(b), len(c)
    bs, cs = _side_stats(b), _side_stats(c)
    cliffs = float(((c[None, :] > b[:, None]).sum() - (c[None, :] < b[:, None]).sum()) / (nb * nc))
    sign = -1.0 if direction == HIGHER else 1.0  # worse = lower for "higher is better"
    n_eff = effective_n(nb, nc)
    if min(nb, nc) == 1:
        return _size_only(bs, cs, sign, cliffs, n_eff)
    if (b > 0).all() and (c > 0).all():
        xb, xc = np.log(b), np.log(c)
        to_pct = lambda v: math.expm1(v) * 100  # noqa: E731
        log_scale = True
    elif bs.mean != 0:
        xb, xc = b / abs(bs.mean), c / abs(bs.mean)
        to_pct = lambda v: v * 100  # noqa: E731
        log_scale = False
    else:
        change = 0.0 if (c == 0).all() and (b == 0).all() else None
        if change is None:
            return _Cell(bs, cs, None, (None, None), None, None, None, cliffs, None, None, None,
                         n_eff, False)
        return _Cell(bs, cs, 0.0, (0.0, 0.0), 1.0, 1.0, 1.0, cliffs, 0.0, 0.0, 0.0, n_eff, False)
    # Repetitions come in boots: on boot means when a side had two or more (_by_boot).
    by_boot = _by_boot(xb, xc, boots, to_pct, boot_variance)
    diagnostics: dict = {}
    if by_boot is not None:
        d, se, df, sd_pooled, (bb, bc), diagnostics = by_boot
        prior = None  # the family's prior is of one repetition's variance, not a boot mean's
    else:
        d, se, df, sd_pooled, diagnostics = _on_repetitions(xb, xc, boots, boot_variance)
        if "boot_variance" in diagnostics:
            prior = None  # the family's prior is of one repetition's variance, within a boot
    # Rounds are blocks: when the platform drifted between them, the change is
    # judged within rounds (paired by round), so a drift moves both sides alike.
    # With two boots or more in a side's round the rounds are blocks always
    # (the pure error, iowatch.stats.blocks); the prior still screens "suspected".
    rt = within_rounds(xb, rounds[0], xc, rounds[1], boots[0], boots[1]) \
        if rounds[0] is not None and rounds[1] is not None else None
    if rt is not None:
        diagnostics.update(_drift(rt, to_pct))
    within = rt is not None and (rt.drifted or rt.pure)
    if within:
        d, se, df, sd_pooled = rt.d, rt.se, rt.df, rt.sd_per_run
    if rt is not None and rt.drifted:
        prior = None  # the family's prior is of one repetition's variance
    p_two, p_worse, p_better, change, ci, hidden = _t_test(d, se, df, direction, to_pct)
    p_screen = p_worse
    if prior is not None and log_scale:
        m_se, m_df, _ = _t_scale(xb, xc, prior)
        p_screen = float(stdtr(m_df, (d if direction == HIGHER else -d) / m_se))
    if within:
        levels = rt.centre
    elif by_boot is not None:
        levels = (float(bb[0].mean()), float(bc[0].mean()))
    else:
        levels = (float(xb.mean()), float(xc.mean()))
    # On the log scale the levels are geometric means; else fractions of the base's mean.
    centre = (tuple(math.exp(v) for v in levels) if log_scale
              else tuple(v * abs(bs.mean) for v in levels))
    return _Cell(bs, cs, change, ci, p_two, p_worse, p_better, cliffs, sign * change, hidden,
                 sd_pooled, n_eff, False, se, log_scale, centre, p_screen, **diagnostics,
                 d=d, df=df)


def _t_test(d: float, se: float, df: float, direction: str, to_pct) -> tuple:
    """The t test of a difference d (test scale) with its standard error: (p
    two-sided, p worse, p better, the change in %, its 95% CI, the slowdown in
    the worse direction its SAME_CONFIDENCE bound cannot rule out)."""
    if se == 0:
        tstat = 0.0 if d == 0 else math.copysign(math.inf, d)
    else:
        tstat = d / se
    # scipy.special's Student t functions: the same values as scipy.stats.t, at a
    # hundredth of the cost (a 1,000-cell matrix is judged in milliseconds).
    p_lower = float(stdtr(df, tstat))  # the candidate is lower
    p_higher = float(stdtr(df, -tstat))
    p_two = min(1.0, 2 * min(p_lower, p_higher))
    half = float(stdtrit(df, 0.975)) * se
    bound = float(stdtrit(df, SAME_CONFIDENCE)) * se
    ci = (to_pct(d - half), to_pct(d + half))
    if direction == HIGHER:
        return p_two, p_lower, p_higher, to_pct(d), ci, -to_pct(d - bound)  # a fall not ruled out
    return p_two, p_higher, p_lower, to_pct(d), ci, to_pct(d + bound)  # a rise not ruled out


def _size_only(bs: SideStats, cs: SideStats, sign: float, cliffs: float, n_eff: float) -> _Cell:
    """A side of one sample (published numbers): the change of the means, judged by size."""
    if bs.mean == 0:
        change = 0.0 if cs.mean == 0 else None
    else:
        change = (cs.mean - bs.mean) / abs(bs.mean) * 100
    worse = None if change is None else sign * change
    return _Cell(bs, cs, change, (None, None), None, None, None, cliffs, worse, None, None,
                 n_eff, True)


def _drift(rt, to_pct) -> dict:
    """The rounds' drift as a verdict's diagnostics: its size, rounds, 95% CI and p."""
    half = float(stdtrit(rt.drift_df, 0.975)) * rt.drift_se if rt.drift_se is not None else None
    return dict(drift_pct=to_pct(rt.drift), drift_rounds=rt.drift_rounds, blocked=rt.drifted,
                drift_p=rt.drift_p,
                drift_ci=(to_pct(rt.drift - half), to_pct(rt.drift + half))
                if half is not None else None)


def _on_repetitions(xb: np.ndarray, xc: np.ndarray, boots, recorded: BootVariance | None):
    """The test on repetitions: (d, se, df, pooled sd, diagnostics), a one-boot
    side widened by the host's record (_one_boot_sides)."""
    se, df, sd_pooled = _t_scale(xb, xc)
    se, df, diagnostics = _one_boot_sides(se, df, boots, recorded)
    return float(xc.mean() - xb.mean()), se, df, sd_pooled, diagnostics


def _one_boot_sides(se: float, df: float, boots: tuple[Sequence | None, Sequence | None],
                    recorded: BootVariance | None) -> tuple[float, float, dict]:
    """A test on repetitions where a side's values all came from one boot
    (issue 41 item 1): each such side carries one boot's offset that its own
    repetitions cannot see. With the host's recorded variance between boots the
    offsets' variance joins the standard error (iowatch.stats.boots); without
    it the cell is marked `one_boot`, and a change it confirms is held."""
    single = sum(1 for labels in boots if labels is not None and len(set(labels)) == 1)
    if not single or (single == 2 and set(boots[0]) == set(boots[1])):
        return se, df, {}  # one boot for both sides (run --against in the base's boot): it cancels
    if recorded is None:
        return se, df, {"one_boot": True}
    se, df = with_boot_offsets(se, df, recorded, single)
    return se, df, {"boot_variance": recorded}


def _by_boot(xb: np.ndarray, xc: np.ndarray, boots: tuple[Sequence | None, Sequence | None],
             to_pct, recorded: BootVariance | None = None) -> tuple | None:
    """The test on boot means, when a side's values came from two boots or more
    (issue 24), so the noise between boots counts: (d, se, df, the sd of one
    repetition, the boot means and sizes a side, diagnostics). None when every
    value is its own boot: tested as independent repetitions (the family's prior
    is of one repetition's variance, which then holds the between-boot variance too).

    `recorded`: the host's record of a boot mean's variance (iowatch.stats.boots),
    given when a side is one boot. Its boot means leave few degrees of freedom
    (1 against 2 boots: one), so the record joins them as a prior, weighted by
    degrees of freedom (as the family's prior joins a cell's variance): a second
    run of a kernel that fell 50% no longer turned a confirmed regression back
    into "suspected" on a t with one degree of freedom."""
    bb, bc = _boot_means(xb, boots[0]), _boot_means(xc, boots[1])
    if (bb is None and bc is None) or (_independent(boots[0]) and _independent(boots[1])):
        return None
    # A side without labels: each value its own boot; with one label: one boot.
    one = lambda x, labels: (x, np.ones(len(x), dtype=int)) if labels is None \
        else (np.asarray([x.mean()]), np.asarray([len(x)]))  # noqa: E731
    bb = bb or one(xb, boots[0])
    bc = bc or one(xc, boots[1])
    se, df, sd_boots = _boot_t_scale(bb[0], bc[0])
    diagnostics: dict = {}
    if recorded is not None and recorded.df > 0:
        var = (df * sd_boots ** 2 + recorded.df * recorded.var) / (df + recorded.df)
        sd_boots, df = math.sqrt(var), df + recorded.df
        se = sd_boots * math.sqrt(1 / len(bb[0]) + 1 / len(bc[0]))
        diagnostics["boot_variance"] = recorded
    # needs_runs counts repetitions: a boot mean of m runs stands for m of them.
    sd_pooled = sd_boots * math.sqrt(float(np.mean(np.concatenate([bb[1], bc[1]]))))
    within, share = _anova([(xb, *bb), (xc, *bc)])
    diagnostics |= {"boots": (len(bb[0]), len(bc[0])), "within_boot_sd_pct": to_pct(within),
                    "between_boot_share": share}
    return float(bc[0].mean() - bb[0].mean()), se, df, sd_pooled, (bb, bc), diagnostics


def _needs_runs(s: _Cell, min_effect_pct: float, q: float, cap: int,
                schedule: int | None = None) -> int | None:
    """Runs a side for 80% power to confirm the minimum effect at the last look's
    level (normal formula at the observed sd; the levels of `schedule`'s looks,
    the promising zone's reach, when not the cap's), minus what the smaller side
    has; None when that many runs a side exceed the cap."""
    if s.sd_log is None or s.n_eff >= cap:
        return None
    delta = math.log1p(min_effect_pct / 100)
    z = -float(ndtri(look_level(cap, q, cap=schedule or cap))) + float(ndtri(POWER))  # norm.isf, norm.ppf
    want = math.ceil(2 * (z * s.sd_log / delta) ** 2) if delta > 0 else 0
    if want > cap:
        return None  # beyond the cap: not decidable at this noise (wording.rerun_words)
    return max(1, want - min(s.base.n, s.candidate.n))


def _bound(s: _Cell) -> float | None:
    """The equivalence bound at the cell's repetitions: the slowdown its 80%
    one-sided bound cannot rule out, rounded up to a whole %, at least 0."""
    if s.size_only or s.hidden is None or not math.isfinite(s.hidden):
        return None
    return float(max(math.ceil(s.hidden - 1e-9), 0))


def _mde(s: _Cell, direction: str, level: float | None, family: int) -> float | None:
    """The minimum detectable effect at the cell's repetitions: alpha is the
    look's level over the family's size (a lone changed cell's first step of
    Benjamini-Hochberg)."""
    if s.size_only or s.se is None or not level or direction == INFO:
        return None
    return minimum_detectable_effect(s.se, level / max(family, 1), direction=direction,
                                     log_scale=s.log_scale)


def _outcome(direction: str, s: _Cell, adj_worse: float | None, adj_better: float | None,
             level: float, min_effect: float) -> str:
    if direction == INFO:
        return NO_CHANGE
    if s.change is None or s.worse is None:
        return INCONCLUSIVE
    if s.size_only:
        if abs(s.change) < min_effect:
            return NO_CHANGE
        return REGRESSION if s.worse > 0 else IMPROVEMENT
    if adj_worse is not None and adj_worse <= level and s.worse >= min_effect:
        return REGRESSION
    if adj_better is not None and adj_better <= level and -s.worse >= min_effect:
        return IMPROVEMENT
    if s.hidden is not None and s.hidden < min_effect:
        return NO_CHANGE  # iowatch.stats.family's rule may still hold it (_by_family)
    few = min(s.base.n, s.candidate.n) < FEW_RUNS
    if (s.p_screen is not None and s.p_screen <= SUSPECT_P and s.worse >= min_effect) \
            or (few and s.worse >= BIG_DROP * min_effect):
        return SUSPECTED
    return INCONCLUSIVE


def _by_family(outcome: str, s: _Cell, cell: CellInput, key: int, family: SlowerFamily,
               at_cap: bool) -> tuple[str, tuple[float | None, float | None], float | None]:
    """The family's rule on a cell that is neither confirmed nor held suspected
    (iowatch.stats.family): (outcome, the CI it is read off, 1 - that CI's
    level when it is the family-adjusted one and not the 95% CI, else None).

    - Its 95% CI inside +- the minimum effect: plain "no change".
    - Else its interval at the family level (Benjamini-Yekutieli: 1 - R*q/m
      when Benjamini-Hochberg selected it as slower, 1 - max(R, 1)*q/m when not):
      wholly on the slower side and reaching beyond the minimum effect, a
      selected cell is "slower" at the cap and "unsure" before it (more runs:
      it may be confirmed); holding zero, "no change within X%"; wholly slower
      but not selected (an edge the test of a non-selected p rules out) or not
      reaching past the minimum effect, "unsure" and "no change" as its 95% CI
      says. Before the cap, a cell the family selects as slower whose adjusted
      interval reaches past the minimum effect is measured again (stopping
      makes no claim). The word
      never contradicts the interval printed with it: never
      "no change" of one that excludes zero, never "slower" of one that holds it."""
    if outcome != NO_CHANGE or cell.direction == INFO or s.size_only or s.p_worse is None:
        return outcome, s.ci, None
    alpha = family.alpha(key)
    ci = s.interval(alpha)
    if ci is None:
        return outcome, s.ci, None
    # One cell at 5%: the family's interval is the 95% CI, not marked as adjusted.
    marked = None if math.isclose(alpha, 0.05) else alpha
    near, far = worse_side(ci, cell.direction)
    if not at_cap and key in family.selected and far > cell.min_effect_pct:
        # Before the cap, a cell the family selects as slower whose adjusted interval
        # does not rule the minimum effect out is measured again, not stopped as
        # "no change": stopping makes no claim, and more runs may confirm it.
        return INCONCLUSIVE, s.ci, None
    low, high = s.ci
    if low is not None and -cell.min_effect_pct <= low and high <= cell.min_effect_pct:
        return NO_CHANGE, s.ci, None
    if near <= 0:
        return NO_CHANGE, ci, marked
    if key not in family.selected:
        return INCONCLUSIVE, ci, marked
    if far > cell.min_effect_pct:
        return (SLOWER if at_cap else INCONCLUSIVE), ci, marked
    return NO_CHANGE, ci, marked  # slower, by less than the minimum effect


def boot_count(labels: Sequence | None, n: int) -> int:
    """The boots of a side of n values: its distinct labels; without labels each
    value is a boot of its own (independent repetitions)."""
    return n if labels is None else len(set(labels))


def _check_cells(cells: Sequence[CellInput]) -> None:
    for cell in cells:
        if cell.direction not in DIRECTIONS:
            raise ValueError(f"{cell.key}: direction {cell.direction!r} is not one of {DIRECTIONS}")
        if len(cell.base) == 0 or len(cell.candidate) == 0:
            raise ValueError(f"{cell.key}: a side has no samples")


def _family_prior(sides, cells: Sequence[CellInput], boots) -> VariancePrior | None:
    """The family's variance prior (variance_prior). It is of one repetition's
    variance: only cells tested on repetitions lend to it."""
    pooled = [_log_variance(b, c) for (b, c), cell, (lb, lc) in zip(sides, cells, boots)
              if cell.direction != INFO and (len(set(lb or ())) < 2 or _independent(lb))
              and (len(set(lc or ())) < 2 or _independent(lc))]
    pooled = [v for v in pooled if v is not None]
    return variance_prior([v for v, _ in pooled], [df for _, df in pooled])


def compare_matrix(cells: Sequence[CellInput], *, fdr: float,
                   cap: int, family_size: int | None = None,
                   by_information: bool = True, spending: str = LINEAR) -> list[CellVerdict]:
    """Verdicts for one family of cells: Benjamini–Hochberg at `fdr` over the
    regression tests (and, apart, the improvement tests) of the cells that have
    two samples a side, each held to its look's share of `fdr` in the schedule
    up to its cap (the cell's own, else `cap`). `family_size`, when larger
    than the cells given, counts the family's untested members. `by_information`
    False: the level of the effective count's look (look_level), for sides that
    are not looks of an adaptive run (a change point's segments). `spending`:
    how the looks share `fdr` (iowatch.stats.sequential: linear, or Pocock's
    for a family that must decide early, the canaries)."""
    _check_cells(cells)
    sides = [(np.asarray(cell.base, dtype=float), np.asarray(cell.candidate, dtype=float))
             for cell in cells]
    boots = [(cell.base_boots, cell.candidate_boots) for cell in cells]
    rounds = [(cell.base_rounds, cell.candidate_rounds) for cell in cells]
    prior = _family_prior(sides, cells, boots)
    stats = [_cell_stats(b, c, cell.direction, prior, boot, blocks, cell.boot_variance)
             for (b, c), cell, boot, blocks in zip(sides, cells, boots, rounds)]
    tested = [i for i, (cell, s) in enumerate(zip(cells, stats))
              if cell.direction != INFO and s.p_worse is not None]
    untested = max((family_size or 0) - len(cells), 0)
    m = len(tested) + untested
    adj_worse = dict(zip(tested, benjamini_hochberg([stats[i].p_worse for i in tested], m)))
    adj_better = dict(zip(tested, benjamini_hochberg([stats[i].p_better for i in tested], m)))
    adj_screen = dict(zip(tested, benjamini_hochberg([stats[i].p_screen for i in tested], m)))
    # "Slower" is a discovery: Benjamini-Hochberg at this comparison's rate over
    # the one-sided p for slower of its deciding cells (iowatch.stats.family).
    family = slower_family({i: stats[i].p_worse for i in tested}, fdr, m)
    tests = (fdr, m, adj_worse, adj_better, by_information, spending)
    stop_all = _family_stops(cells, stats, cap, tests)
    return [_cell_verdict(i, cell, s, cap, family, adj_screen, tests, stop_all)
            for i, (cell, s) in enumerate(zip(cells, stats))]


def _family_stops(cells: Sequence[CellInput], stats: list[_Cell], cap: int, tests: tuple) -> bool:
    """The family's futility (sequential.family_futile): whether every cell still
    open stops at once, the decisions they may reach by the cap being too few
    to measure on. False without a look at the cells when the rule is off."""
    if sequential.FAMILY_FUTILE <= 0:
        return False
    fdr, m = tests[0], tests[1]
    open_ = [i for i, (cell, s) in enumerate(zip(cells, stats)) if _open(i, cell, s, cap, *tests)]
    return bool(open_) and family_futile([_family_chances(stats[i], cells[i], cap, tests)
                                          for i in open_], bound=sequential.family_bound(m))


def _family_chances(s: _Cell, cell: CellInput, cap: int, tests: tuple):
    """An open cell's decision_chances for the family's futility: to its cap;
    with the promising zone on, its "no change" to its cap and its confirmed
    decisions to the reach it may extend to (sequential.ZONE_PROJECTION)."""
    fdr, m = tests[0], tests[1]
    cell_cap = cell.cap or cap
    reach = _reach(s, cell_cap)
    past = _past(s, cell_cap)
    to_cap = _chances(s, cell, reach if past else cell_cap, fdr, m, schedule=reach)
    if reach == cell_cap or past or to_cap is None or sequential.ZONE_PROJECTION != "reach":
        return to_cap
    far = _chances(s, cell, reach, fdr, m, schedule=reach)
    return to_cap if far is None else (to_cap[0], far[1], far[2])


def _past(s: _Cell, cell_cap: int) -> bool:
    """Whether a cell has measured past its cap: it is in the promising zone."""
    return s.candidate.n > cell_cap or s.n_eff > cell_cap + 1e-9


def _reach(s: _Cell, cell_cap: int) -> int:
    """The cap whose schedule spends a cell's levels: the promising zone's reach
    (sequential.reach) for a test on single runs, the cap itself for a test on
    boot means (which may not stop for futility and so is never extended)."""
    return cell_cap if s.boots else sequential.reach(cell_cap)


def _look(i: int, cell: CellInput, s: _Cell, cap: int, fdr: float, m: int, adj_worse: dict,
          adj_better: dict, by_information: bool,
          spending: str) -> tuple[float | None, str, bool, int]:
    """(the look's level, the cell's outcome by its own tests, whether it is at
    its cap, and that cap: the study's, or past it the promising zone's reach
    while the cell is promising there)."""
    cell_cap = cell.cap or cap
    reach = _reach(s, cell_cap)
    level = None if s.size_only else (
        level_at(s.base.n, s.candidate.n, fdr, cap=reach, shape=spending) if by_information
        else look_level(s.n_eff, fdr, cap=reach, shape=spending))
    outcome = _outcome(cell.direction, s, adj_worse.get(i), adj_better.get(i), level or 0.0,
                       cell.min_effect_pct)
    # The candidate at the cap spends the budget: under `run --against` the
    # base bundle cannot grow, so waiting for n_eff to reach the cap would wait for ever.
    def reached(n: int) -> bool:
        return not s.size_only and (s.candidate.n >= n or s.n_eff >= n)
    now = cell_cap
    if reach > cell_cap and reached(cell_cap):
        past = _past(s, cell_cap)
        chances = None if past or outcome not in (SUSPECTED, INCONCLUSIVE) else \
            _chances(s, cell, reach, fdr, m, schedule=reach)
        if past or (chances is not None and chances[1] + chances[2] >= sequential.PROMISING):
            now = reach  # promising at the cap: measure on toward the reach
    return level, outcome, reached(now), now


def _open(i: int, cell: CellInput, s: _Cell, cap: int, *tests) -> bool:
    """Whether a cell is unsure before its cap: one futility may stop."""
    _, outcome, at_cap, _ = _look(i, cell, s, cap, *tests)
    return not at_cap and outcome in (SUSPECTED, INCONCLUSIVE)


def _cell_verdict(i: int, cell: CellInput, s: _Cell, cap: int, family: SlowerFamily,
                  adj_screen: dict, tests: tuple, stop_all: bool) -> CellVerdict:
    """One cell's verdict, the family's tests done (compare_matrix); `tests`:
    (fdr, m, adj_worse, adj_better, by_information, spending); `stop_all`: the
    family's futility stops every open cell."""
    fdr, m, adj_worse, adj_better, _, _ = tests
    level, outcome, at_cap, cell_cap = _look(i, cell, s, cap, *tests)
    bound = _bound(s) if cell.direction != INFO else None
    mde = _mde(s, cell.direction, level, m)
    # A cell that can reach no decision by the cap stops now, as at the cap
    # (futility: its own, or its family's).
    early = not at_cap and outcome in (SUSPECTED, INCONCLUSIVE) and (
        stop_all or _futile(s, cell, cell_cap, fdr, m, _reach(s, cell.cap or cap)))
    stop = at_cap or early
    if stop and outcome in (SUSPECTED, INCONCLUSIVE) and bound is not None:
        held = outcome == SUSPECTED and adj_screen.get(i, 1.0) <= SUSPECT_P
        outcome = SUSPECTED if held else NO_CHANGE  # then the family's rule
    outcome, ci, alpha = _by_family(outcome, s, cell, i, family, stop)
    counts = (boot_count(cell.base_boots, len(cell.base)),
              boot_count(cell.candidate_boots, len(cell.candidate)))
    # A side of one boot cannot carry a confirmed change without a recorded
    # variance between boots: it is held, and more runs of that boot cannot lift it.
    held_one_boot = boots_policy.HOLD_WITHOUT_RECORD and s.one_boot and \
        outcome in (REGRESSION, IMPROVEMENT)
    if held_one_boot:
        outcome = SUSPECTED if outcome == REGRESSION else INCONCLUSIVE
    unsure = outcome in (SUSPECTED, INCONCLUSIVE) and not s.size_only
    budget_spent = stop and (unsure or outcome == SLOWER or (
        outcome == NO_CHANGE and bound is not None and bound > cell.min_effect_pct))
    needs = _needs_runs(s, cell.min_effect_pct, fdr, cell_cap, _reach(s, cell.cap or cap)) \
        if unsure and not stop and not held_one_boot else None
    p_adj = None
    if i in adj_worse:
        p_adj = adj_better[i] if outcome == IMPROVEMENT else adj_worse[i]
    centre = s.centre or (s.base.mean, s.candidate.mean)
    # The words name what they are between: the change is of these (issue 28).
    statistic = ("geometric mean" if s.log_scale else "mean") if s.centre else \
        ("mean" if max(s.base.n, s.candidate.n) > 1 else None)
    words = sentence(cell.key.metric, cell.direction, centre[0], centre[1], s.change,
                     outcome, size_only=s.size_only, min_effect_pct=cell.min_effect_pct,
                     needs_runs=needs, hidden_pct=s.hidden if cell.direction != INFO else None,
                     runs=(s.base.n, s.candidate.n), budget_spent=budget_spent, bound_pct=bound,
                     statistic=statistic, ci=ci,
                     ci_words=family.words(i) if alpha is not None else None,
                     cap=cell_cap if unsure and not stop and not held_one_boot else None,
                     stopped_before=cell_cap if early and budget_spent else None,
                     one_boot=held_one_boot)
    return CellVerdict(
        base=s.base, candidate=s.candidate, change_pct=s.change, ci_low=ci[0],
        ci_high=ci[1], p_value=s.p_two, p_worse=s.p_worse, cliffs_delta=s.cliffs,
        direction=cell.direction, min_effect_pct=cell.min_effect_pct, outcome=outcome,
        needs_runs=needs, size_only=s.size_only, words=words, level=level,
        hidden_pct=s.hidden, budget_spent=budget_spent, cap=cell_cap, key=cell.key,
        p_adjusted=p_adj, p_worse_family=s.p_screen, mde_pct=mde, bound_pct=bound,
        boots=s.boots,
        within_boot_sd_pct=s.within_boot_sd_pct, between_boot_share=s.between_boot_share,
        drift_pct=s.drift_pct, drift_rounds=s.drift_rounds, blocked=s.blocked,
        drift_ci=s.drift_ci, drift_p=s.drift_p, centre=tuple(centre), statistic=statistic,
        ci_family=family.m if alpha is not None else None,
        ci_level=1 - alpha if alpha is not None else None,
        boot_counts=None if s.size_only else counts, futile=early and budget_spent,
        one_boot=held_one_boot, boot_variance=s.boot_variance)


def _futile(s: _Cell, cell: CellInput, cap: int, fdr: float, family: int, schedule: int) -> bool:
    """iowatch.stats.sequential.futile of a tested cell, on its test's scale:
    each of its _chances below FUTILE (0: off)."""
    chances = _chances(s, cell, cap, fdr, family, schedule=schedule)
    return sequential.FUTILE > 0 and chances is not None and max(chances) < sequential.FUTILE


def _chances(s: _Cell, cell: CellInput, cap: int, fdr: float, family: int, *, schedule: int):
    """iowatch.stats.sequential.decision_chances of an open cell, on its test's
    scale, projected to `cap` with the levels of its schedule (the promising
    zone's reach: _reach); None (it keeps the family going) when it has no
    test to project."""
    if s.size_only or s.d is None or s.se is None or cell.direction == INFO:
        return None
    me = cell.min_effect_pct / 100
    delta = math.log1p(me) if s.log_scale else me
    return decision_chances(s.d, s.se, s.n_eff, worse_sign=-1.0 if cell.direction == HIGHER
                            else 1.0, delta=delta, cap=cap, q=fdr, family=family,
                            boots=min(s.boots) if s.boots else None,
                            schedule=schedule)


def compare(base: Sequence[float], candidate: Sequence[float], *, direction: str,
            min_effect_pct: float, fdr: float, cap: int,
            metric: str | None = None) -> Verdict:
    """The verdict on one cell: compare_matrix of a family of one. `metric`
    only names the thing in `words`."""
    key = CellKey("", "", "", "", "", "", metric or "")
    (v,) = compare_matrix([CellInput(key, base, candidate, direction, min_effect_pct)],
                          fdr=fdr, cap=cap)
    return Verdict(**{f: getattr(v, f) for f in Verdict.__dataclass_fields__})


def mann_whitney_p(x: Sequence[float], y: Sequence[float]) -> float:
    """Two-sided Mann–Whitney U p-value of two samples (at least 2 each): evidence
    for reports, never the verdict. scipy.stats.mannwhitneyu's 'auto' method:
    exact without ties when a side has at most 8 samples, else the normal
    approximation with tie and continuity corrections."""
    if len(x) < 2 or len(y) < 2:
        raise ValueError("Mann–Whitney needs at least two samples on each side")
    return float(mannwhitneyu(x, y, alternative="two-sided", method="auto").pvalue)


def cliffs_delta(x: Sequence[float], y: Sequence[float]) -> float:
    """Cliff's delta of y against x: P(y > x) - P(y < x) over all pairs."""
    X, Y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return float(((Y[None, :] > X[:, None]).sum() - (Y[None, :] < X[:, None]).sum()) / (len(X) * len(Y)))
