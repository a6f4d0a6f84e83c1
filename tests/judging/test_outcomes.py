"""The outcomes' vocabulary (iowatch.vocabulary.outcomes): one enum, read everywhere."""
from __future__ import annotations

import pytest

from iowatch import exit_status
from iowatch.judging import state_of
from iowatch.stats import verdict
from iowatch.vocabulary import (CELL_OUTCOMES, PATCH_STATES, STORED_OUTCOMES, UNDECIDED_OUTCOMES,
                                UNDECIDED_STATES, Gate, Outcome)


def test_the_cell_outcomes_are_the_statistics_and_the_stores_outcomes():
    """The statistics name their outcomes by the vocabulary's words, and the
    store's check constraint lists the same words."""
    statistics = {verdict.REGRESSION, verdict.SUSPECTED, verdict.SLOWER, verdict.IMPROVEMENT,
                  verdict.NO_CHANGE, verdict.INCONCLUSIVE}
    assert set(CELL_OUTCOMES) == statistics == set(STORED_OUTCOMES)


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


def test_the_undecided_group_and_the_gate_come_from_the_outcomes():
    """The group the pages ask more runs of is the outcomes more runs would
    decide (Outcome.undecided), and a gate exits 3 on them and on "slower"
    (Outcome.gate): the map of states to exit statuses is the vocabulary's."""
    assert set(UNDECIDED_OUTCOMES) == {verdict.SUSPECTED, verdict.INCONCLUSIVE}
    assert exit_status.UNDECIDED_STATES == ("suspected", "unsure", "slower")
    assert {s: exit_status.of_states([s]) for s in PATCH_STATES} == {
        "regression": Gate.REGRESSION, "failed": Gate.CLEAN, "suspected": Gate.UNDECIDED,
        "unsure": Gate.UNDECIDED, "slower": Gate.UNDECIDED, "improvement": Gate.CLEAN,
        "no-change": Gate.CLEAN}
    assert UNDECIDED_STATES == tuple(Outcome(o).state for o in UNDECIDED_OUTCOMES)
    assert set(UNDECIDED_STATES) < set(PATCH_STATES)
