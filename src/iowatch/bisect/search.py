"""A performance bisect: which commit between a good and a bad kernel made a
cell slower?

The commits from good to bad are the variants of a series (a git range A..B
of the source tree, or a series directory or mbox applied to a base): variant
0 is good, the last is bad. Both ends are measured first with the matrix and
the cell to follow is the regression the verdict engine finds between them
(the worst by iowatch.judging.worst, unless --metric or --cell narrows
it): `_Bisection.measure_ends`. Then a binary search (`_Bisection.walk`): the
middle variant is built, booted and measured, and judged against both ends by
the policy (iowatch.judging.judge_step, compare_sides both ways). While it is
unsure it is measured again, a look at a time up to its study's cap; a step
still unsure at the cap decides nothing, and the search tries a neighbour, as
for a variant that does not build or boot (git bisect's skip). The result is
the posterior over the first bad commit (iowatch.judging.culprit: the
flake-aware culprit model of iowatch.stats.oracle): the commit with its probability, or the range of
candidates. Every measurement is a stored run, so the dashboard shows the
bisect's provenance.
"""
from __future__ import annotations

import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from iowatch import bundle, resources
from iowatch.check import (REPS_PER_BOOT, VariantRun, boot_sizes, first_round_boots, matrix_reps,
                           run_variant)
from iowatch.side_data import Side, in_round, pool
from iowatch.judging.adaptive import adapt
from iowatch.judging import Comparison, StepVerdict, compare_sides, judge_step, platform_words
from iowatch.judging.boots import History
from iowatch.judging.next_measurement import (ALONE, WITH_ENDS, NextMeasurement, next_measurement,
                                              with_partners)
from iowatch.judging.bisect import Culprit, Observation, culprit, steps_left
from iowatch.judging.worst import verdict_order
from iowatch.inventory import Host
from iowatch.kernel.build import Plan, configure, make_variants
from iowatch.kernel.series import Series
from iowatch.stats.verdict import CellVerdict
from iowatch.studies import load_studies



class NothingToBisect(RuntimeError):
    """The ends do not differ, or could not be measured: the message says which.
    `state` is the ends' comparison state when they were compared (PATCH_STATES)."""

    def __init__(self, message: str, state: str | None = None):
        super().__init__(message)
        self.state = state


@dataclass
class Step:
    index: int
    runs: list[VariantRun]
    verdict: StepVerdict | None = None  # against both ends, by the policy
    skipped: str = ""         # why the variant gave no sample (build-failed, boot-failed, ...)

    @property
    def variant(self):
        return self.runs[0].variant


@dataclass
class BisectResult:
    series: Series
    plan: Plan
    target: CellVerdict | None = None   # good vs bad, the cell followed
    steps: list[Step] = field(default_factory=list)
    first_bad: int | None = None        # variant index
    last_good: int | None = None
    untestable: list[int] = field(default_factory=list)  # skipped between last_good and first_bad
    reason: str = ""
    ends_state: str | None = None  # the ends' comparison state when there was nothing to bisect
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def culprit(self) -> Culprit | None:
        """The posterior over the first bad commit given the judged steps."""
        if self.target is None:
            return None
        return culprit_of(self.steps, len(self.plan.variants) - 1)


def culprit_of(steps: list[Step], n: int) -> Culprit:
    """The culprit model over the judged steps between the ends (unsure and
    skipped steps add nothing)."""
    return culprit(n, [Observation(s.index, s.verdict.outcome == "bad", s.verdict.error)
                       for s in steps if 0 < s.index < n and s.verdict is not None
                       and s.verdict.outcome in ("good", "bad")])


def side_of(runs: list[VariantRun], rounds: dict[int, int] | None = None) -> Side:
    """The measured runs of one commit as a comparison side. `rounds` gives a
    run (by id) the round (block) it was measured in together with the other
    side's runs of that round, as a check's rounds are (iowatch.stats.blocks):
    compare_sides judges within the rounds when every value has one and they
    drifted; a run without one pools."""
    rounds = rounds or {}
    return Side(spec=runs[0].variant.label, source=str(runs[0].bundle),
                runs=[in_round(bundle.load(r.bundle), rounds.get(id(r))) for r in runs])


