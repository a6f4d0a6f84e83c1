"""The bisect's culprit model: from the judged steps, how likely each commit is
the first bad one.

A step is judged by the policy (iowatch.judging.judge_step: the step against
both ends by compare_sides), never here. What this module adds is how the
judged steps add up, as Google's flake-aware culprit finding does for flaky
tests (Henderson, Dorward, Nickell, Johnston, Kondareddy, "Flake Aware Culprit
Finding", ICST 2023): Bayesian inference over which commit is the culprit,
with every observation allowed to be wrong.

- The unknown is c, the first bad commit, one of 1..n (0 is the good end, n
  the bad end: the ends differ by the policy's verdict before a step is taken).
  The prior is uniform over 1..n.
- A step at index i judged "bad" is evidence that c <= i; judged "good", that
  c > i. Each observation carries an error rate e: the chance that a step of
  the other kind is judged so. A decided step rests on a confirmed regression
  (bad: the step against good; good: bad against the step), so e is that
  verdict's adjusted one-sided p-value, at most the policy's false-discovery
  rate and at least ERROR_FLOOR (the test's own model is not exact: boots,
  drift). The likelihood of c is the product over the steps of 1 - e where
  the step agrees with c and e where it does not.
- An unsure step (undecided at the study's cap of repetitions), a skipped one
  (no build, no boot) and the ends add nothing.
- The result names the commit whose posterior is at least NAME_AT, or, when
  none is, the shortest run of consecutive commits that together hold NAME_AT:
  the candidates, never a silent choice of one.

Pure functions, no I/O.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

NAME_AT = 0.95
ERROR_FLOOR = 1e-3


@dataclass(frozen=True)
class Observation:
    index: int      # the commit measured, 1..n-1
    bad: bool       # judged bad (True) or good (False)
    error: float    # the chance a step of the other kind is judged so


@dataclass(frozen=True)
class Culprit:
    probabilities: dict[int, float]  # commit index (1..n) -> P(it is the first bad one)
    first_bad: int | None            # named when its probability is at least NAME_AT
    candidates: list[int]            # the shortest run of commits holding NAME_AT together

    @property
    def probability(self) -> float:
        """P(the culprit is the named commit, or among the candidates)."""
        return sum(self.probabilities[i] for i in self.candidates)

    @property
    def words(self) -> str:
        if self.first_bad is not None:
            return f"first bad commit: variant {self.first_bad} (probability {self.probability:.1%})"
        return (f"the first bad commit is one of variants {self.candidates} "
                f"(probability {self.probability:.1%} together)")


def culprit(n: int, observations: Sequence[Observation], *, name_at: float = NAME_AT) -> Culprit:
    """The posterior over the first bad commit among 1..n given the judged steps."""
    if n < 1:
        raise ValueError("a bisect needs at least one commit after the good one")
    weight = {}
    for c in range(1, n + 1):
        w = 1.0
        for o in observations:
            e = min(max(o.error, ERROR_FLOOR), 0.5)
            agrees = (c <= o.index) == o.bad
            w *= (1 - e) if agrees else e
        weight[c] = w
    total = sum(weight.values())
    post = {c: w / total for c, w in weight.items()}
    best = max(post, key=lambda c: (post[c], -c))
    if post[best] >= name_at:
        return Culprit(post, best, [best])
    # The shortest run of consecutive commits holding name_at, the most probable of equals.
    runs = [(b - a, -sum(post[i] for i in range(a, b + 1)), a, b)
            for a in range(1, n + 1) for b in range(a, n + 1)
            if sum(post[i] for i in range(a, b + 1)) >= name_at - 1e-12]
    _, _, a, b = min(runs)
    return Culprit(post, None, list(range(a, b + 1)))


def steps_left(span: int) -> int:
    """Measurements a bisect of `span` commits after the good one still needs (log2)."""
    steps = 0
    while span > 1:
        span = (span + 1) // 2
        steps += 1
    return steps
