"""One regression per patch (issue 28), as Perfherder groups the alerts of one
push under one summary.

A patch k > 1 of a series is compared with its parent (patch k-1) and with the
series base (patch 0) (regressions/verdicts.py). When both find the patch
slower they see one change, and people triage it once: the parent's
Regression holds the series-base comparison among its `views`. A series-base
comparison opens a Regression of its own only while its patch's parent
comparison opened none (a slowdown that crept in over several patches, none
beyond the minimum effect alone); once the parent's opens, that one joins it
unless somebody has triaged it already (a person's decision stays where it
was made).
"""
from __future__ import annotations

from iowatch_web.regressions.models import StoredComparison, Regression

PARENT, SERIES_BASE = "parent", "series-base"


def _same_patch(comparison: StoredComparison, reason: str):
    return StoredComparison.objects.filter(reason=reason, host_id=comparison.host_id,
                                     matrix=comparison.matrix,
                                     candidate_kernel_id=comparison.candidate_kernel_id)


def _untriaged(regressions):
    return regressions.filter(state="new", events__isnull=True)


def home(comparison: StoredComparison) -> Regression | None:
    """The regression a regressed series-base comparison is shown in: its
    patch's parent comparison's, when that one is open; else None."""
    if comparison.reason != SERIES_BASE:
        return None
    return Regression.objects.filter(comparison__in=_same_patch(comparison, PARENT)).first()


def join(regression: Regression, comparison: StoredComparison) -> None:
    """Show `comparison` inside `regression`; a regression it had opened alone
    goes while nobody has triaged it."""
    regression.views.add(comparison)
    _untriaged(Regression.objects.filter(comparison=comparison)).delete()
    regression.save(update_fields=["updated"])


def gather(regression: Regression, regressed) -> None:
    """After a parent comparison's regression is opened or refreshed: its
    patch's series-base comparisons that regressed join it (`regressed(c)`
    says whether one did)."""
    if regression.comparison.reason != PARENT:
        return
    for other in _same_patch(regression.comparison, SERIES_BASE):
        if regressed(other):
            join(regression, other)


def leave(comparison: StoredComparison) -> list[StoredComparison]:
    """`comparison` regresses no more: it leaves the regressions it is shown
    in. Returns the series-base comparisons its own regression held, which
    need a regression of their own again when it goes."""
    Regression.views.through.objects.filter(storedcomparison=comparison).delete()
    if comparison.reason != PARENT:
        return []
    return list(StoredComparison.objects.filter(shown_in__comparison=comparison))