def _matches(v: CellVerdict, metric: str | None, cell: str | None) -> bool:
    k = v.key
    where = f"{k.cell_id}/{k.group}"
    return (metric is None or k.metric == metric) and (cell is None or cell in where)


def choose_target(cmp: Comparison, metric: str | None = None, cell: str | None = None) -> CellVerdict:
    """The regression from good to bad to follow: of those that match, the
    first in judging's worst-first order (iowatch.judging.worst: the slowdown
    in minimum effects), then by name."""
    found = [v for v in cmp.regressions if _matches(v, metric, cell)]
    if not found:
        narrowed = " matching" + (f" metric {metric}" if metric else "") + \
            (f" cell {cell}" if cell else "") if metric or cell else ""
        seen = ", ".join(f"{v.key.group} {v.key.metric} {v.outcome}" for v in cmp.verdicts
                         if _matches(v, metric, cell))[:600]
        raise NothingToBisect(f"good ({cmp.base.title}) and bad ({cmp.candidate.title}) show no "
                              f"regression{narrowed}: nothing to bisect"
                              + (f" ({seen})" if seen else "") + drift_words(cmp), state=cmp.state)
    return min(found, key=lambda v: (verdict_order(v), str(v.key)))


def drift_words(cmp: Comparison) -> str:
    """"; " and the canary's words when the platform drifted: a regression the
    cells show is not claimed then (judging.Comparison.regressions)."""
    return f"; {platform_words(cmp)}" if cmp.platform else ""


def ends_want(nxt: NextMeasurement) -> Want:
    """What judging's next_measurement of the ends asks, as one measurement of
    each end: every wanted cell (ratio partners and canaries with it) with the
    larger side's repetitions to add, at both ends so that each round is a
    block of both; the whole matrix (None) when only the platform drifted."""
    return {cell: max(w.add_base, w.add_candidate, 1) for cell, w in nxt.cells.items()} or None


def _measured(runs: list[VariantRun]) -> bool:
    return bool(runs) and all(r.status in ("passed", "failed") and r.bundle for r in runs)


# What one measurement of a commit runs: cell id -> repetitions to add (judging's
# next_measurement), or None for the whole matrix at its repetitions.
Want = dict[str, int] | None


def search(n: int, measure: Callable[[int, int, Want], VariantRun], *,
           choose: Callable[[Comparison], CellVerdict] = choose_target,
           studies: dict | None = None, say: Callable[[str], None] = print,
           remeasure_unclear: bool = True, on_step: Callable[[Step], None] = lambda step: None,
           history: History | None = None) -> tuple[CellVerdict, list[Step], int, int, list[int]]:
    """Bisect variants 0 (good) .. n (bad); measure(index, attempt, want) runs
    one: the whole matrix first, then what judging's next_measurement wants.
    on_step(step) hears each step once it is decided (the ends first), so a
    server can show the bisect's progress. Returns the target, the steps, the
    last good and first bad index, and the untestable indices between them.
    `history`: the host's record of its noise between boots, for ends and steps
    measured in one boot each (iowatch.judging.boots)."""
    studies = studies if studies is not None else load_studies(resources.studies_dir())
    bisection = _Bisection(n, measure, studies, say, history)
    target = bisection.measure_ends(choose)
    steps = bisection.walk(target, on_step, remeasure_unclear)
    return target, steps, bisection.lo, bisection.hi, bisection.untestable


