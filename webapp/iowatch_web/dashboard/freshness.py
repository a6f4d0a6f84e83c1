"""Caches of what the dashboard reads, keyed on the store's last change.

What a chart endpoint answers changes only when a run arrives or is deleted,
or when the verdict work stores or recomputes a comparison (and with it its
cell verdicts and change points). The stamp reads those facts in two
index-backed aggregates: the newest run's id and arrival time, the run count
(a deleted older run), and the last verdict computed. A key made with it is
never stale for new data; the arrival and computing times (to the
microsecond) tell a store made anew apart from the old one whose ids it
reuses, since the cache is kept in files (settings.CACHES) that outlive a
database, and a migration (how a store is made anew) empties the cache.
The timeout bounds what a hand edit could leave behind.
"""
from __future__ import annotations

import hashlib
from typing import Callable

from django.core.cache import cache
from django.db.models import Count, Max

from iowatch_web.regressions.models import StoredComparison, Regression
from iowatch_web.results.models import Run

TIMEOUT_S = 300


def stamp() -> str:
    runs = Run.objects.aggregate(last=Max("id"), n=Count("id"), at=Max("received_at"))
    verdicts = StoredComparison.objects.aggregate(last=Max("computed_at"))
    return f"{runs['last']}|{runs['n']}|{runs['at']}|{verdicts['last']}"


def cached(what: str, parts, make: Callable[[], dict], *, also: str = "") -> dict:
    """make()'s answer for `parts` (any repr-able value), made again after the
    store changes; `also` adds what else the answer depends on (a file's stamp)."""
    key = f"dashboard-{what}-" + hashlib.sha256(
        f"{parts!r}|{stamp()}|{also}".encode()).hexdigest()
    if (found := cache.get(key)) is not None:
        return found
    answer = make()
    cache.set(key, answer, TIMEOUT_S)
    return answer


def forget(**kwargs) -> None:
    """post_migrate: every cached answer (the compare cache too, keyed on run ids) goes."""
    cache.clear()


def work_stamp() -> str:
    """For pages that also show triage and the verdict queue (overview, regressions):
    the last triage change and the runs whose verdict is not done (a partial index)."""
    triaged = Regression.objects.aggregate(last=Max("updated"), n=Count("id"))
    open_work = Run.objects.exclude(verdict_state="done").values_list("verdict_state").annotate(
        n=Count("id")).order_by("verdict_state")
    return f"{triaged['last']}|{triaged['n']}|{list(open_work)}"
