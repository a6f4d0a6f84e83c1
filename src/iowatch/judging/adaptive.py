"""The adaptive-repetition loop, once for every path that measures until the
policy is sure: `iowatch check` (each patch against its parent, in rounds of
boots), `iowatch run --against` (the candidate against a fixed base bundle)
and the bisect (its ends, then each step against both ends).

Each path says three things and the loop does the rest:
- judge(): the judgement of what is measured so far (a Comparison, a
  StepVerdict, ...);
- wanted(judgement): what it still asks to be measured, from the policy's own
  answer (`more_runs`, `StepVerdict.wants_runs`, ...); empty or None when the
  judgement is decided, or every cell that is not is at its study's cap;
- measure(wants, round): measure it; False when nothing could be added (a
  failed boot, a cell that gave no samples), which ends the loop rather than
  asking again for what cannot come.

The loop stops at `max_rounds` when a path bounds its rounds (the check: one
round per look of the largest cap)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Generic, TypeVar

J = TypeVar("J")  # a judgement
W = TypeVar("W")  # what a judgement wants measured


@dataclass
class Adapted(Generic[J]):
    judgement: J   # the last judgement, of everything measured
    rounds: int    # the rounds measured after the first judgement
    why: str       # "decided", "nothing added" or "round limit"


def adapt(judge: Callable[[], J], wanted: Callable[[J], W | None],
          measure: Callable[[W, int], bool], *, max_rounds: int | None = None,
          first: J | None = None) -> Adapted[J]:
    """Judge (or start from `first`, a judgement the path already made, as the
    check does to size its rounds); while the judgement wants more (and rounds
    are left), measure it and judge again."""
    judgement, rounds = (judge() if first is None else first), 0
    while max_rounds is None or rounds < max_rounds:
        wants = wanted(judgement)
        if not wants:
            return Adapted(judgement, rounds, "decided")
        rounds += 1
        if not measure(wants, rounds):
            return Adapted(judgement, rounds, "nothing added")
        judgement = judge()
    return Adapted(judgement, rounds, "round limit")