class _Bisection:
    """One bisect's measurements: the ends (measured until they differ), then
    the steps between them (each measured until judging decides it).

    Rounds are blocks (iowatch.stats.blocks): the ends are measured together,
    good then bad, each time (round = the attempt), so their A/B is judged
    within those rounds when the platform moved between them. A step is
    measured alone; one whose canary moved against an end is measured again
    with both ends in rounds of its own (`joint`) and judged on those only."""

    def __init__(self, n: int, measure: Callable[[int, int, Want], VariantRun], studies: dict,
                 say: Callable[[str], None], history: History | None = None):
        self.n, self.measure, self.studies, self.say = n, measure, studies, say
        self.history = history
        self.block: dict[int, int] = {}  # id(VariantRun) -> its round
        self.ends: dict[int, list[VariantRun]] = {}
        self.attempts: dict[int, int] = {}  # each variant's next measurement
        self.lo, self.hi, self.skipped = 0, n, set()

    @property
    def untestable(self) -> list[int]:
        return sorted(i for i in self.skipped if self.lo < i < self.hi)

    def boots(self, index: int, attempt: int, want: Want = None) -> list[VariantRun]:
        """One measurement: a run, or the boots a guest measurement took
        (guest_measure); the boots that measured, else the first failure."""
        got = self.measure(index, attempt, want)
        got = got if isinstance(got, list) else [got]
        return [r for r in got if _measured([r])] or got[:1]

    def in_round(self, runs: list[VariantRun], k: int) -> list[VariantRun]:
        self.block.update((id(r), k) for r in runs)
        return runs

    # --- the ends ---------------------------------------------------------------

    def measure_ends(self, choose: Callable[[Comparison], CellVerdict]) -> CellVerdict:
        """Measure both ends until the policy's verdict says they differ (while the
        deciding cells are unsure, both again, pooled, a look at a time up to the
        cap); the regression to follow (NothingToBisect when they never differed)."""
        n, studies = self.n, self.studies
        for i in (0, n):
            runs = self.boots(i, 0)
            if not _measured(runs):
                raise NothingToBisect(f"{'good' if i == 0 else 'bad'} end (variant {i}) gave no "
                                      f"measurement: {runs[0].status}: {runs[0].reason[:300]}")
            self.ends[i] = self.in_round(runs, 0)
        judged: list[Comparison] = []  # every judgement of the ends, the last one last

        def ends_judged() -> Comparison:
            judged.append(compare_sides(side_of(self.ends[0], self.block),
                                        side_of(self.ends[n], self.block), studies=studies,
                                        history=self.history))
            return judged[-1]

        def ends_wanted(cmp: Comparison) -> tuple[str, Want] | None:
            """Why both ends are measured again and what (ends_want); None when they
            differ, or judging's next_measurement asks nothing."""
            try:
                choose(cmp)
                return None
            except NothingToBisect:
                nxt = next_measurement(cmp, studies)
                if not nxt:
                    return None
            return (platform_words(cmp) if cmp.platform else ", ".join(
                f"{v.key.group} {v.key.metric} {v.outcome}" for v in cmp.unsure) or "unsure"), \
                ends_want(nxt)

        def ends_measure(wanted: tuple[str, Want], attempt: int) -> bool:
            why, want = wanted
            self.say(f"bisect: good and bad are {judged[-1].state} ({why}); measuring both ends again")
            for i in (0, n):
                self.ends[i] += self.in_round([r for r in self.boots(i, attempt, want)
                                               if _measured([r])], attempt)
            return True

        first = ends_judged()
        ended = adapt(ends_judged, ends_wanted, ends_measure, first=first,
                      max_rounds=next_measurement(first, studies).rounds)
        self.attempts = {0: ended.rounds + 1, n: ended.rounds + 1}
        return choose(ended.judgement)

    # --- the steps between ---------------------------------------------------------

    def walk(self, target: CellVerdict, on_step: Callable[[Step], None],
             remeasure_unclear: bool) -> list[Step]:
        """The binary search from the ends to the first bad commit: each middle
        variant measured and decided (`_settle`), a variant that gave no
        samples or stayed unsure at its cap skipped for its nearest neighbour
        (git bisect skip). Leaves lo (the last good) and hi (the first bad)."""
        n, key = self.n, target.key.pooled
        steps = [Step(0, self.ends[0], self.step_verdict(target, self.ends[0])),
                 Step(n, self.ends[n], self.step_verdict(target, self.ends[n]))]
        for step in steps:
            on_step(step)
        self.say(f"bisect: following {key.group} {key.metric} of {key.study} on {key.device} "
                 f"{key.filesystem}: {target.words}; "
                 f"{n - 1} commits between, about {steps_left(n)} to measure")
        while self.hi - self.lo > 1:
            untried = [i for i in range(self.lo + 1, self.hi) if i not in self.skipped]
            if not untried:
                break
            mid = (self.lo + self.hi) // 2
            mid = min(untried, key=lambda i: (abs(i - mid), i))  # git bisect skip: the nearest neighbour
            runs = self.boots(mid, 0)
            step = Step(mid, runs)
            steps.append(step)
            if not (self.values(target, runs) if _measured(runs) else []):
                step.skipped = runs[0].status if not _measured(runs) else "the cell gave no samples"
                self.skipped.add(mid)
                self.say(f"bisect: variant {mid} skipped ({step.skipped})")
                on_step(step)
                continue
            step.verdict = self._settle(target, mid, runs, remeasure_unclear)
            self.say(f"bisect: variant {mid} {step.verdict.words} (median "
                     f"{step.verdict.median:.4g}, {len(self.values(target, runs))} repetitions)")
            on_step(step)
            if step.verdict.outcome == "bad":
                self.hi = mid
            elif step.verdict.outcome == "good":
                self.lo = mid
            else:
                self.skipped.add(mid)  # undecided at the cap: it decides nothing, a neighbour is tried
        return steps

    def values(self, target: CellVerdict, runs: list[VariantRun]) -> list[float]:
        return pool(side_of(runs)).values.get(target.key.pooled, [])

    def step_verdict(self, target: CellVerdict, runs: list[VariantRun],
                     joint: dict[int, list[VariantRun]] | None = None,
                     at: int | None = None) -> StepVerdict:
        """A step against the ends as measured so far (a step may have asked for
        more of them), or, once rounds measured the step `at` and both ends
        together, against those only."""
        n, block = self.n, self.block
        if joint:
            return judge_step(side_of(joint[0], block), side_of(joint[n], block),
                              side_of(joint[at], block), target, studies=self.studies,
                              history=self.history)
        return judge_step(side_of(self.ends[0]), side_of(self.ends[n]), side_of(runs), target,
                          studies=self.studies, history=self.history)

    def _settle(self, target: CellVerdict, mid: int, runs: list[VariantRun],
                remeasure_unclear: bool) -> StepVerdict:
        """Step `mid` measured until judging decides it: while unsure, more
        repetitions of it, a look at a time, up to the study's cap; with the
        step at its cap, of the ends the comparisons still ask for; with both
        ends in rounds of their own when its canary moved against an end."""
        n, studies, ends = self.n, self.studies, self.ends
        self.attempts[mid] = 1
        joint: dict[int, list[VariantRun]] = {}  # the step's rounds with both ends
        reps: dict[int, int] = {}  # index -> the repetitions the step's plan wants it to reach

        def joint_rounds() -> int:
            return max((self.block[id(r)] for r in joint.get(mid, [])), default=0)

        def step_wanted(j: StepVerdict) -> tuple[list[int], str] | None:
            nxt = next_measurement(j, studies, joint=bool(joint))
            if not nxt or not remeasure_unclear:
                return None
            reps.clear()
            reps.update({{"good": 0, "step": mid, "bad": n}[side]: count
                         for side, count in nxt.reps.items()})
            if nxt.plan == WITH_ENDS:
                return [0, mid, n], (f"bisect: variant {mid} unsure ({j.words}); measuring good, "
                                     f"it and bad together (round {joint_rounds() + 1})")
            if nxt.plan == ALONE:
                return [mid], (f"bisect: variant {mid} unsure ({j.words}); measuring it again "
                               f"toward {nxt.reps['step']} repetitions")
            return ([0 if side == "good" else n for side in nxt.sides],
                    f"bisect: variant {mid} unsure ({j.words}) at its cap; measuring "
                    + " and ".join(nxt.sides) + " again")

        def step_measure(want: tuple[list[int], str], _round: int) -> bool:
            indices, words = want
            self.say(words)
            together = len(indices) == 3
            k = joint_rounds() + 1
            got = {}
            for index in indices:
                add = reps[index] - len(self.values(target, runs if index == mid else ends[index]))
                want = {cell: max(add, 1)
                        for cell in with_partners([target.key.location.cell_id], studies)}
                got[index] = [r for r in self.boots(index, self.attempts[index], want)
                              if _measured([r])]
                self.attempts[index] += 1
            if together and not all(self.values(target, got[i]) for i in indices):
                # A round lacking a side is no block: its boots pool as the step's or
                # the ends' own, the round is not counted, and the rounds stop.
                for index, new in got.items():
                    (runs if index == mid else ends[index]).extend(new)
                return False
            added = False
            for index, new in got.items():
                measured = runs if index == mid else ends[index]
                before = len(self.values(target, measured))
                measured += new
                added = added or len(self.values(target, measured)) > before
                if together:
                    joint.setdefault(index, []).extend(self.in_round(new, k))
            return added

        return adapt(lambda: self.step_verdict(target, runs, joint, mid), step_wanted,
                     step_measure).judgement


