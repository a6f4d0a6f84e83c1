"""The bisect oracle: is a commit between a good and a bad one good or bad?

A performance bisect has no test that fails: every commit gives a sample, and
the question is which end it resembles. `place` puts the candidate's median on
the line from good's median (0) to bad's (1):

- at or below GOOD_BELOW it is good, at or above BAD_ABOVE it is bad;
- between them it is unclear: the bisect measures it again and pools the
  samples, and when it is still unclear the nearer end decides, said so.

The ends must differ first (`ends_differ`: the verdict engine calls the change
a regression), otherwise there is nothing to bisect. Mann–Whitney p-values
against both ends are reported as evidence, not used to decide: with the few
repetitions a boot allows (3 to 5) a p-value cannot tell a half-way commit
from either end, while the position can. Pure functions, no I/O.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence

from iowatch.stats.verdict import mann_whitney_p

GOOD_BELOW = 0.35
BAD_ABOVE = 0.65


@dataclass(frozen=True)
class Placement:
    outcome: str              # "good", "bad" or "unclear"
    position: float           # 0: good's median, 1: bad's median
    median: float
    p_vs_good: float | None   # two-sided Mann–Whitney, None with fewer than 2 samples a side
    p_vs_bad: float | None
    decided_by_nearer: bool = False  # unclear, then settled by the nearer end

    @property
    def words(self) -> str:
        where = f"{self.position:.0%} of the way from good to bad"
        if self.outcome == "unclear":
            return f"unclear: {where}"
        how = " (still between the ends after more runs: the nearer end decides)" \
            if self.decided_by_nearer else ""
        return f"{self.outcome}: {where}{how}"


def _p(x: Sequence[float], y: Sequence[float]) -> float | None:
    return mann_whitney_p(x, y) if len(x) >= 2 and len(y) >= 2 else None


def place(good: Sequence[float], bad: Sequence[float], candidate: Sequence[float], *,
          settle: bool = False) -> Placement:
    """Where the candidate's median lies between the ends; `settle` turns an
    unclear placement into the nearer end's (the last measurement allowed)."""
    if not good or not bad or not candidate:
        raise ValueError("place needs samples of good, bad and the candidate")
    mg, mb, mc = (statistics.median(x) for x in (good, bad, candidate))
    if mg == mb:
        raise ValueError(f"good and bad have the same median ({mg:g}): nothing to bisect")
    position = (mc - mg) / (mb - mg)
    if position <= GOOD_BELOW:
        outcome = "good"
    elif position >= BAD_ABOVE:
        outcome = "bad"
    else:
        outcome = "unclear"
    nearer = False
    if outcome == "unclear" and settle:
        outcome, nearer = ("bad" if position >= 0.5 else "good"), True
    return Placement(outcome, position, mc, _p(good, candidate), _p(bad, candidate), nearer)


def steps_left(span: int) -> int:
    """Measurements a bisect of `span` commits after the good one still needs (log2)."""
    steps = 0
    while span > 1:
        span = (span + 1) // 2
        steps += 1
    return steps
