"""The bisect's judge: each step against both ends by the one policy (judge_step), and
the first bad commit the judged steps point at (culprit).

iowatch.bisect.search asks judge_step what each measured step is, and
`culprit` (the posterior of iowatch.stats.oracle, the bisect's culprit model)
what the steps so far say: the bisect reaches its statistics through the
judging package only."""
from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from iowatch.side_data import Side, pool
from iowatch.judging.policy import Comparison, compare_sides, more_runs, platform_words
from iowatch.vocabulary import FDR
from iowatch.stats import CellVerdict
from iowatch.stats.oracle import NAME_AT, Culprit, Observation, culprit, steps_left
from iowatch.stats.sequential import next_target
from iowatch.studies import Study


@dataclass(frozen=True)
class StepVerdict:
    """A bisect step judged against both ends by compare_sides, in the followed cell.

    bad: the step is a confirmed regression against good (the first bad commit
    is this one or before it; `between` when it is also confirmed better than
    bad: part of the change). good: no change against good (a slowdown beyond
    the minimum effect ruled out), and bad is a confirmed regression against
    the step. Anything else is unsure: `wants_runs` says how many repetitions
    of the step the two comparisons ask for (0 when the step is at its study's
    cap), `wants_good` and `wants_bad` how many of each end. `error` is the
    chance a step of the other kind is judged so: the deciding verdict's
    adjusted p-value."""
    outcome: str                     # "good", "bad" or "unsure"
    vs_good: CellVerdict | None      # good (base) against the step (candidate)
    vs_bad: CellVerdict | None       # the step (base) against bad (candidate)
    median: float
    position: float                  # 0: good's median, 1: bad's (shown, never deciding)
    error: float
    wants_runs: int = 0
    between: bool = False
    wants_good: int = 0              # repetitions of the ends the comparisons ask for
    wants_bad: int = 0
    platform: str = ""               # the canary's drift between the step and an end, in words

    @property
    def words(self) -> str:
        def said(v: CellVerdict | None) -> str:
            return "not measured" if v is None else f"{v.outcome} ({v.change_pct:+.1f}%)" \
                if v.change_pct is not None else v.outcome
        how = f"against good {said(self.vs_good)}, against bad {said(self.vs_bad)}"
        if self.platform:
            how += f"; {self.platform}"
        if self.outcome == "bad" and self.between:
            return f"bad, part of the change: {how}"
        return f"{self.outcome}: {how}"


def judge_step(good: Side, bad: Side, step: Side, target: CellVerdict, *,
               studies: dict[str, Study], fdr: float = FDR, history=None) -> StepVerdict:
    """The step against both ends, by the one policy, in the cell `target` names;
    `history`: the host's record of its noise between boots (iowatch.judging.boots)."""
    key = target.key.pooled
    vs_good = compare_sides(good, step, studies=studies, fdr=fdr, history=history)
    vs_bad = compare_sides(step, bad, studies=studies, fdr=fdr, history=history)

    def of(cmp: Comparison) -> CellVerdict | None:
        return next((v for v in cmp.verdicts if v.key.pooled == key), None)
    g, b = of(vs_good), of(vs_bad)
    values = {role: pool(side).values.get(key, []) for role, side in
              (("good", good), ("bad", bad), ("step", step))}
    med = {role: median(v) if v else float("nan") for role, v in values.items()}
    span = med["bad"] - med["good"]
    position = (med["step"] - med["good"]) / span if span else float("nan")
    confirmed = (lambda v: v is not None and v.outcome == "regression")
    # A canary that moved between the step's boots and an end's: the step's
    # verdict may be the platform's, so it decides nothing (Comparison.regressions).
    drift = next((platform_words(c) for c in (vs_good, vs_bad) if c.platform), "")
    if drift:
        outcome, error = "unsure", 0.5
    elif confirmed(g):
        outcome, error = "bad", g.p_adjusted
    elif g is not None and (g.outcome == "improvement" or g.outcome == "no-change"
                            and g.bound_pct is not None and g.bound_pct <= g.min_effect_pct) \
            and confirmed(b):
        # "No change within X%" with X above the minimum effect is no evidence of good.
        outcome, error = "good", b.p_adjusted
    else:
        outcome, error = "unsure", 0.5
    wants, ends = 0, {"good": 0, "bad": 0}
    if outcome == "unsure":
        # What each comparison's next look asks of the step, and of the ends.
        n = {role: len(v) for role, v in values.items()}
        for cmp, step_side, end, end_side in ((vs_good, "candidate", "good", "base"),
                                              (vs_bad, "base", "bad", "candidate")):
            want = more_runs(cmp).get(key.location)
            if want is not None and getattr(want, step_side) > n["step"]:
                wants = max(wants, getattr(want, step_side))
            if want is not None and getattr(want, end_side) > n[end]:
                ends[end] = getattr(want, end_side)
        if drift and not wants:
            # Decided cells, but on a moved platform: the step's next look, in
            # new boots that pool with these (none past the cap).
            cap = target.cap
            wants = next_target(n["step"], cap=cap) if n["step"] < cap else 0
    return StepVerdict(outcome, g, b, med["step"], position,
                       fdr if error is None else min(error, fdr), wants,
                       between=outcome == "bad" and confirmed(b),
                       wants_good=ends["good"], wants_bad=ends["bad"], platform=drift)