def run_bisect(tree: Path, base_ref: str, series: Series, host: Host, inventory: Path, matrix: str,
               out: Path, *, profile: str | None = None, reps: int | None = None,
               per_boot: int = REPS_PER_BOOT, metric: str | None = None, cell: str | None = None,
               store: Callable[[Path], None] = lambda p: None, say: Callable[[str], None] = print,
               echo_console: bool = False) -> BisectResult:
    t_all = time.monotonic()
    plan = make_variants(tree, base_ref, series)
    result = BisectResult(series, plan)
    failed = next((v for v in plan.variants if v.status == "apply-failed"), None)
    if failed:
        result.reason = f"cannot bisect: {failed.error}"
        return result
    configure(plan)
    n = len(plan.variants) - 1
    if n < 1:
        result.reason = "cannot bisect: the range holds no commits after the good one"
        return result
    say(f"bisect: {n} commits of {series.name} after {plan.base[:12]} (good) up to "
        f"{plan.variants[-1].commit[:12]} (bad); matrix {matrix} on {host.name}")

    measure = guest_measure(plan, host, inventory, matrix, out, profile=profile, reps=reps,
                            per_boot=per_boot, store=store, say=say, echo_console=echo_console, phases=result.phases)
    try:
        result.target, result.steps, result.last_good, result.first_bad, result.untestable = search(
            n, measure, choose=lambda c: choose_target(c, metric, cell), say=say)
    except NothingToBisect as e:
        result.reason, result.ends_state = str(e), e.state
    result.phases["total"] = time.monotonic() - t_all
    return result


