"""Change points confirmed by the policy: e-divisive candidates (iowatch.stats.changepoints)
judged again as an A/B of the repetitions either side of the step (compare_sides).

The server's nightly path builds each series' `history` here, asks
`confirm_change_points`, and stores the steps `opening_steps` says open a
regression; it never calls the statistics itself, nor picks the steps."""
from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Hashable, Mapping, Sequence

from iowatch.cells import CellKey
from iowatch.judging.policy import compare_sides, deciding, max_runs, min_effect
from iowatch.vocabulary import CONFIRMED_OUTCOMES, FDR, Outcome
from iowatch.stats import CellVerdict
from iowatch.studies import Study

# A stored change point this many kernels away from a new one is the same step
# seen again (e-divisive may move a boundary by one as history grows).
SAME_STEP_KERNELS = 1


def deciding_metrics(studies: dict[str, Study]) -> set[tuple[str, str, str]]:
    """(study, group, metric) of every deciding metric of the studies given."""
    return {(slug, group, metric) for slug, study in studies.items()
            for group, metric in deciding(study)}


def history_of(key: CellKey, per_kernel: Sequence[Sequence[float]], studies: dict[str, Study]):
    """One series as the change points read it (iowatch.stats.changepoints.History):
    one value a kernel, the median of its repetitions, in the kernels' order; the
    step worth a candidate is the study's minimum effect."""
    from iowatch.stats.changepoints import History
    return History(key, [median(values) for values in per_kernel],
                   min_effect(studies.get(key.study)),
                   repetitions=[len(values) for values in per_kernel])


@dataclass(frozen=True)
class ConfirmedChangePoint:
    """A change point the A/B of its segments' repetitions confirmed."""
    key: CellKey
    point: object                # iowatch.stats.changepoints.Candidate
    verdict: CellVerdict         # compare_sides of the kernels before against those after
    before: tuple[int, ...]      # the history's kernel indices pooled on each side
    after: tuple[int, ...]


def segment_kernels(repetitions, start: int, index: int, end: int,
                    cap: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The kernels nearest the step on each side of history index `index`, within
    [start, end), until a side holds `cap` repetitions (the study's max_runs):
    the A/B judges the step with the repetitions a comparison may take."""
    def take(order) -> tuple[int, ...]:
        chosen, n = [], 0
        for i in order:
            chosen.append(i)
            n += repetitions[i] if i < len(repetitions) else 1
            if n >= cap:
                break
        return tuple(sorted(chosen))
    return take(range(index - 1, start - 1, -1)), take(range(index, end))


def confirm_change_points(histories, sides, *, studies: dict[str, Study],
                          fdr: float = FDR) -> dict[CellKey, list[ConfirmedChangePoint]]:
    """The change points of a nightly's histories (one family) that the A/B confirms.

    Candidates come from iowatch.stats.changepoints.candidates: e-divisive on
    one value per kernel, with the selection test over the family at `fdr`.
    Each is then judged by compare_sides on repetitions: `sides(key, before,
    after)` gives the two sides of the kernels segment_kernels chose (nearest
    the step, up to the study's cap a side), and the candidate's cell must come
    out a regression or an improvement, with the study's minimum effect and cap,
    in that comparison's family. A candidate the A/B does not confirm is dropped:
    it opens nothing and queues no bisect. Nor does one whose A/B saw the
    platform move (the canary's cells of the same segments changed beyond their
    minimum effect, `Comparison.platform`): a step the machine took with the
    kernel is no kernel's change point."""
    from iowatch.stats.changepoints import candidates
    out: dict[CellKey, list[ConfirmedChangePoint]] = {}
    by_key = {h.key: h for h in histories}
    for key, points in candidates(histories, fdr=fdr).items():
        study = studies.get(key.study)
        for point in points:
            before, after = segment_kernels(by_key[key].repetitions, point.start, point.index,
                                            point.end, max_runs(study))
            base, candidate = sides(key, before, after)
            cmp = compare_sides(base, candidate, studies=studies, fdr=fdr)
            verdict = next((v for v in cmp.verdicts if v.key.pooled == key.pooled), None)
            if verdict is not None and not cmp.platform and verdict.outcome in CONFIRMED_OUTCOMES:
                out.setdefault(key, []).append(ConfirmedChangePoint(key, point, verdict, before, after))
    return out


Step = tuple[Hashable, Hashable]  # (the last kernel before the step, the first after it)


def opening_steps(confirmed: Mapping[CellKey, Sequence[ConfirmedChangePoint]],
                  kernels: Mapping[CellKey, Sequence[Hashable]],
                  stored: Mapping[CellKey, set]) -> dict[Step, list[tuple[CellKey, ConfirmedChangePoint]]]:
    """The steps that open a regression, each with the series' change points at it.

    Per series: its newest confirmed change point that is a regression (an
    improvement opens nothing; an older step of the same series was raised when
    it was new), unless a change point of the series is already `stored` at a
    kernel within SAME_STEP_KERNELS of it (the same step seen again).
    `kernels[key]` is the series' kernels in the history's order (a change
    point's index is into it), `stored[key]` the kernels it has a stored change
    point at. Series meeting at one step share it: one step, one regression."""
    steps: dict[Step, list[tuple[CellKey, ConfirmedChangePoint]]] = {}
    for key, found in sorted(confirmed.items()):
        regressions = [cp for cp in found if cp.verdict.outcome == Outcome.REGRESSION.word]
        if not regressions:
            continue
        newest = max(regressions, key=lambda cp: cp.point.index)
        order, i = kernels[key], newest.point.index
        near = order[max(i - SAME_STEP_KERNELS, 0):i + SAME_STEP_KERNELS + 1]
        if stored.get(key, set()) & set(near):
            continue
        steps.setdefault((order[i - 1], order[i]), []).append((key, newest))
    return steps
