"""Which cell is worst: one order for the nightly's bisect, `iowatch bisect`, the
pages and the regression mail (issue 43 item 3).

The order: a confirmed regression before a suspected one (and each outcome
before the ones below it in Outcome's rank), then the slowdown in units of the
cell's minimum effect (`severity`: -30% on a 10% study is worse than -40% on a
20% one), then the caller's own tie-break (a cell's name). The outcome comes
first because a bisect and a reader should follow what judging confirmed, not
a larger change it could not; the slowdown is measured against the minimum
effect because that is the size each study says matters, so cells of studies
with different minimum effects are compared on one scale. Before, the nightly
took the largest % change, `iowatch bisect` the largest absolute change (a
faster cell included) and the pages the severity whatever the outcome.

The pages order many regressions in SQL (dashboard/attention.py's
severity_of): it is `severity` written as a query, and a test holds the two
equal (tests/webapp/test_regressions.py).
"""
from __future__ import annotations

from iowatch.vocabulary.outcomes import Outcome


def worse_pct(change_pct: float | None, direction: str) -> float | None:
    """How much slower, in %: positive when the metric moved the wrong way;
    None without a change or for a metric that is information only."""
    if change_pct is None or direction not in ("higher", "lower"):
        return None
    return -change_pct if direction == "higher" else change_pct


def severity(change_pct: float | None, direction: str, min_effect_pct: float | None) -> float | None:
    """The slowdown in minimum effects (worse_pct over the minimum effect; the
    worse_pct itself where the study gives none)."""
    worse = worse_pct(change_pct, direction)
    if worse is None or not min_effect_pct:
        return worse
    return worse / min_effect_pct


def worst_order(outcome: str, severity_: float | None) -> tuple[int, float]:
    """The sort key of a cell, worst first when sorted ascending: its outcome's
    rank, then its severity, largest first (none last)."""
    return Outcome(outcome).rank, -severity_ if severity_ is not None else float("inf")


def verdict_order(v) -> tuple[int, float]:
    """worst_order of a verdict-shaped object (a CellVerdict, a stored verdict)."""
    return worst_order(v.outcome, severity(v.change_pct, v.direction, v.min_effect_pct))