def guest_measure(plan: Plan, host: Host, inventory: Path, matrix: str, out: Path, *,
                  profile: str | None = None, reps: int | None = None,
                  per_boot: int = REPS_PER_BOOT,
                  store: Callable[[Path], None] = lambda p: None, say: Callable[[str], None] = print,
                  echo_console: bool = False,
                  phases: dict[str, float] | None = None,
                  trigger: dict | None = None) -> Callable[[int, int, Want], list[VariantRun]]:
    """measure(index, attempt, want) for search(): build the variant, boot it
    and run the matrix (or the cells `want` names, as many repetitions as it
    adds at most) in the virtual lab, its repetitions in boots of at most
    `per_boot` as a check takes them (iowatch.check.first_round_boots for a
    variant's first measurement, boot_sizes after), one VariantRun a boot. Each
    bundle is marked a bisect step (trigger kind "bisect", with `trigger`'s
    regression and job) before it is stored."""
    step_trigger = {**(trigger or {}), "kind": "bisect"}
    total = reps or matrix_reps(matrix)

    def stored(path: Path) -> None:
        mark_step(path, step_trigger)
        store(path)

    def measure(index: int, attempt: int, want: Want = None) -> list[VariantRun]:
        reps = max(want.values()) if want else total
        sizes = first_round_boots(reps, per_boot) if attempt == 0 else boot_sizes(reps, per_boot)
        runs = []
        for k, n in enumerate(sizes, start=1):
            where = out / (f"variant-{index:02d}" + (f"-again{attempt}" if attempt else "")
                           + (f"-boot{k}" if k > 1 else ""))
            times: dict[str, float] = {}
            runs.append(run_variant(plan, plan.variants[index], host, inventory, matrix, where,
                                    profile=profile, reps=n, store=stored, say=say,
                                    echo_console=echo_console, phases=times,
                                    cells=sorted(want) if want else None))
            if phases is not None:
                for key, secs in times.items():
                    phases[key] = phases.get(key, 0.0) + secs
            if runs[-1].status in ("build-failed", "apply-failed"):
                break  # a variant that does not build is not booted again
        return runs
    return measure


