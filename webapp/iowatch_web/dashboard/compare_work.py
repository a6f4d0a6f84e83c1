"""A compare of two sides, computed once, and off the request when it is large
(issue 42: four first readers of the compare of two 100,000-cell runs each
computed it inside their request for 110 s, holding every web worker).

/compare and /dashboard/api/compare ask answer(). It resolves the sides' runs
and finds or makes the answer's row (regressions.CompareAnswer) by its key,
the sides' specs and run ids. The row's unique key is the single-flight
lock: of concurrent first readers, one inserts the row and the others find
it, so one computation is queued whatever the number of readers. Sides of at
most settings.IOWATCH_COMPARE_INLINE_CELLS stored cells are computed at once
by the request that made the row (a few milliseconds); larger ones are a task
on the verdict worker's queue, and until it is done every reader gets
Computing (the page that refreshes, or HTTP 202 with Retry-After).

Why a row and not an advisory lock or the cache: it works alike on SQLite
and PostgreSQL, across web machines (the file cache is one machine's), it
survives a restart, and it is where the answer is kept. A computation that
stopped (its worker killed) is taken up again by the next reader after
settings.IOWATCH_VERDICT_STALL_S; a failed one is said (HTTP 500, the error)
for FAILED_SHOWN_S, and a read after that tries again.
"""
from __future__ import annotations

import hashlib
import json
import time
import zlib
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django_tasks import task

from iowatch_web.dashboard import compare_page
from iowatch_web.regressions.models import CompareAnswer
from iowatch_web.regressions.work import QUEUE

# A page that says "being computed" asks again after this long.
REFRESH_S = 2
# A failed computation is said to its readers this long; a read after it tries again.
FAILED_SHOWN_S = 60


class Computing(Exception):
    """The answer is being computed (or queued): ask again in REFRESH_S."""

    def __init__(self, row: CompareAnswer):
        self.state, self.cells, self.asked_at = row.state, row.cells, row.asked_at
        super().__init__(f"the compare of {row.base_spec} and {row.candidate_spec} "
                         f"({row.cells} stored cells) is being computed ({row.state})")

    def as_json(self) -> dict:
        return {"state": "computing", "computing": self.state, "cells": self.cells,
                "asked_at": self.asked_at.isoformat(), "retry_after_s": REFRESH_S,
                "words": str(self)}


class CompareFailed(Exception):
    """The computation failed; asking again tries again."""


def answer(base_spec: str, candidate_spec: str) -> dict:
    """The compare's answer (compare_page.judge_sides' dict, with how it was
    computed), or raise Computing while it is made, CompareFailed when it
    failed, compare_page.SideNotFound when a side has no runs."""
    base_runs = compare_page.side_runs(base_spec, "base")
    candidate_runs = compare_page.side_runs(candidate_spec, "candidate")
    ids = ",".join(str(r.pk) for r in base_runs) + "|" + ",".join(str(r.pk) for r in candidate_runs)
    key = hashlib.sha256(f"{base_spec}|{candidate_spec}|{ids}".encode()).hexdigest()
    cells = sum(r.cell_count or 0 for r in (*base_runs, *candidate_runs))
    row, made = _row(key, base_spec, candidate_spec, cells)
    if row.state == "done":
        return decoded(row)
    if made and cells <= settings.IOWATCH_COMPARE_INLINE_CELLS:
        compute(row.pk)
        return answer_of(row.pk)
    if not made and _again(row):
        _queue(row.pk)
        row.refresh_from_db()
    if row.state == "failed":
        raise CompareFailed(f"computing the compare failed: {row.error}")
    raise Computing(row)


def _row(key: str, base_spec: str, candidate_spec: str, cells: int) -> tuple[CompareAnswer, bool]:
    """The answer's row, and whether this call made it (and so queued its work:
    in the row's own transaction, so a row never stands without its work)."""
    try:
        with transaction.atomic():
            row = CompareAnswer.objects.create(key=key, base_spec=base_spec[:300],
                                               candidate_spec=candidate_spec[:300], cells=cells)
            if cells > settings.IOWATCH_COMPARE_INLINE_CELLS:
                compute_answer.enqueue(row.pk)
            return row, True
    except IntegrityError:  # another reader made it first: share its computation
        return CompareAnswer.objects.get(key=key), False


def _again(row: CompareAnswer) -> bool:
    """Whether a found row's computation is to be begun again: it failed more
    than FAILED_SHOWN_S ago, or it was asked for or begun longer ago than a
    worker may stall (its worker, or the request computing it, was killed)."""
    if row.state == "failed":
        return row.computed_at < timezone.now() - timedelta(seconds=FAILED_SHOWN_S)
    stalled = timezone.now() - timedelta(seconds=settings.IOWATCH_VERDICT_STALL_S)
    return row.state != "done" and (row.started_at or row.asked_at) < stalled


def _queue(pk: int) -> None:
    """Queue the computation again (a second task for a stalled one is harmless:
    only one claims the row)."""
    with transaction.atomic():
        if CompareAnswer.objects.filter(pk=pk).exclude(state="done").update(
                state="queued", error="", started_at=None, asked_at=timezone.now()):
            compute_answer.enqueue(pk)


def answer_of(pk: int) -> dict:
    row = CompareAnswer.objects.get(pk=pk)
    if row.state == "failed":
        raise CompareFailed(f"computing the compare failed: {row.error}")
    return decoded(row)


def decoded(row: CompareAnswer) -> dict:
    out = json.loads(zlib.decompress(bytes(row.answer)))
    out["computed"] = {"at": row.computed_at.isoformat(), "seconds": row.seconds,
                       "times": row.computations}
    return out


@task(queue_name=QUEUE)
def compute_answer(pk: int) -> str:
    """The verdict worker's side of a large compare."""
    said = compute(pk)
    if said.startswith("failed"):
        raise CompareFailed(said)
    return said


def compute(pk: int) -> str:
    """Claim the row (queued → running: one claimant) and compute its answer."""
    claimed = CompareAnswer.objects.filter(pk=pk, state="queued").update(
        state="running", started_at=timezone.now())
    if not claimed:
        return "nothing to do: computed, under way, or gone"
    row = CompareAnswer.objects.get(pk=pk)
    t0 = time.monotonic()
    try:
        result = compare_page.compare(row.base_spec, row.candidate_spec)
    except Exception as e:  # the reader is told, and asking again tries again
        why = f"{type(e).__name__}: {e}"
        CompareAnswer.objects.filter(pk=pk).update(state="failed", error=why,
                                                   computed_at=timezone.now())
        return f"failed: {why}"
    blob = zlib.compress(json.dumps(result, separators=(",", ":")).encode(), 6)
    seconds = time.monotonic() - t0
    CompareAnswer.objects.filter(pk=pk).update(state="done", answer=blob, seconds=seconds,
                                               computations=row.computations + 1,
                                               computed_at=timezone.now())
    return f"{len(result['cells'])} deciding cells in {seconds:.1f} s"
