"""The outcomes' vocabulary (iowatch.judging.outcomes): one enum, read everywhere."""
from __future__ import annotations

import pytest

from iowatch.judging import PATCH_STATES, state_of
from iowatch.judging.outcomes import CELL_OUTCOMES, UNDECIDED_OUTCOMES, UNDECIDED_STATES, Outcome
from iowatch.stats.verdict import OUTCOMES, UNSURE


def test_the_cell_outcomes_are_the_statistics_outcomes():
    assert set(CELL_OUTCOMES) == set(OUTCOMES)


def test_a_state_and_its_outcome_are_one_member():
    assert Outcome("unsure") is Outcome("inconclusive") is Outcome.UNSURE
    assert [Outcome(s).state for s in PATCH_STATES] == list(PATCH_STATES)


def test_the_states_are_worst_first():
    assert PATCH_STATES == ("regression", "failed", "suspected", "unsure", "slower",
                            "improvement", "no-change")
    assert [o.rank for o in Outcome] == sorted(o.rank for o in Outcome)


@pytest.mark.parametrize("outcomes, failed, drifted, state", [
    ([], False, False, "unsure"),
    ([], True, False, "failed"),
    (["no-change", "regression"], True, False, "regression"),
    (["no-change", "suspected"], True, False, "failed"),
    (["no-change", "inconclusive"], False, False, "unsure"),
    (["improvement", "no-change"], False, False, "improvement"),
    (["no-change"], False, False, "no-change"),
    (["no-change", "slower", "improvement"], False, False, "slower"),
    (["slower"], False, True, "unsure"),
    (["regression"], False, True, "unsure"),
    (["suspected"], False, True, "suspected"),
])
def test_the_state_is_the_worst_outcomes(outcomes, failed, drifted, state):
    assert state_of(outcomes, failed, drifted) == state


def test_an_unknown_word_is_refused():
    with pytest.raises(ValueError):
        Outcome("fine")


def test_the_undecided_group_is_the_statistics_unsure_cells():
    """The group a gate exits 3 on (exit_status) and the pages ask more runs of
    is the outcomes the statistics would decide with more runs (stats.UNSURE):
    an outcome added to one and not the other fails here."""
    assert set(UNDECIDED_OUTCOMES) == set(UNSURE)
    assert UNDECIDED_STATES == tuple(Outcome(o).state for o in UNDECIDED_OUTCOMES)
    assert set(UNDECIDED_STATES) < set(PATCH_STATES)
