"""/api/v1/runs/{run_id}/values: a run's values as judging reads them, raw
samples or the summaries retention left (store/values.py). The retention app
adds this router to the one API (site/api.py): the endpoint exists because
retention summarises, and the results app stays free of retention."""
from __future__ import annotations

import uuid

from django.http import JsonResponse
from ninja import Router, Schema

from iowatch_web.site.bounds import MAX_SAMPLES_FILTERED, VALUES_PAGE, Offset, ValueLimit
from iowatch_web.results.models import Cell, Run
from iowatch_web.site.api import Error, Page, found, page_problem
from iowatch_web.store.values import values_page

router = Router()


class ValueOut(Schema):
    cell_id: int
    cell: str
    repetition: int
    metric: str
    value: float
    group: str
    job: str | None


class ValuePage(Page):
    items: list[ValueOut]


@router.get("/runs/{run_id}/values", response={200: ValuePage, 400: Error, 404: Error}, tags=["reads"],
         summary="A run's values as judging reads them: raw samples, or the summaries retention left")
def list_run_values(request, run_id: uuid.UUID, limit: ValueLimit = VALUES_PAGE,
                    offset: Offset = 0):
    """What `iowatch compare --server` rebuilds a run from. /samples returns the
    stored rows only, and a run retention summarised has no group-level rows
    left; this reads through store.values.sample_values, the one reader the
    server's own verdicts use, so both sides see the same numbers. Per-job
    values come with a raw run only (a summary keeps none). Paged: VALUES_PAGE
    values unless `limit` asks for more (up to MAX_SAMPLES_FILTERED)."""
    if error := page_problem(limit, offset, MAX_SAMPLES_FILTERED):
        return error
    run = found(Run, "run", run_id=run_id)
    cells = Cell.objects.filter(run=run).values("id")
    count, values = values_page(cells, limit, offset)
    # The page's cells by their id range (a list of thousands of ids costs the driver).
    keys = dict(Cell.objects.filter(run=run, pk__gte=values[0].cell_id, pk__lte=values[-1].cell_id)
                .values_list("id", "key")) if values else {}
    return JsonResponse({"count": count, "limit": limit, "offset": offset, "items": [
        {"cell_id": v.cell_id, "cell": keys[v.cell_id], "repetition": v.repetition, "metric": v.metric,
         "value": v.value, "group": v.group, "job": v.job} for v in values]})
