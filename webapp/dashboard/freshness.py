"""Caches of what the dashboard reads, keyed on the store's last change.

What a chart endpoint answers changes only when a run arrives or is deleted,
or when the verdict work stores or recomputes a comparison (and with it its
cell verdicts and change points). The stamp reads those three facts in two
index-backed aggregates; a key made with it is never stale for new data, and
the timeout bounds what an older run's deletion (the same newest id, one run
fewer, is still seen by the count) or a hand edit could leave behind.
"""
from __future__ import annotations

import hashlib
from typing import Callable

from django.core.cache import cache
from django.db.models import Count, Max

from regressions.models import Comparison
from results.models import Run

TIMEOUT_S = 300


def stamp() -> str:
    runs = Run.objects.aggregate(last=Max("id"), n=Count("id"))
    verdicts = Comparison.objects.aggregate(last=Max("computed_at"))
    return f"{runs['last']}|{runs['n']}|{verdicts['last']}"


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
