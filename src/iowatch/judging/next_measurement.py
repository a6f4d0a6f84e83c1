"""What to measure next: one answer, from a judgement and the study files, for
every path that adds repetitions (`iowatch check`, `iowatch run --against`,
the bisect's ends and steps; issue 43 item 2).

`next_measurement` says
- which cells and how many repetitions each side should reach: the deciding
  cells `more_runs` wants, each ratio cell's partner beside it (the ratio is
  one value per repetition pair of one boot, iowatch.ratio: an ext4 cell grown
  without its raw cell adds no ratio), and the canaries measured on both
  sides, grown with the cells they watch;
- how many rounds a path may add after its first judgement: one per look
  after the first of the largest cap, one more when the first round had
  fewer repetitions than the first look (`rounds_allowed`, the only place the
  bound is computed);
- for a bisect step, its plan: the step alone, the step with both ends (in
  rounds of their own, when the platform moved between the step's boots and
  an end's), or the ends only (the step at its cap while a comparison still
  asks for more of an end).

The paths translate the answer into their own measurements and keep no rule
of their own: the check into boots of each variant, run --against into the
candidate bundle's repetitions, the bisect into boots of its ends and steps.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from iowatch.judging.bisect import StepVerdict
from iowatch.judging.policy import Comparison, more_runs
from iowatch.vocabulary import DEFAULT_CAP
from iowatch.stats.sequential import FIRST, looks
from iowatch.studies import Study

# A bisect step's plans (NextMeasurement.plan); a comparison's is BOTH_SIDES.
BOTH_SIDES = "both sides"
ALONE = "alone"
WITH_ENDS = "with both ends"
ENDS_ONLY = "ends only"


@dataclass(frozen=True)
class Wanted:
    """The repetitions each side of a cell should reach, and has."""
    base: int
    candidate: int
    have_base: int
    have_candidate: int

    @property
    def add_base(self) -> int:
        return max(self.base - self.have_base, 0)

    @property
    def add_candidate(self) -> int:
        return max(self.candidate - self.have_candidate, 0)


@dataclass(frozen=True)
class NextMeasurement:
    """What a judgement asks to be measured next; nothing when `plan` is None.

    cells: cell id (study/device/filesystem) -> Wanted, ratio partners and
    canaries included. rounds: the rounds a path may add after its first
    judgement (None for a bisect step: its cap bounds it). plan: BOTH_SIDES
    for a comparison that wants more; ALONE, WITH_ENDS or ENDS_ONLY for a
    bisect step. sides: what the plan measures ("base", "candidate" of a
    comparison; "good", "step", "bad" of a step), and for a step `reps` the
    repetitions each of those should reach."""
    cells: dict[str, Wanted] = field(default_factory=dict)
    rounds: int | None = None
    plan: str | None = None
    sides: tuple[str, ...] = ()
    reps: dict[str, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.plan is not None


def rounds_allowed(comparisons: Iterable[Comparison]) -> int:
    """The rounds a path adds after its first judgement of these comparisons:
    one per look after the first of the largest cap (3 for 20 a side: 10, 15
    and 20), and one more when a deciding cell began below the first look (3
    a side: 5, 10, 15 and 20; issue 24 saw a check stop at 15 and call it the cap)."""
    comparisons = list(comparisons)
    caps = [cap for cmp in comparisons for cap in cmp.caps]
    fewest = min((min(v.base.n, v.candidate.n) for cmp in comparisons for v in cmp.verdicts),
                 default=FIRST)
    return looks(max(caps, default=DEFAULT_CAP)) - 1 + (fewest < FIRST)


def ratio_partner(cell_id: str, studies: dict[str, Study]) -> str | None:
    """The other cell of a ratio study's pair (ext4's raw cell, the raw's ext4
    cell), on the same device; None for a cell of no ratio."""
    slug, device, fs = cell_id.split("/", 2)
    study = studies.get(slug)
    ratio = study.spec.ratio if study is not None else None
    if ratio is None or fs not in (ratio.filesystem, ratio.against):
        return None
    return f"{slug}/{device}/{ratio.against if fs == ratio.filesystem else ratio.filesystem}"


def with_partners(cell_ids: Iterable[str], studies: dict[str, Study]) -> list[str]:
    """Cell ids with each ratio cell's partner beside it (sorted, once each):
    what a path that measures named cells (a bisect agent's followed cell) runs."""
    ids = set(cell_ids)
    return sorted(ids | {p for c in ids for p in [ratio_partner(c, studies)] if p})


def _have(cmp: Comparison) -> dict[str, tuple[int, int]]:
    """Cell id -> the fewest repetitions a side of its judged cells (deciding and canaries)."""
    have: dict[str, tuple[int, int]] = {}
    for v in [*cmp.verdicts, *cmp.canaries]:
        cid = v.key.location.cell_id
        b, c = have.get(cid, (v.base.n, v.candidate.n))
        have[cid] = (min(b, v.base.n), min(c, v.candidate.n))
    return have


def _comparison_wants(cmp: Comparison, studies: dict[str, Study]) -> dict[str, Wanted]:
    have = _have(cmp)
    targets = {where.cell_id: (w.base, w.candidate) for where, w in more_runs(cmp).items()}
    for cid, (b, c) in list(targets.items()):
        partner = ratio_partner(cid, studies)
        if partner is not None:
            pb, pc = targets.get(partner, (0, 0))
            targets[partner] = (max(pb, b), max(pc, c))
            have.setdefault(partner, have[cid])
    if targets:
        # The canaries grow with the cells they watch: a platform that moves
        # while the added repetitions run shows in the canary's A/B as well.
        top = (max(b for b, _ in targets.values()), max(c for _, c in targets.values()))
        for v in cmp.canaries:
            targets[v.key.location.cell_id] = top
    return {cid: Wanted(b, c, *have[cid]) for cid, (b, c) in sorted(targets.items())}


def _step_plan(j: StepVerdict, joint: bool) -> tuple[str | None, dict[str, int]]:
    """A bisect step's plan and the repetitions each measured side should reach."""
    if j.outcome != "unsure":
        return None, {}
    if j.wants_runs and (j.platform or joint):
        # The step's boots and an end's saw different platforms: more boots of
        # the step alone would compare them again across the move. Good, the
        # step and bad are measured together, and the step judged on those rounds.
        return WITH_ENDS, {"good": j.wants_runs, "step": j.wants_runs, "bad": j.wants_runs}
    if joint:
        return None, {}  # at the cap in its rounds: boots of an end alone are not in them
    if j.wants_runs:
        return ALONE, {"step": j.wants_runs}
    ends = {side: n for side, n in (("good", j.wants_good), ("bad", j.wants_bad)) if n}
    return (ENDS_ONLY, ends) if ends else (None, {})


def next_measurement(judged: Comparison | StepVerdict, studies: dict[str, Study], *,
                     joint: bool = False) -> NextMeasurement:
    """What `judged` asks to be measured next.

    A Comparison (a patch against its parent, a candidate against a fixed
    base, the bisect's ends): the cells and repetitions, with the rounds
    allowed; its plan is BOTH_SIDES when a cell wants more or the platform
    drifted (pooled boots are what the canary asks for: a path whose sides
    can grow measures again). A StepVerdict (a bisect step against both ends
    in its followed cell): its plan, with `joint` when the step was already
    measured in rounds with both ends; a step is measured in the boots of its
    whole matrix, or its followed cell with_partners."""
    if isinstance(judged, StepVerdict):
        plan, reps = _step_plan(judged, joint)
        return NextMeasurement({}, None, plan, tuple(reps), reps)
    cells = _comparison_wants(judged, studies)
    plan = BOTH_SIDES if cells or judged.platform else None
    return NextMeasurement(cells, rounds_allowed([judged]), plan,
                           ("base", "candidate") if plan else ())