def mark_step(path: Path, trigger: dict) -> None:
    """A bisect's measurement of one commit is the bisect's evidence: its variant
    carries a series named good..bad, and judged like a check's every bad step
    would open a regression of its own. The trigger tells the server to store
    it and judge nothing from it (iowatch.judging.sides.SideQuery.admits)."""
    doc = bundle.load(path)
    doc["trigger"] = trigger
    bundle.write_manifest(path, doc)


class NeedMeasurement(Exception):
    def __init__(self, index: int, attempt: int, want: Want = None):
        super().__init__(f"variant {index} (attempt {attempt}) is not measured yet")
        self.index, self.attempt, self.want = index, attempt, want


def measurement_dir(bundles: Path, index: int, attempt: int) -> Path:
    return bundles / (f"variant-{index:02d}" + (f"-again{attempt}" if attempt else ""))


def next_step(plan: Plan, bundles: Path, *, metric: str | None = None,
              cell: str | None = None, history: History | None = None) -> dict:
    """The bisect as a pipeline drives it on lab hosts: replay the search over the
    measurements already in `bundles` and say what to measure next, or the result.

    A measurement is measurement_dir(...) holding a bundle; a variant that did not
    boot there is a file of that name with the suffix .failed holding the reason;
    a variant that did not build says so in the plan."""
    n = len(plan.variants) - 1
    measure = recorded(plan, bundles)
    if n < 1:
        return {"state": "nothing-to-bisect", "reason": "the range holds no commits after the good one"}
    try:
        target, steps, lo, hi, untestable = search(
            n, measure, choose=lambda c: choose_target(c, metric, cell), say=lambda s: None,
            history=history)
    except NeedMeasurement as need:
        v = plan.variants[need.index]
        return {"state": "measure", "index": need.index, "attempt": need.attempt, "commit": v.commit,
                "subject": v.subject, "artifacts": v.artifacts,
                "out": str(measurement_dir(bundles, need.index, need.attempt)),
                # What to run there (judging's next_measurement): None, the whole matrix.
                "cells": sorted(need.want) if need.want else None,
                "reps": max(need.want.values()) if need.want else None}
    except NothingToBisect as e:
        return {"state": "nothing-to-bisect", "reason": str(e)}
    result = BisectResult(plan.series, plan, target, steps, hi, lo, untestable)
    return {"state": "done", **summary(result), "report": report(result)}


def recorded(plan: Plan, bundles: Path, trigger: dict | None = None,
             steps: Path | None = None) -> Callable[[int, int, Want], VariantRun]:
    """measure() over measurements made elsewhere (see next_step): NeedMeasurement
    for one not there yet. With `trigger` (a bisect agent that uploads them),
    a measurement without a trigger of its own is copied under `steps` and the
    copy marked a bisect step (mark_step): the recorded bundles are never
    written to. One with a trigger (the nightly runs at the ends) is used as it is."""
    def measure(index: int, attempt: int, want: Want = None) -> VariantRun:
        v = plan.variants[index]  # a measurement made elsewhere ran what it ran: `want` is the pipeline's
        d = measurement_dir(bundles, index, attempt)
        if v.status != "built":
            return VariantRun(v, None, status=v.status, reason=v.error or "")
        failed = d.with_suffix(".failed")
        if failed.is_file():
            text = failed.read_text().strip()
            return VariantRun(v, None, status=text.split(":", 1)[0] or "boot-failed", reason=text)
        if not (d / bundle.MANIFEST).is_file():
            raise NeedMeasurement(index, attempt, want)
        doc = bundle.load(d)
        if trigger is not None and not doc.get("trigger"):
            copy = measurement_dir(steps or bundles.parent / f"{bundles.name}-steps", index, attempt)
            if not copy.exists():
                shutil.copytree(d, copy)
                mark_step(copy, {**trigger, "kind": "bisect"})
            d = copy
        return VariantRun(v, d, status=doc["status"])
    return measure


