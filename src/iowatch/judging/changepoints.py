"""Change points confirmed by the policy: e-divisive candidates (iowatch.stats.changepoints)
judged again as an A/B of the repetitions either side of the step (compare_sides).

The server's nightly path builds each series' `history` here and asks
`confirm_change_points`; it never calls the statistics itself."""
from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Sequence

from iowatch.cells import CellKey
from iowatch.judging.policy import compare_sides, deciding, max_runs, min_effect
from iowatch.stats import FDR, CellVerdict
from iowatch.studies import Study


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
            if verdict is not None and not cmp.platform and verdict.outcome in ("regression", "improvement"):
                out.setdefault(key, []).append(ConfirmedChangePoint(key, point, verdict, before, after))
    return out
