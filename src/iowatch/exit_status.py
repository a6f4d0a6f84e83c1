"""What the commands that judge (check, run --against, nightly, bisect, compare)
exit with, so that a CI gate can tell a pass from a check that did not decide.

Issue 24: a check whose patches were still "unsure" after every round exited 0,
which a gate reads as a pass. An undecided comparison (a deciding cell still
unsure or suspected) has its own status.
"""
from __future__ import annotations

# The undecided group is the vocabulary's, with "slower" (the commands read it here too).
from iowatch.judging.outcomes import GATE_UNDECIDED_STATES as UNDECIDED_STATES  # noqa: F401
from iowatch.judging.outcomes import Outcome

CLEAN = 0       # every deciding cell decided, none a regression
REGRESSION = 1  # a deciding cell is confirmed slower
ERROR = 2       # bad arguments, or nothing could be measured or judged
UNDECIDED = 3   # no regression, but a deciding cell is still unsure, suspected, or slower
#                 by less than X% and not confirmed (issue 41: neither a regression nor a pass)

HELP = ("Exit 0: no regression, every deciding cell decided; 1: a regression; 2: an error; "
        "3: undecided (a deciding cell still unsure or suspected, or slower by less than X% "
        "and not confirmed).")


def of_states(states) -> int:
    """The status of some comparisons' states (iowatch.judging.PATCH_STATES)."""
    states = set(states)
    if Outcome.REGRESSION.state in states:
        return REGRESSION
    return UNDECIDED if states & set(UNDECIDED_STATES) else CLEAN
