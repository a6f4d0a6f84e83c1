"""The one way to read samples: raw rows where they are, summaries where
retention removed them (retention.models.SampleSummary).

Judging (results/sides.py), the change points (regressions/verdicts.py), the
history and run pages (dashboard) read group-level values here, so they read
the same numbers whether a run was summarised or not."""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

from iowatch_web.results.models import Sample
from iowatch_web.retention.models import SampleSummary


class Value(NamedTuple):
    cell_id: int
    repetition: int
    metric: str
    value: float
    group: str
    job: str | None


def sample_values(cells, *, metrics: Iterable[str] | None = None, group: str | None = None,
                  jobs: bool = False, ordered: bool = False) -> Iterator[Value]:
    """The samples of `cells` (a Cell queryset or cell ids): group-level ones,
    and with jobs=True the per-job ones too (a summarised run has none left).
    Optionally only some metrics or one job group. ordered=True gives each
    cell's values by repetition, a cell's rows in the order they were stored
    (raw rows by id; a summary keeps that order within a metric)."""
    raw = Sample.objects.filter(cell_id__in=cells)
    summaries = SampleSummary.objects.filter(cell_id__in=cells)
    if not jobs:
        raw = raw.filter(job__isnull=True)
    if metrics is not None:
        metrics = list(metrics)
        raw = raw.filter(metric_id__in=metrics)
        summaries = summaries.filter(metric_id__in=metrics)
    if group is not None:
        raw = raw.filter(group=group)
        summaries = summaries.filter(group=group)
    # No ordering unless asked: Sample's default (cell, then the cell's run) costs joins.
    raw = raw.order_by("cell_id", "repetition", "id") if ordered else raw.order_by()
    for row in raw.values_list("cell_id", "repetition", "metric_id", "value", "group", "job") \
            .iterator(chunk_size=10_000):
        yield Value(*row)
    summaries = summaries.order_by("cell_id", "id") if ordered else summaries.order_by()
    by_cell: dict[int, list[Value]] = {}
    last_cell = None
    for cell_id, group_, metric, repetitions in summaries.values_list(
            "cell_id", "group", "metric_id", "repetitions").iterator(chunk_size=2_000):
        values = [Value(cell_id, rep, metric, v, group_, None)
                  for rep, vs in repetitions for v in vs]
        if not ordered:
            yield from values
            continue
        if last_cell is not None and cell_id != last_cell:
            yield from _by_repetition(by_cell.pop(last_cell))
        by_cell.setdefault(cell_id, []).extend(values)
        last_cell = cell_id
    if last_cell is not None and ordered:
        yield from _by_repetition(by_cell.pop(last_cell))


def _by_repetition(values: list[Value]) -> list[Value]:
    return sorted(values, key=lambda v: v.repetition)  # stable: row order kept within a repetition
