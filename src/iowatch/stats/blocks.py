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

When the sides' rounds hold enough boots (boot means with PURE_DF degrees of
freedom or more within side and round: the shipped check boots once a
repetition, issue 41, so 16 at its second look), the rounds are judged as
blocks always, not only when they drifted: the additive model's side contrast is the weighted mean of the
rounds' differences, d = sum v[k] d[k] / sum v[k] with v[k] = 1 / (1/nb[k] +
1/nc[k]) counting boots, and its error comes from the boot means' spread
about their side-and-round means ("pure error", a boot's own offset in it),
on sum (nb[k] - 1 + nc[k] - 1) degrees of freedom (`pure`). That test is
exact with or without a drift, costs 2R - 2 degrees of freedom against the
pooled test (32 of 38 at 20 boots a side in 4 rounds) and chooses nothing
after looking, where the paired test's R - 1 degrees of freedom (3 at the
cap) left a -20% cell that happened to trip the F test unconfirmed: 2 of 7
cells missed in 100 checks at 25% between boots (bench/accuracy/check_boots.py,
seed 26). With fewer boots (one a side a round has no pure error at all) the
rule above (paired, when drifted) stands.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Sequence

import numpy as np
from scipy.special import fdtrc

DRIFT_P = 0.05  # the rounds' levels differ beyond chance: judge within rounds
# Boot means' degrees of freedom about their side-and-round means from which the
# rounds are blocks always (`pure`): a rule on counts, never on values, so it
# chooses nothing after looking. Below it, the 2R - 2 degrees of freedom the
# blocks cost are too large a share (the e2e check's 3 boots a side in 2 rounds
# would test on 2 against the pooled boot means' 4), and blocks are chosen by
# the drift's F test with the paired test, as before.
PURE_DF = 10


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
    # True: d, se and df are the additive model's, on boot means with the pure
    # error (two boots or more in some side's round); False: the paired test.
    pure: bool = False

    @property
    def drifted(self) -> bool:
        return self.drift_p <= DRIFT_P


def within_rounds(xb: np.ndarray, rounds_b: Sequence[Hashable], xc: np.ndarray,
                  rounds_c: Sequence[Hashable], boots_b: Sequence[Hashable] | None = None,
                  boots_c: Sequence[Hashable] | None = None) -> RoundTest | None:
    """The by-round test of two sides' values (already on the test's scale) and
    the F test of the rounds' levels, over the rounds both sides have (a round
    on one side only says nothing of the contrast); None with fewer than two
    such rounds. With boot labels (None: each value a boot of its own), the
    contrast is the additive model's on boot means with the pure error when a
    side's round has two boots or more, else the paired test of the rounds.

    Plain Python over each side's values grouped once by round and boot: a
    cell holds tens of values, where numpy's cost a call (a mask a round, a
    mean a mask) was most of a 40-cell check's judging (bench/accuracy)."""
    if len(rounds_b) != len(xb) or len(rounds_c) != len(xc):
        raise ValueError("one round label per value")
    if (boots_b is not None and len(boots_b) != len(xb)) or \
            (boots_c is not None and len(boots_c) != len(xc)):
        raise ValueError("one boot label per value")
    gb, gc = _by_round(xb, rounds_b, boots_b), _by_round(xc, rounds_c, boots_c)
    shared = sorted(set(gb) & set(gc), key=lambda r: (str(type(r)), r))
    if len(shared) < 2:
        return None
    sides = [[_flat(gb[k]) for k in shared], [_flat(gc[k]) for k in shared]]
    mb, mc = [_mean(v) for v in sides[0]], [_mean(v) for v in sides[1]]
    counts = [(len(vb), len(vc)) for vb, vc in zip(*sides)]
    d = [c - b for b, c in zip(mb, mc)]
    level = [(b + c) / 2 for b, c in zip(mb, mc)]
    R = len(shared)
    # The values' spread about their side-and-round means (independent of the means).
    ss_w = sum(_ss(v, m) for side, means in zip(sides, (mb, mc)) for v, m in zip(side, means))
    df_w = sum(nb + nc - 2 for nb, nc in counts)
    # Var(r[k]) = sigma^2 (1/nb + 1/nc) / 4: weight each round's level by its inverse.
    w = [4 / (1 / nb + 1 / nc) for nb, nc in counts]
    centre_w = sum(wk * lk for wk, lk in zip(w, level)) / sum(w)
    q = sum(wk * (lk - centre_w) ** 2 for wk, lk in zip(w, level))
    if df_w > 0 and ss_w > 0:
        p = float(fdtrc(R - 1, df_w, (q / (R - 1)) / (ss_w / df_w)))
    else:
        p = 1.0  # no spread within rounds to tell a drift from: pooled
    sd_d = math.sqrt(_ss(d, _mean(d)) / (R - 1))
    lo, hi = level.index(min(level)), level.index(max(level))
    first, last = sorted((lo, hi))
    drift_se = math.sqrt(ss_w / df_w * (1 / w[first] + 1 / w[last])) if df_w > 0 else None
    # A difference of round means of n_b and n_c runs has the variance of 1/n_b + 1/n_c runs.
    per_run = sd_d / math.sqrt(_mean([1 / nb + 1 / nc for nb, nc in counts]))
    test = dict(d=_mean(d), se=sd_d / math.sqrt(R), df=R - 1, sd_per_run=per_run,
                centre=(_mean(mb), _mean(mc)))
    pure = _pure_error([gb[k] for k in shared], [gc[k] for k in shared])
    if pure is not None:
        test = pure
    return RoundTest(**test, rounds=R, drift=level[last] - level[first],
                     drift_rounds=(shared[first], shared[last]), drift_p=p,
                     drift_se=drift_se, drift_df=df_w, pure=pure is not None)


