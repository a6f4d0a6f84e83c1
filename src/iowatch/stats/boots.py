"""The variance between boots, from what a host has recorded (issue 41 item 1).

A bundle is one boot of its kernel, and every repetition in it shares that
boot's offset: where a boot lands on its disk, what the page cache and the
block layer's state were, which CPU the interrupts went to. With two boots or
more a side the verdict tests boot means and the offset's variance is in the
test. With one boot a side (`iowatch run --against`, `compare RUN RUN`, a
night against the last one, one uploaded run of a patch and one of its parent)
the sides cannot estimate it, and a test on the repetitions alone reads a
boot's offset as the kernel's change.

What the sides cannot say, the host's history can: the same cell measured in
several boots of one kernel (a check's rounds, confirmations, a kernel booted
on several nights). `between_boot_variance` estimates, from such groups, the
variance of one boot's mean about its kernel's on the log scale (one-way
ANOVA's between-boot mean square over the boots' size, pooled over kernels,
on its exact chi-square degrees of freedom). That is an upper estimate of the
offset's own variance: it holds the recorded boots' within-boot noise over
their size too. The moment estimator that subtracts it ((MSB - MSW)/n0, at
least 0, with Satterthwaite's degrees of freedom) was tried first and is
liberal: on 400 clean 40-cell one-boot checks (tests/stats/test_one_boot.py's
model, 8 kernels of 3 boots of 3 runs) it raised 5.25% false alarms where the
upper estimate raised 0.25%, and it confirmed a -50% cell less often (83%
against 90% of 60), its degrees of freedom being few wherever the estimate is
small. The verdict adds the estimate once per one-boot side to the
repetitions' standard error, on the combined degrees of freedom.

Pure functions: the adapters fetch the history (iowatch.judging.boots).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np

# A history must hold at least this many boots beyond one per kernel (the
# between-boot sum of squares' degrees of freedom) to stand in for the sides:
# with fewer, its estimate's own spread is wider than the answer it would give.
MIN_DF = 3

# Hold a change confirmed on one boot a side with no record ("suspected: one
# boot a side, boot again to confirm"): measured at 0 false alarms in 1,000
# clean checks (tests/stats/test_one_boot.py) against 47% read as independent
# repetitions. On as shipped; IOWATCH_HOLD_ONE_BOOT=0 turns it off for a
# measurement of the unheld path (bench/accuracy), never for a verdict anyone reads.
HOLD_WITHOUT_RECORD = os.environ.get("IOWATCH_HOLD_ONE_BOOT", "1") != "0"


@dataclass(frozen=True)
class BootVariance:
    """The variance of one boot's offset on the log scale (`var`), worth `df`
    degrees of freedom, from `boots` boots of `kernels` kernels on the host."""
    var: float
    df: float
    boots: int
    kernels: int

    @property
    def sd_pct(self) -> float:
        """One boot's offset as a % sd, for the words."""
        return math.expm1(math.sqrt(self.var)) * 100

    @property
    def words(self) -> str:
        return (f"the variance between boots taken from {self.boots} recorded boots of "
                f"{self.kernels} kernel{'s' if self.kernels != 1 else ''} on this host "
                f"(sd {self.sd_pct:.1f}% a boot)")


def between_boot_variance(kernels: Sequence[Sequence[Sequence[float]]]) -> BootVariance | None:
    """The variance of one boot's mean about its kernel's, for a cell, from its
    history: each kernel a list of boots, each boot that boot's positive
    values (the module's docstring says why this upper estimate). Kernels with
    fewer than two boots, and boots without a value, add nothing. None when the
    history holds fewer than MIN_DF degrees of freedom between boots, or a value
    that is not positive (the log scale's test does not judge such a cell)."""
    ss_b = 0.0
    df_b = 0
    weights = 0.0  # sum over kernels of (N - sum n_i^2 / N): ANOVA's n0 times df_b
    boots = used = 0
    for kernel in kernels:
        groups = [np.log(np.asarray(b, dtype=float)) for b in kernel if len(b)]
        if len(groups) < 2:
            continue
        if any((~np.isfinite(g)).any() for g in groups):
            return None
        sizes = np.asarray([len(g) for g in groups], dtype=float)
        means = np.asarray([g.mean() for g in groups])
        grand = float((sizes * means).sum() / sizes.sum())
        ss_b += float((sizes * (means - grand) ** 2).sum())
        df_b += len(groups) - 1
        weights += float(sizes.sum() - (sizes ** 2).sum() / sizes.sum())
        boots += len(groups)
        used += 1
    if df_b < MIN_DF:
        return None
    n0 = weights / df_b  # the boots' effective size (their mean size when equal)
    return BootVariance(ss_b / df_b / n0, float(df_b), boots, used)


def with_boot_offsets(se: float, df: float, prior: BootVariance, sides: int
                      ) -> tuple[float, float]:
    """The standard error and degrees of freedom of a difference of means of
    which `sides` sides (1 or 2) are one boot each, the repetitions' own (se,
    df) widened by the recorded offsets' variance (se² + sides × var), with
    Satterthwaite's degrees of freedom over the two parts."""
    extra = prior.var * sides
    total = se ** 2 + extra
    if extra == 0:
        # The history saw no offset: its bound still limits how sure the test is.
        return se, min(df, prior.df)
    combined = total ** 2 / (se ** 4 / df + extra ** 2 / prior.df)
    return math.sqrt(total), combined
