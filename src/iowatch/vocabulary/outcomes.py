"""The outcomes' vocabulary: every word, rank, gate and export status of a verdict, once.

A cell's verdict has an outcome (iowatch.stats.verdict: regression, suspected,
inconclusive, improvement, no-change; a diagnostic cell is shown, never
judged), and a comparison has a state (Comparison.state: the same words, with
"unsure" for inconclusive, and "failed" when a cell gave no result on a side).
The statistics (iowatch.stats), the policy (iowatch.judging), pages, reports,
the e-mail, the exit statuses and the KCIDB export read the words from here, so
the text report, the dashboard's chips, a gate and the export cannot disagree
about what an outcome is called or how bad it is. Plain data, below everything
that reads it (it imports only iowatch.figures).

Outcome("inconclusive") and Outcome("unsure") are the same member: the cell's
word and the state's word of one outcome.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from enum import Enum, IntEnum
import math

from iowatch import figures


class Gate(IntEnum):
    """A CI gate's exit status of a command that judges (iowatch.exit_status
    says it to the commands): what a comparison's state makes of it."""
    CLEAN = 0       # every deciding cell decided, none a regression
    REGRESSION = 1  # a deciding cell is confirmed slower
    ERROR = 2       # bad arguments, or nothing could be measured or judged
    UNDECIDED = 3   # no regression, but a deciding cell is still unsure, suspected, or slower
    #                 by less than X% and not confirmed (issue 41: neither a regression nor a pass)


@dataclass(frozen=True)
class _Words:
    word: str                # the cell's outcome as stored and exported (CellVerdict.outcome)
    state: str | None        # the comparison's state it makes (Comparison.state); None: never one
    # A cell's label on a page and in a report. A chip's CSS class is the word or
    # the state itself (webapp/iowatch_web/dashboard/static/dashboard/dashboard.css).
    label: str
    short: str               # a state's chip, one count of it
    plural: str              # several counts of it
    kcidb: str | None        # the KCIDB test status of a cell with this outcome
    verdict: str | None      # `iowatch compare`'s verdict line for the state
    headline: str | None     # `iowatch check`'s line for a patch in the state ({where}: the runs)
    size_only: str | None = None  # the compare page's words when one sample a side is all there is
    # What a gate reads of a comparison in the state (the failed cells' own exit is
    # the command's: a state of "failed" alone is no regression and not undecided).
    gate: Gate = Gate.CLEAN
    undecided: bool = False  # more repetitions would decide it (the undecided group)


class Outcome(Enum):
    """The outcomes, worst first: a member's rank is its place here."""
    REGRESSION = _Words(
        "regression", "regression", "regression", "regression", "regressions",
        "FAIL", "REGRESSION: a deciding cell is confirmed slower", "REGRESSION",
        "a deciding cell is {change} slower", gate=Gate.REGRESSION)
    FAILED = _Words(
        "failed", "failed", "failed", "failed", "failed", None,
        "FAILED: a cell gave no performance result on a side",
        "FAILED CELLS (no performance result on a side)")
    SUSPECTED = _Words(
        "suspected", "suspected", "suspected regression", "suspected", "suspected",
        "ERROR", "SUSPECTED REGRESSION: a deciding cell looks slower but is not confirmed; rerun",
        "SUSPECTED REGRESSION (not confirmed {where}; rerun)", gate=Gate.UNDECIDED, undecided=True)
    UNSURE = _Words(
        "inconclusive", "unsure", "unsure, rerun", "unsure", "unsure", "ERROR",
        "UNSURE: a deciding cell is undecided; rerun with more repetitions",
        "UNSURE (a deciding cell is undecided {where}; rerun)", gate=Gate.UNDECIDED, undecided=True)
    SLOWER = _Words(
        "slower", "slower", "slower, not confirmed", "slower, not confirmed",
        "slower, not confirmed", "ERROR",
        "SLOWER, NOT CONFIRMED: a deciding cell's 95% CI lies wholly on the slower side, "
        "but the slowdown is not confirmed beyond the minimum effect within the cap",
        "SLOWER, NOT CONFIRMED (a deciding cell's CI is below zero {where}; not a regression, "
        "not \"no change\")", gate=Gate.UNDECIDED)
    IMPROVEMENT = _Words(
        "improvement", "improvement", "improvement", "improvement", "improvements",
        "PASS", "improvement, and no deciding cell slower", "improvement",
        "a deciding cell is {change} faster")
    NO_CHANGE = _Words(
        "no-change", "no-change", "no change", "no change", "no change", "PASS",
        "no change: every deciding cell rules out a slowdown beyond the minimum effect",
        "no change", "no deciding cell moved beyond its study's minimum effect")
    DIAGNOSTIC = _Words(
        "diagnostic", None, "diagnostic", "diagnostic", "diagnostic", None, None, None)

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

    def label_of(self, ci: tuple[float | None, float | None], direction: str,
                 min_effect_pct: float) -> str:
        """The cell's label, read off its 95% CI (issue 41): "no change" only when
        the CI lies inside ± the minimum effect; "no change within X%" when it
        holds zero and reaches X; "slower by less than X%, not confirmed" for the
        SLOWER outcome; a better-side CI not confirmed says so. A cell whose X is
        over NOISY_TIMES minimum effects says the study cannot decide it."""
        x = reach(self.word, ci, direction, min_effect_pct)
        if x is None:
            return self.label
        noisy = ", too noisy to decide" if x > NOISY_TIMES * min_effect_pct else ""
        if self is Outcome.SLOWER:
            return f"slower by less than {x:g}%, not confirmed{noisy}"
        _, far = worse_side(ci, direction)
        if far < 0:  # wholly on the better side
            return f"faster by less than {x:g}%, not confirmed{noisy}"
        return f"no change within {x:g}%{noisy}"


