"""The one way to read samples: raw rows where they are, summaries where
retention removed them (retention.models.SampleSummary).

Judging (store/sides.py), the change points (regressions/verdicts.py), the
history and run pages (dashboard) read group-level values here, so they read
the same numbers whether a run was summarised or not."""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from django.db.models import CharField, Count, FloatField, IntegerField, Sum, TextField
from django.db.models.functions import Cast
from django.db.models import Value as Literal

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
    cell's values by repetition, in the order they were stored (raw rows by
    id; a summary keeps that order within its metric).

    Raw rows and summaries come in one statement (UNION ALL), so a run that
    retention summarises meanwhile is read once, either way, never twice."""
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
    columns = ("cell_id", "repetition", "metric_id", "value", "group", "job", "per_rep", "id")
    # A summary's values come as JSON text, decoded here for summaries only: as
    # a JSON column, each raw row's NULL was decoded too (a third of a 100,000-value page).
    raw = raw.annotate(per_rep=Literal(None, output_field=TextField())).values_list(*columns)
    summaries = summaries.annotate(
        repetition=Literal(None, output_field=IntegerField()),
        value=Literal(None, output_field=FloatField()),
        job=Literal(None, output_field=CharField()),
        per_rep=Cast("repetitions", TextField())).values_list(*columns)
    # No ordering unless asked: Sample's default (cell, then the cell's run) costs joins.
    rows = raw.order_by().union(summaries.order_by(), all=True)
    if ordered:
        # A cell is raw or summarised as a whole (retention/retain.py): its raw rows
        # by repetition and id, or its summaries, which are sorted here.
        rows = rows.order_by("cell_id", "repetition", "id")
    pending: list[Value] = []
    for cell_id, rep, metric, value, group_, job, per_rep, _ in rows.iterator(chunk_size=10_000):
        if per_rep is None:
            yield Value(cell_id, rep, metric, value, group_, job)
            continue
        if pending and pending[0].cell_id != cell_id:
            yield from _by_repetition(pending, ordered)
            pending = []
        pending += [Value(cell_id, r, metric, v, group_, None) for r, vs in json.loads(per_rep)
                    for v in vs]
    yield from _by_repetition(pending, ordered)


def values_page(cells, limit: int, offset: int) -> tuple[int, list[Value]]:
    """(how many values `cells` hold, jobs' too; the values offset to
    offset + limit of them in sample_values(ordered=True)'s order). Only the
    cells that hold the page are read: a page of a 100,000-cell run reads its
    own values, not the run's million (issue 28); the count is the database's."""
    held: Counter[int] = Counter(dict(
        Sample.objects.filter(cell_id__in=cells).order_by().values("cell_id")
        .annotate(n=Count("id")).values_list("cell_id", "n")))
    held.update(dict(SampleSummary.objects.filter(cell_id__in=cells).order_by().values("cell_id")
                     .annotate(n=Sum("n")).values_list("cell_id", "n")))
    chosen, skip, before = [], 0, 0
    for cell_id in sorted(held):  # the order of sample_values(ordered=True): by cell id
        if before + held[cell_id] > offset and before < offset + limit:
            if not chosen:
                skip = offset - before
            chosen.append(cell_id)
        before += held[cell_id]
    if not chosen:
        return before, []
    # The page's cells are consecutive in id among `cells`: read them by range,
    # not by a list of thousands of ids (its parameters took the driver a second).
    page_cells = cells.filter(pk__gte=chosen[0], pk__lte=chosen[-1])
    values = list(sample_values(page_cells, jobs=True, ordered=True))
    return before, values[skip:skip + limit]


def _by_repetition(values: list[Value], ordered: bool) -> list[Value]:
    # sorted() is stable: the stored order stays within a repetition.
    return sorted(values, key=lambda v: v.repetition) if ordered else values
