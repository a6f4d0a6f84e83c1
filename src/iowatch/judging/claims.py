"""The claim verdict: a published claim (a post's before and after of one metric)
against the lab's comparison of the two sides, with its own words, once.

A claim is what the Published results page calls one (webapp
iowatch_web/dashboard/published.py): one metric of one job group between two
published sets of one device class that follow each other in the study file,
the earlier the before. The lab's side is judged by compare_sides (the one
verdict policy) with the post's before as the base, so the lab's change reads
in the same direction as the post's; `judge_claim` then gives each lab device
one outcome of OUTCOMES (reproduced, not reproduced, opposite, not
reproducible here, not comparable) and a reproduced one its size
(`size_of`: in size, smaller, larger). `iowatch reproduce`, the check's
claims, the claims mail and the Published results page all read these; none
decides a claim itself (tests/judging/test_one_policy.py).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from iowatch import figures
from iowatch.vocabulary.outcomes import CONFIRMED_OUTCOMES, Outcome
from iowatch.vocabulary.wording import ci_name
from iowatch.judging.policy import Comparison, min_effect
from iowatch.metrics import INFO, METRICS
from iowatch.stats import CellVerdict
from iowatch.studies import JudgedOn, PublishedSet, Study

REPRODUCED, NOT_REPRODUCED, OPPOSITE = "reproduced", "not-reproduced", "opposite"
NOT_REPRODUCIBLE, NOT_COMPARABLE = "not-reproducible", "not-comparable"
# The claim judge's outcomes with their words, best first.
OUTCOMES = {REPRODUCED: "reproduced", NOT_REPRODUCED: "not reproduced", OPPOSITE: "opposite",
            NOT_REPRODUCIBLE: "not reproducible here", NOT_COMPARABLE: "not comparable"}
# Each outcome's rule, in the words the text report's readers and the Published
# results page are given.
OUTCOME_RULES = {
    REPRODUCED: "the lab's verdict is confirmed (regression or improvement) and its change has "
                "the post's sign; a post's change under the study's minimum effect is reproduced "
                "by no change",
    OPPOSITE: "confirmed, the other way",
    NOT_REPRODUCED: "the lab's verdict is no change, suspected or unsure",
    NOT_REPRODUCIBLE: "the study names the metric as needing real hardware, and the lab measured "
                      "it without reproducing it",
    NOT_COMPARABLE: "the metric does not decide in the study or is not measured, the lab has no "
                    "cell of the claim's class with the study's first filesystem, the cell "
                    "failed, or the lab has no runs of a side",
}
# A reproduced claim's size against the post's: "in size" when the lab's log-ratio
# (ln of after over before) is within a factor of two of the post's, the same sign
# (SIZE_FACTOR); else smaller or larger. A claim not reproduced in direction has no size.
IN_SIZE, SMALLER, LARGER = "in-size", "smaller", "larger"
SIZE_FACTOR = 2.0
SIZES = {IN_SIZE: "in size", SMALLER: "in direction, under half the post's size",
         LARGER: "in direction, over twice the post's size"}
# A claim judged on several lab devices is reproduced only where each reproduced it:
# the first of these that a device gave is the claim's.
_CLAIM_ORDER = (OPPOSITE, NOT_REPRODUCED, NOT_REPRODUCIBLE, REPRODUCED)


@dataclass(frozen=True)
class Claim:
    """One published change: a metric of a group between two sets of one class."""
    group: str
    metric: str
    device_class: str
    before: PublishedSet
    after: PublishedSet
    before_value: float  # in the post's unit
    after_value: float
    unit: str  # the post's unit

    @property
    def change_pct(self) -> float | None:
        b = self.before_value
        return (self.after_value - b) / b * 100 if b else None


def published_claims(study: Study) -> list[Claim]:
    """Per device class, each two published sets that follow each other in the
    study file, and each metric both report (the Published results page's rule)."""
    out = []
    classes = list(dict.fromkeys(p.device_class for p in study.published))
    for cls in classes:
        sets = [p for p in study.published if p.device_class == cls]
        for before, after in zip(sets, sets[1:]):
            for r in before.results:
                a = after.result(r.group, r.metric)
                if a is not None:
                    out.append(Claim(r.group, r.metric, cls, before, after, r.value, a.value, r.unit))
    return out


@dataclass
class LabChange:
    """The lab's change of a claim's metric on one device, as compare_sides judged it."""
    device: str
    filesystem: str
    before_n: int
    after_n: int
    # The two numbers the change is computed from (the verdict's centre: its
    # geometric means or means), one "before" number wherever the cell is shown.
    before: float
    after: float
    change_pct: float | None
    ci_low: float | None
    ci_high: float | None
    verdict: str  # the policy's outcome; "diagnostic" when the metric does not decide
    words: str
    statistic: str = "median"  # what before and after are
    metric: str = ""  # the metric measured: the claim's, or the one it is judged on (judged_on)


@dataclass
class Judged:
    """A claim beside the lab's change, and the outcome (OUTCOMES)."""
    claim: Claim
    outcome: str
    why: str
    lab: LabChange | None = None
    hardware: str = ""  # the study's reason the virtual lab cannot show it (not reproducible here)

    @property
    def size(self) -> str:
        """SIZES' key for a claim reproduced in direction with a change of its
        own (not one reproduced by "no change" under the minimum effect); else ""."""
        if self.outcome != REPRODUCED or self.lab is None or \
                self.lab.verdict not in CONFIRMED_OUTCOMES:
            return ""
        return size_of(self.claim.change_pct, self.lab.change_pct)

    def as_dict(self) -> dict:
        c = self.claim
        return {"group": c.group, "metric": c.metric, "device_class": c.device_class,
                "post": {"before": c.before.label, "after": c.after.label,
                         "before_value": c.before_value, "after_value": c.after_value,
                         "unit": c.unit, "change_pct": c.change_pct},
                "lab": asdict(self.lab) if self.lab else None,
                "outcome": self.outcome, "outcome_label": OUTCOMES[self.outcome], "why": self.why,
                "size": self.size or None, "size_label": SIZES.get(self.size),
                "not_reproducible_in_vlab": self.hardware or None}


def size_of(post_pct: float | None, lab_pct: float | None) -> str:
    """IN_SIZE, SMALLER or LARGER: the lab's change against the post's on the
    log-ratio scale; "" when either is missing, not a ratio (-100% or less), or
    the two have opposite signs (not a size: a direction, which the outcome says)."""
    if post_pct is None or lab_pct is None or post_pct <= -100 or lab_pct <= -100 or not post_pct:
        return ""
    post, lab = math.log1p(post_pct / 100), math.log1p(lab_pct / 100)
    share = lab / post
    if share <= 0:
        return ""
    return IN_SIZE if 1 / SIZE_FACTOR <= share <= SIZE_FACTOR else SMALLER if share < 1 else LARGER


def _sign(pct: float | None, floor: float) -> int:
    """+1 or -1 for a change of at least `floor` %, else 0."""
    if pct is None or abs(pct) < floor:
        return 0
    return 1 if pct > 0 else -1


def _lab(v: CellVerdict, judged: bool) -> LabChange:
    before, after = v.centre or (v.base.median, v.candidate.median)
    return LabChange(v.key.device, v.key.filesystem, v.base.n, v.candidate.n, before, after,
                     v.change_pct, v.ci_low, v.ci_high, v.outcome if judged else "diagnostic",
                     v.words, (v.statistic or "mean") if v.centre else "median", v.key.metric)


def _rows(claim: Claim, cmp: Comparison, study: Study,
          fs: str) -> tuple[list[tuple[CellVerdict, bool]], JudgedOn | None]:
    """The lab's verdicts the claim is judged on (each with whether it decides),
    and the stand-in it is judged on, if any. A figure the study says a run
    cannot measure is judged, in direction, on the one that stands for it
    (judged_on); one that stands in only unless measured (seed 002's flush,
    timed since 2026-12-01) gives way to the figure itself wherever these runs
    measured it as deciding."""
    def rows_of(metric: str) -> list[tuple[CellVerdict, bool]]:
        return [(v, judged) for judged, vs in ((True, cmp.verdicts), (False, cmp.diagnostics)) for v in vs
                if (v.key.study, v.key.group, v.key.metric, v.key.device_class, v.key.filesystem)
                == (study.slug, claim.group, metric, claim.device_class, fs)]

    rows = rows_of(claim.metric)
    judged_on = study.judged_on.get(claim.metric)
    if judged_on and judged_on.unless_measured and any(judged for _, judged in rows):
        return rows, None
    return (rows_of(judged_on.metric), judged_on) if judged_on else (rows, None)


def judge_claim(claim: Claim, cmp: Comparison | None, study: Study,
                why_missing: str = "", modelled: frozenset[str] = frozenset()) -> list[Judged]:
    """The claim against the lab's comparison of its two sides (None: no
    comparison to read, why_missing says why), one row per lab device of the
    claim's class. A study's "not reproducible in the virtual lab" excuses a
    device without mechanics only: on a `modelled` device (a card with
    allocation units, a disk that seeks) a claim the lab does not show is "not
    reproduced". `iowatch reproduce` and the Published results page both call it."""
    hardware = study.not_reproducible_in_vlab.get(claim.metric, "")

    def unmeasured(why: str) -> list[Judged]:
        # Not measured is not comparable, whatever the study says the lab could show.
        return [Judged(claim, NOT_COMPARABLE, why)]

    if cmp is None:
        return unmeasured(why_missing)
    # The post's numbers are of the study's first filesystem (as import-published stores them).
    fs = study.filesystems[0]
    rows, judged_on = _rows(claim, cmp, study, fs)
    measured_as, on_why = (judged_on.metric, judged_on.why) if judged_on else (claim.metric, "")
    if not rows:
        failed = [f for f in cmp.failed if (f.study, f.device_class, f.filesystem)
                  == (study.slug, claim.device_class, fs)]
        if failed:
            # compare_sides' base is the post's before here, its candidate the after.
            side = {"base": "before", "candidate": "after", "both": "before and after"}
            return unmeasured("; ".join(f"the {f.device} cell {f.status} on the "
                                        f"{side.get(f.side, f.side)} side" for f in failed))
        if claim.metric not in METRICS or METRICS[claim.metric].direction == INFO:
            what = "is not a metric iowatch measures" if claim.metric not in METRICS else \
                "is a count the lab records but never compares (info)"
            return unmeasured(f"{claim.metric} {what}")
        return unmeasured(f"the lab's runs of both sides have no {claim.metric} sample in "
                          f"group {claim.group} on a device of class {claim.device_class} "
                          f"with {fs}")
    out = []
    floor = min_effect(study)
    expected = _sign(claim.change_pct, floor)
    for v, judged in rows:
        if judged_on and judged_on.control and (held := _control(judged_on, cmp, v)):
            out.append(Judged(claim, NOT_COMPARABLE, held))
            continue
        lab = _lab(v, judged)
        post, measured = figures.change(claim.change_pct), figures.change(v.change_pct)
        if not judged:
            outcome, why = NOT_COMPARABLE, (f"{claim.metric} does not decide in {study.slug}: "
                                            f"the lab's change ({measured}) is shown, not judged")
        elif v.outcome in CONFIRMED_OUTCOMES and expected and _sign(v.change_pct, 0) == expected:
            outcome, why = REPRODUCED, f"the post {post}, the lab {measured} ({v.outcome})"
        elif v.outcome in CONFIRMED_OUTCOMES and expected:
            outcome, why = OPPOSITE, f"the post {post}, the lab {measured} ({v.outcome})"
        elif v.outcome == Outcome.NO_CHANGE.word and not expected:
            outcome, why = REPRODUCED, (f"the post {post} (under the study's {floor:g}% minimum "
                                        f"effect), the lab {measured} (no change)")
        else:
            moved = _sign(v.change_pct, floor)
            way = ("in the post's direction, not confirmed" if moved and moved == expected else
                   "the other way, not confirmed" if moved else
                   f"under the study's {floor:g}% minimum effect")
            ci = (f" ({ci_name(v)} {figures.ci(v.ci_low, v.ci_high)})"
                  if v.ci_low is not None and v.ci_high is not None else "")
            outcome, why = NOT_REPRODUCED, (f"the post {post}, the lab {measured}{ci}: {way}; "
                                            f"{v.words}")
        if hardware and outcome != REPRODUCED and v.key.device not in modelled:
            outcome, why = NOT_REPRODUCIBLE, (f"the post {post}, the lab {measured} "
                                              f"({lab.verdict}); the study: not reproducible "
                                              f"in the virtual lab (below)")
        if measured_as != claim.metric:
            why = f"judged on {measured_as} ({on_why}): {why}" + _itself(claim, cmp, v)
        out.append(Judged(claim, outcome, why, lab, hardware if outcome == NOT_REPRODUCIBLE else ""))
    return out


def _beside(verdicts: list[CellVerdict], v: CellVerdict, metric: str,
            filesystem: str) -> CellVerdict | None:
    """The verdict of `metric` on `filesystem` of v's study, group and device."""
    k = v.key
    return next((c for c in verdicts
                 if (c.key.study, c.key.group, c.key.metric, c.key.device, c.key.filesystem)
                 == (k.study, k.group, metric, k.device, filesystem)), None)


def _control(judged_on: JudgedOn, cmp: Comparison, v: CellVerdict) -> str:
    """Why the claim cannot be judged on v because its control (the same
    device's other cell) was not measured on both sides or moved; "" when it held."""
    fs, metric = judged_on.control
    k = v.key
    control = _beside(cmp.verdicts, v, metric, fs)
    if control is None:
        return (f"judged on {judged_on.metric} with {fs} {metric} as the control, which was "
                f"not measured on both sides on {k.device}")
    if control.outcome in CONFIRMED_OUTCOMES:
        return (f"judged on {judged_on.metric} with {fs} {metric} as the control, which moved "
                f"({figures.change(control.change_pct)}, {control.outcome}): the change is not the "
                f"{k.filesystem} cell's alone")
    return ""


def _itself(claim: Claim, cmp: Comparison, judged_as: CellVerdict) -> str:
    """What the lab measured of the claim's own metric, beside the one it was
    judged on, when the lab measures it too: shown, so the reader sees both."""
    own = _beside(cmp.verdicts + cmp.diagnostics, judged_as, claim.metric,
                  judged_as.key.filesystem)
    if own is None or own.change_pct is None:
        return ""
    # The interval named as what it is: family-adjusted when the outcome was
    # decided on the adjusted one (a "95% CI" label on it read as a CI wholly
    # above zero beside a "no-change").
    ci = (f", {ci_name(own)} {figures.ci(own.ci_low, own.ci_high)}"
          if own.ci_low is not None and own.ci_high is not None else "")
    return (f"; {claim.metric} itself: {figures.change(own.change_pct)}{ci}, {own.outcome} "
            f"[{own.base.n} vs {own.candidate.n}]")


def claim_outcome(rows: list[Judged]) -> str:
    """One outcome for a claim judged on several lab devices (or hosts): not
    comparable without a compared row, else the first of _CLAIM_ORDER given."""
    given = {r.outcome for r in rows if r.outcome != NOT_COMPARABLE}
    return next((o for o in _CLAIM_ORDER if o in given), NOT_COMPARABLE)
