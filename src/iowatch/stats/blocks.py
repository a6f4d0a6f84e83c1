"""Rounds as blocks: a cell's change judged within the rounds of a check, and
the platform's drift between them (issue 24 item 2).

Each round of `iowatch check` boots every variant it compares once and runs
the unsure cells: a round is a block that holds one boot of each side. When
the machine gets faster or slower between rounds (issue 24's real check: the
same kernel's fs_mark rate went from about 2,300 to 5,300 files/s between the
first and the third round), pooling the rounds mixes the platform's change
into each side's spread, and a side measured in fewer rounds into its mean.

The model is the additive two-way layout of the side-by-round table of mean
values (log scale): m[s, k] = mu + side[s] + round[k] + e[s, k], one boot a
side a round, so e holds the between-boot and the within-boot noise. Its
side contrast is the paired test on the rounds' differences
d[k] = m[c, k] - m[b, k]: mean d, standard error sd(d)/sqrt(R), R - 1
degrees of freedom. A round's level r[k] = (m[b, k] + m[c, k]) / 2 measures
the drift, tested by F = (the rounds' levels' weighted spread / (R - 1)) /
(the variance of a value about its side-and-round mean), on (R - 1, the
within-round degrees of freedom).

Why the drift decides whether to block, and not always: with one boot a side
a round, the paired test has R - 1 degrees of freedom where the test on boot
means has 2R - 2 (at 2 rounds, 1 against 2: a one-sided t at the second
look's level needs 24 instead of 8.5), so blocking a check that did not drift
throws away most of the power the rounds bought. Without drift both tests are
valid; with drift in a check that measures both sides each round the pooled
test stays unbiased but its spread holds the drift (an unsure verdict that
says "needs 1,490 more runs"). So a cell is judged within rounds when its
rounds differ beyond chance (F's p <= DRIFT_P), and the report says by how
much. The choice must not look at the contrast it then tests: under normal
noise with equal counts a side a round, the levels r[k], the differences d[k]
and the values' spread about their side-and-round means are independent, so
the F test above leaves the paired t exact. A first version divided by the
additive model's residual (the spread of d[k]): it chose to block exactly the
cells whose d[k] happened to agree, and those rejected a 1% level 10-17% of
the time on clean normal cells (docs/verdicts.md). The price of this F: a boot's own offset
(between-boot noise) also moves r[k], so it calls some boot noise a drift and
blocks more often than a drift alone would: power, not the error rate.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Sequence

import numpy as np
from scipy.special import fdtrc

DRIFT_P = 0.05  # the rounds' levels differ beyond chance: judge within rounds


@dataclass(frozen=True)
class RoundTest:
    """A cell's contrast within rounds, and its rounds' drift."""
    d: float  # mean of the rounds' candidate - base differences (the test's scale)
    se: float  # its standard error
    df: int  # R - 1
    rounds: int  # R: rounds that measured both sides
    centre: tuple[float, float]  # mean of the rounds' base and candidate means
    sd_per_run: float  # the differences' sd as one repetition's (for needs_runs)
    drift: float  # the fastest round's level less the slowest's, later minus earlier
    drift_rounds: tuple[Hashable, Hashable]  # (earlier, later) of those two rounds
    drift_p: float  # the F test of the rounds' levels
    # The standard error of `drift` from the within-round spread, and its degrees
    # of freedom (the within-round df); None without spread within rounds. The two
    # rounds are the extremes, chosen after looking: a CI from it describes the
    # drift's size, the F test decides whether there is one.
    drift_se: float | None = None
    drift_df: int = 0

    @property
    def drifted(self) -> bool:
        return self.drift_p <= DRIFT_P


def within_rounds(xb: np.ndarray, rounds_b: Sequence[Hashable], xc: np.ndarray,
                  rounds_c: Sequence[Hashable]) -> RoundTest | None:
    """The paired-by-round test of two sides' values (already on the test's scale)
    and the F test of the rounds' levels, over the rounds both sides have (a
    round on one side only says nothing of the contrast); None with fewer than
    two such rounds."""
    if len(rounds_b) != len(xb) or len(rounds_c) != len(xc):
        raise ValueError("one round label per value")
    shared = sorted(set(rounds_b) & set(rounds_c), key=lambda r: (str(type(r)), r))
    if len(shared) < 2:
        return None
    lb, lc = np.asarray(rounds_b, dtype=object), np.asarray(rounds_c, dtype=object)
    mb = np.array([xb[lb == k].mean() for k in shared])
    mc = np.array([xc[lc == k].mean() for k in shared])
    counts = [(int((lb == k).sum()), int((lc == k).sum())) for k in shared]
    d, level = mc - mb, (mb + mc) / 2
    R = len(shared)
    # The values' spread about their side-and-round means (independent of the means).
    ss_w = sum(float(((xb[lb == k] - m) ** 2).sum()) for k, m in zip(shared, mb)) + \
        sum(float(((xc[lc == k] - m) ** 2).sum()) for k, m in zip(shared, mc))
    df_w = sum(nb + nc - 2 for nb, nc in counts)
    # Var(r[k]) = sigma^2 (1/nb + 1/nc) / 4: weight each round's level by its inverse.
    w = np.array([4 / (1 / nb + 1 / nc) for nb, nc in counts])
    q = float((w * (level - (w * level).sum() / w.sum()) ** 2).sum())
    if df_w > 0 and ss_w > 0:
        p = float(fdtrc(R - 1, df_w, (q / (R - 1)) / (ss_w / df_w)))
    else:
        p = 1.0  # no spread within rounds to tell a drift from: pooled
    sd_d = float(d.std(ddof=1))
    lo, hi = int(level.argmin()), int(level.argmax())
    first, last = sorted((lo, hi))
    drift_se = math.sqrt(ss_w / df_w * (1 / w[first] + 1 / w[last])) if df_w > 0 else None
    # A difference of round means of n_b and n_c runs has the variance of 1/n_b + 1/n_c runs.
    per_run = sd_d / math.sqrt(float(np.mean([1 / nb + 1 / nc for nb, nc in counts])))
    return RoundTest(d=float(d.mean()), se=sd_d / math.sqrt(R), df=R - 1, rounds=R,
                     centre=(float(mb.mean()), float(mc.mean())), sd_per_run=per_run,
                     drift=float(level[last] - level[first]),
                     drift_rounds=(shared[first], shared[last]), drift_p=p,
                     drift_se=drift_se, drift_df=df_w)