def report(result: BisectResult) -> str:
    """What a maintainer reads: the commit, the cell, and every step with its evidence."""
    plan, t = result.plan, result.target
    lines = [f"iowatch bisect: {result.series.name} ({len(plan.variants) - 1} commits after "
             f"{plan.base[:12]})", ""]
    if t is None:
        lines.append(result.reason or "no result")
        return "\n".join(lines)
    k = t.key
    lines.append(f"followed: {k.study} {k.device} ({k.device_class}) {k.filesystem} [{k.group}] "
                 f"{k.metric}: good to bad {t.words}")
    lines.append("")
    lines.append("  variant  commit        outcome   median      position  vs good             vs bad              subject")
    for s in sorted(result.steps, key=lambda s: s.index):
        v = s.variant
        subject = "good end" if s.index == 0 else (v.subject or "")
        if s.verdict is None:
            lines.append(f"  {s.index:>7}  {v.commit[:12]:<12}  {'skipped':<8}  {s.skipped}  {subject}")
            continue
        j = s.verdict

        def said(cv) -> str:
            return "-" if cv is None or cv.change_pct is None else f"{cv.outcome} {cv.change_pct:+.1f}%"
        outcome = j.outcome + ("+" if j.between else "")
        lines.append(f"  {s.index:>7}  {v.commit[:12]:<12}  {outcome:<8}  {j.median:<10.4g}  "
                     f"{j.position:>7.0%}  {said(j.vs_good):<18}  {said(j.vs_bad):<18}  "
                     f"{subject}{' (x' + str(len(s.runs)) + ' runs)' if len(s.runs) > 1 else ''}")
    if any(s.verdict is not None and s.verdict.between for s in result.steps):
        lines.append("  +: part of the change: worse than good and better than bad")
    lines.append("")
    found = result.culprit
    skipped = [i for i in found.candidates if i in result.untestable]
    if found.first_bad is None:
        lines.append(found.words + (f"; variants {skipped} did not build, boot or decide"
                                    if skipped else ""))
    for i in found.candidates:
        bad = plan.variants[i]
        patch = next((p for p in result.series.patches if p.index == bad.index), None)
        origin = ""
        if patch and patch.name != bad.commit[:12]:
            # A git range keeps the original commit's name; a series its patch file's.
            is_commit = all(c in "0123456789abcdef" for c in patch.name)
            origin = f" ({'commit' if is_commit else 'patch'} {patch.name} of {result.series.source})"
        lines.append(f"{'first bad commit' if found.first_bad is not None else 'candidate'}: "
                     f"variant {bad.index}, {bad.commit[:12]}{origin}: {bad.subject} "
                     f"(probability {found.probabilities[i]:.1%})")
    lines.append("phases: " + ", ".join(f"{k} {v:.0f} s" for k, v in result.phases.items()))
    return "\n".join(lines)


def summary(result: BisectResult) -> dict:
    t = result.target
    found = result.culprit
    bad = result.plan.variants[found.first_bad] if found is not None and found.first_bad is not None else None
    return {
        "series": result.series.name, "base": result.plan.base, "reason": result.reason,
        "target": None if t is None else {**asdict(t.key.pooled),
                                          "change_pct": t.change_pct, "words": t.words},
        "first_bad": None if bad is None else {"index": bad.index, "commit": bad.commit,
                                                "subject": bad.subject},
        "probability": None if found is None else round(found.probability, 4),
        "candidates": [] if found is None else found.candidates,
        "probabilities": {} if found is None else {i: round(p, 4) for i, p in found.probabilities.items()},
        "last_good": result.last_good, "untestable": result.untestable,
        "steps": [{"index": s.index, "commit": s.variant.commit, "subject": s.variant.subject,
                   "runs": [str(r.bundle) if r.bundle else None for r in s.runs],
                   "skipped": s.skipped,
                   "outcome": s.verdict.outcome if s.verdict else "skipped",
                   "words": s.verdict.words if s.verdict else s.skipped,
                   "position": s.verdict.position if s.verdict else None,
                   "median": s.verdict.median if s.verdict else None}
                  for s in sorted(result.steps, key=lambda s: s.index)],
        "phases_s": {k: round(v, 1) for k, v in result.phases.items()},
    }
