"""What the commands that judge (check, run --against, nightly, bisect, compare)
exit with, so that a CI gate can tell a pass from a check that did not decide.

Issue 24: a check whose patches were still "unsure" after every round exited 0,
which a gate reads as a pass. An undecided comparison (a deciding cell still
unsure or suspected, or slower and not confirmed) has its own status. Each
state's status is the vocabulary's (Outcome.gate); the commands read it here.
"""
from __future__ import annotations

from iowatch.vocabulary.outcomes import Gate, Outcome

CLEAN, REGRESSION, ERROR, UNDECIDED = Gate.CLEAN, Gate.REGRESSION, Gate.ERROR, Gate.UNDECIDED
# The states a gate does not read as a pass nor as a regression (exit status 3).
UNDECIDED_STATES = tuple(o.state for o in Outcome if o.state and o.gate is UNDECIDED)

HELP = ("Exit 0: no regression, every deciding cell decided; 1: a regression; 2: an error; "
        "3: undecided (a deciding cell still unsure or suspected, or slower by less than X% "
        "and not confirmed).")


def of_states(states) -> int:
    """The status of some comparisons' states (iowatch.vocabulary.PATCH_STATES):
    a regression's if any state has it, else an undecided one's, else clean."""
    gates = {Outcome(s).gate for s in states}
    return int(next((g for g in (REGRESSION, UNDECIDED) if g in gates), CLEAN))
