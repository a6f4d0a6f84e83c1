"""The outcomes' vocabulary: every word, rank, colour and export status of a verdict, once.

A cell's verdict has an outcome (iowatch.stats.verdict: regression, suspected,
inconclusive, improvement, no-change; a diagnostic cell is shown, never
judged), and a comparison has a state (Comparison.state: the same words, with
"unsure" for inconclusive, and "failed" when a cell gave no result on a side).
Pages, reports, the e-mail and the KCIDB export read the words from here, so
the text report, the dashboard's chips and the export cannot disagree about
what an outcome is called or how bad it is.

Outcome("inconclusive") and Outcome("unsure") are the same member: the cell's
word and the state's word of one outcome.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from enum import Enum

from iowatch import figures


@dataclass(frozen=True)
class _Words:
    word: str                # the cell's outcome as stored and exported (CellVerdict.outcome)
    state: str | None        # the comparison's state it makes (Comparison.state); None: never one
    label: str               # a cell's label on a page and in a report
    short: str               # a state's chip, one count of it
    plural: str              # several counts of it
    colour: str              # its chip's CSS class in dashboard/static/dashboard/dashboard.css (the word)
    kcidb: str | None        # the KCIDB test status of a cell with this outcome
    verdict: str | None      # `iowatch compare`'s verdict line for the state
    headline: str | None     # `iowatch check`'s line for a patch in the state ({where}: the runs)
    size_only: str | None = None  # the compare page's words when one sample a side is all there is


class Outcome(Enum):
    """The outcomes, worst first: a member's rank is its place here."""
    REGRESSION = _Words(
        "regression", "regression", "regression", "regression", "regressions", "regression",
        "FAIL", "REGRESSION: a deciding cell is confirmed slower", "REGRESSION",
        "a deciding cell is {change} slower")
    FAILED = _Words(
        "failed", "failed", "failed", "failed", "failed", "failed", None,
        "FAILED: a cell gave no performance result on a side",
        "FAILED CELLS (no performance result on a side)")
    SUSPECTED = _Words(
        "suspected", "suspected", "suspected regression", "suspected", "suspected", "suspected",
        "ERROR", "SUSPECTED REGRESSION: a deciding cell looks slower but is not confirmed; rerun",
        "SUSPECTED REGRESSION (not confirmed {where}; rerun)")
    UNSURE = _Words(
        "inconclusive", "unsure", "unsure, rerun", "unsure", "unsure", "inconclusive", "ERROR",
        "UNSURE: a deciding cell is undecided; rerun with more repetitions",
        "UNSURE (a deciding cell is undecided {where}; rerun)")
    IMPROVEMENT = _Words(
        "improvement", "improvement", "improvement", "improvement", "improvements", "improvement",
        "PASS", "improvement, and no deciding cell slower", "improvement",
        "a deciding cell is {change} faster")
    NO_CHANGE = _Words(
        "no-change", "no-change", "no change", "no change", "no change", "no-change", "PASS",
        "no change: every deciding cell rules out a slowdown beyond the minimum effect",
        "no change", "no deciding cell moved beyond its study's minimum effect")
    DIAGNOSTIC = _Words(
        "diagnostic", None, "diagnostic", "diagnostic", "diagnostic", "diagnostic", None, None, None)

    def __new__(cls, words: _Words):
        member = object.__new__(cls)
        member._value_ = words.word
        for f in fields(words):
            setattr(member, f.name, getattr(words, f.name))
        member.rank = len(cls.__members__)
        return member

    @classmethod
    def _missing_(cls, word):
        """A state's word: "unsure" is the outcome "inconclusive"."""
        return next((o for o in cls if o.state == word), None)

    def label_within(self, bound_pct: float | None, min_effect_pct: float) -> str:
        """The cell's label, "no change within X%" when its equivalence bound X is
        above the minimum effect (decided at the cap)."""
        if self is Outcome.NO_CHANGE and bound_pct is not None and bound_pct > min_effect_pct:
            return f"no change within {bound_pct:g}%"
        return self.label


# A comparison's states, worst first.
PATCH_STATES = tuple(o.state for o in Outcome if o.state)
# The states a drifted platform takes away: they claim the kernels' difference.
CONFIDENT_STATES = tuple(o.state for o in (Outcome.REGRESSION, Outcome.IMPROVEMENT,
                                            Outcome.NO_CHANGE))
# The undecided group: the outcomes more repetitions would decide (a gate's
# exit status 3, iowatch.exit_status), as a comparison's states and as a cell's words.
UNDECIDED = (Outcome.SUSPECTED, Outcome.UNSURE)
UNDECIDED_STATES = tuple(o.state for o in UNDECIDED)
UNDECIDED_OUTCOMES = tuple(o.word for o in UNDECIDED)
# The outcomes a deciding cell can have, worst first.
CELL_OUTCOMES = tuple(o.word for o in Outcome if o.kcidb is not None)


def outcome_label(outcome: str, bound_pct: float | None, min_effect_pct: float) -> str:
    """A cell's outcome as a report's label (Outcome.label_within)."""
    return Outcome(outcome).label_within(bound_pct, min_effect_pct)


NOTHING_TO_COMPARE = ("nothing to compare: the two sides have no deciding cell in common "
                      "(other studies, devices or filesystems); pick sides that ran the same cells")


def verdict_line(state: str, cells: Iterable[tuple[str, bool, float | None]],
                 failed: int = 0) -> tuple[str, str]:
    """A comparison's verdict line and the state its page colours it by, from
    its state and its deciding cells as (outcome, size_only, change_pct): no
    cell and no failed one is "nothing to compare"; a state that only cells of
    one sample a side made is "size only, not confirmed" (a size, not a
    confirmed change); else the state's verdict (`iowatch compare`'s line)."""
    cells = list(cells)
    if not cells and not failed:
        return NOTHING_TO_COMPARE, "nothing"
    outcome = Outcome(state)
    making = cells if outcome is Outcome.NO_CHANGE else [c for c in cells if Outcome(c[0]) is outcome]
    if outcome.size_only and making and all(size_only for _, size_only, _ in making):
        worst = max((c for _, _, c in making if c is not None), key=abs, default=None)
        change = "" if worst is None else figures.change(worst, signed=False)
        return (f"size only, not confirmed: {outcome.size_only.format(change=change)} on one "
                "sample a side (published numbers), which shows a size, not that it is real; "
                "measure both kernels to confirm it", "size-only")
    return outcome.verdict, state
