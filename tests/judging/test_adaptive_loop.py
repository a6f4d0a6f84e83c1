"""iowatch.judging.adaptive.adapt: the one loop of check, run --against and
the bisect; when it stops and what it reports."""
from __future__ import annotations

from iowatch.judging.adaptive import adapt


def counter_path(decided_at: int, adds: bool = True):
    """A path whose judgement is the count measured, decided at `decided_at`."""
    state = {"n": 5, "judged": 0, "measured": []}

    def judge():
        state["judged"] += 1
        return state["n"]

    def wanted(n):
        return None if n >= decided_at else n + 5

    def measure(target, round_no):
        state["measured"].append((target, round_no))
        if adds:
            state["n"] = target
        return adds

    return state, judge, wanted, measure


def test_it_measures_what_each_judgement_wants_until_decided():
    state, judge, wanted, measure = counter_path(decided_at=15)
    done = adapt(judge, wanted, measure)
    assert (done.judgement, done.rounds, done.why) == (15, 2, "decided")
    assert state["measured"] == [(10, 1), (15, 2)] and state["judged"] == 3


def test_a_round_limit_and_nothing_added_end_it_and_say_so():
    state, judge, wanted, measure = counter_path(decided_at=100)
    done = adapt(judge, wanted, measure, max_rounds=3)
    assert (done.judgement, done.rounds, done.why) == (20, 3, "round limit")

    state, judge, wanted, measure = counter_path(decided_at=100, adds=False)
    done = adapt(judge, wanted, measure)
    assert (done.judgement, done.rounds, done.why) == (5, 1, "nothing added")


def test_a_first_judgement_made_by_the_path_is_not_made_again():
    state, judge, wanted, measure = counter_path(decided_at=10)
    done = adapt(judge, wanted, measure, first=judge())
    assert done.rounds == 1 and state["judged"] == 2  # the path's, then after the round