def _by_round(x: np.ndarray, rounds: Sequence[Hashable], boots: Sequence[Hashable] | None
              ) -> dict[Hashable, list[list[float]]]:
    """A side's values by round, each round's as its boots' values in the order
    the boots are first seen; without boot labels each value is a boot."""
    out: dict[Hashable, dict] = {}
    values = x.tolist()
    for i, (v, r) in enumerate(zip(values, rounds)):
        boot = i if boots is None else boots[i]
        out.setdefault(r, {}).setdefault(boot, []).append(v)
    return {r: list(by_boot.values()) for r, by_boot in out.items()}


def _flat(boots: list[list[float]]) -> list[float]:
    return [v for values in boots for v in values]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _ss(values: Sequence[float], centre: float) -> float:
    return sum((v - centre) ** 2 for v in values)


def _pure_error(rounds_b: list[list[list[float]]], rounds_c: list[list[list[float]]]
                ) -> dict | None:
    """The additive model's side contrast on boot means, with the pure error;
    None when the boot means leave fewer than PURE_DF degrees of freedom within
    their side and round. Each argument: a side's rounds, each as its boots' values."""
    # Each (side, round): its boot means, and the mean number of values a boot.
    units = [[([_mean(v) for v in boots], sum(map(len, boots)) / len(boots)) for boots in rounds]
             for rounds in (rounds_b, rounds_c)]
    df = sum(len(u) - 1 for side in units for u, _ in side)
    if df < PURE_DF:
        return None
    ss = sum(_ss(u, _mean(u)) for side in units for u, _ in side)
    v = [1 / (1 / len(ub) + 1 / len(uc)) for (ub, _), (uc, _) in zip(*units)]
    mb = [_mean(ub) for ub, _ in units[0]]
    mc = [_mean(uc) for uc, _ in units[1]]
    centre = (sum(a * b for a, b in zip(v, mb)) / sum(v), sum(a * b for a, b in zip(v, mc)) / sum(v))
    sd_unit = math.sqrt(ss / df)
    # needs_runs counts repetitions: a boot mean of m values stands for m of them.
    size = _mean([m for side in units for _, m in side])
    return dict(d=centre[1] - centre[0], se=sd_unit / math.sqrt(sum(v)), df=df,
                sd_per_run=sd_unit * math.sqrt(size), centre=centre)