# A comparison's states, worst first.
PATCH_STATES = tuple(o.state for o in Outcome if o.state)


def boots_words(boots: tuple[int, int] | None, recorded: str | None = None) -> str | None:
    """"N boots a side" of a comparison's (base, candidate) boots, and what one
    boot a side cannot carry (issue 41 item 1); None when no cell counted them.
    `recorded`: the words of the host's recorded variance between boots that
    stood in for the sides' (iowatch.stats.boots.BootVariance.words)."""
    if boots is None:
        return None
    b, c = boots
    words = f"{b} boot{'s' if b != 1 else ''} a side" if b == c else \
        f"{b} vs {c} boots a side (base vs candidate)"
    if min(b, c) < 2 and recorded:
        words += f"; {recorded}"
    elif min(b, c) < 2:
        words += ("; a boot's own offset is not in the test with one boot a side: boot each "
                  "kernel again (or `iowatch check`) before trusting a change")
    return words


# The states a drifted platform takes away: they claim the kernels' difference.
CONFIDENT_STATES = tuple(o.state for o in (Outcome.REGRESSION, Outcome.SLOWER,
                                            Outcome.IMPROVEMENT, Outcome.NO_CHANGE))
# A confirmed change, either way.
CONFIRMED_OUTCOMES = tuple(o.word for o in (Outcome.REGRESSION, Outcome.IMPROVEMENT))
# The undecided group: the outcomes more repetitions would decide, as a
# comparison's states and as a cell's words.
UNDECIDED = tuple(o for o in Outcome if o.undecided)
UNDECIDED_STATES = tuple(o.state for o in UNDECIDED)
UNDECIDED_OUTCOMES = tuple(o.word for o in UNDECIDED)
# The outcomes a deciding cell can have, worst first.
CELL_OUTCOMES = tuple(o.word for o in Outcome if o.kcidb is not None)
# The same outcomes in the order the store's check constraint lists them
# (regressions migration 0019): another order would be a migration that changes nothing.
STORED_OUTCOMES = ("regression", "suspected", "slower", "improvement", "no-change", "inconclusive")


# A cell whose X (the CI's reach) is over this many minimum effects cannot be
# decided by its study at this noise: its label and the reports say so.
NOISY_TIMES = 3
# A matrix is dominated by such cells when more than this share of its deciding
# cells are: the report says so once, at the top.
NOISY_SHARE = 0.5


def worse_side(ci: tuple[float | None, float | None], direction: str) -> tuple[float, float]:
    """The 95% CI (in % change) as (near, far) slowdowns: the interval's ends in
    the metric's worse direction, smaller first. Near > 0: wholly slower."""
    low, high = ci
    return (-high, -low) if direction == "higher" else (low, high)


def reach(outcome: str, ci: tuple[float | None, float | None], direction: str,
          min_effect_pct: float) -> float | None:
    """X of a cell's words, None when there is none: for "slower" the far end of
    its CI, for "no-change" the CI's largest distance from zero, rounded up to a
    whole %, when it is beyond the minimum effect (inside it: plain "no change")."""
    if outcome not in ("slower", "no-change") or None in ci or direction == "info":
        return None
    near, far = worse_side(ci, direction)
    x = far if outcome == "slower" else max(abs(near), abs(far))
    if not math.isfinite(x) or x <= min_effect_pct:
        return None
    return float(math.ceil(x - 1e-9))


def too_noisy(v) -> bool:
    """A deciding cell whose X is over NOISY_TIMES minimum effects: its study
    cannot decide it at this noise. `v` is verdict-shaped (outcome, ci_low,
    ci_high, direction, min_effect_pct)."""
    x = reach(v.outcome, (v.ci_low, v.ci_high), v.direction, v.min_effect_pct)
    return x is not None and x > NOISY_TIMES * v.min_effect_pct


def noisy_matrix_words(verdicts) -> str:
    """One line for the top of a report when most deciding cells are too noisy
    for their studies' minimum effect; "" otherwise."""
    verdicts = [v for v in verdicts if v.direction != "info" and not v.size_only]
    noisy = [v for v in verdicts if too_noisy(v)]
    if not verdicts or len(noisy) <= NOISY_SHARE * len(verdicts):
        return ""
    effects = "/".join(f"{m:g}%" for m in sorted({v.min_effect_pct for v in noisy}))
    return (f"too noisy to decide: {len(noisy)} of {len(verdicts)} deciding cells ended with a "
            f"95% CI reaching over {NOISY_TIMES}x their studies' minimum effect ({effects}); "
            "at this noise the study cannot tell a change of that size from none: measure on "
            "a quieter host or raise the study's max_runs")


def outcome_label(outcome: str, ci: tuple[float | None, float | None], direction: str,
                  min_effect_pct: float) -> str:
    """A cell's outcome as a report's label (Outcome.label_of)."""
    return Outcome(outcome).label_of(ci, direction, min_effect_pct)


def verdict_label(v) -> str:
    """The label of a verdict-shaped object (a CellVerdict, a stored verdict)."""
    return outcome_label(v.outcome, (v.ci_low, v.ci_high), v.direction, v.min_effect_pct)


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
