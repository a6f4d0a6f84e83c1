"""The per-device-class roll-up (KernelCI's per-platform view, for storage):
for a tracked branch, a series, or every lab run of the last days, each
device class and study with its latest stored state, its trend over the last
comparisons and its open regressions, so "how does eMMC look on for-next this
week" is one page.

It reads what the verdict worker stored (StoredComparison.column_states) and
never judges again: the trend is the stored states in order, with their
labels (iowatch.vocabulary.outcomes)."""
from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

from django.utils import timezone

from iowatch.vocabulary.outcomes import Outcome
from iowatch_web.dashboard import freshness
from iowatch_web.dashboard.queries import OPEN_STATES, kernel_label
from iowatch_web.regressions.models import StoredComparison, StoredVerdict
from iowatch_web.regressions.nightly import NIGHTLY
from iowatch_web.results.models import DEVICE_CLASSES, PatchSeries, Run

# The windows a reader picks, in days; the trend shows this many comparisons at most.
WINDOWS = (7, 30, 90, 365)
TREND = 8
# One comparison per change: a patch against its parent, a run against the
# previous one. A patch's series-base view and a nightly's change point
# repeat a change already counted.
ROLLED_UP = ("parent", "previous-run")


def scopes() -> dict:
    """What the page offers to narrow by: the tracked branches and the series."""
    branches = sorted({b for b in Run.objects.filter(NIGHTLY).values_list("trigger__branch", flat=True)
                       if isinstance(b, str) and b})
    series = list(PatchSeries.objects.order_by("name", "base").values("id", "name", "base"))
    return {"branches": branches, "series": series}


def in_scope(branch: str = "", series_id: int | None = None):
    """The comparisons of a branch (its nightly runs' kernels), of a series, or all."""
    found = StoredComparison.objects.filter(reason__in=ROLLED_UP)
    if branch:
        found = found.filter(candidate_runs__trigger__kind="nightly",
                             candidate_runs__trigger__branch=branch)
    if series_id is not None:
        found = found.filter(candidate_kernel__series_id=series_id)
    return found.distinct()


def rollup(branch: str = "", series_id: int | None = None, days: int = 7) -> dict:
    return freshness.cached("device-classes", (branch, series_id, days),
                            lambda: _rollup(branch, series_id, days), also=freshness.work_stamp())


def _rollup(branch: str, series_id: int | None, days: int) -> dict:
    scope = in_scope(branch, series_id)
    since = timezone.now() - timedelta(days=days)
    history = defaultdict(list)  # (device class, study) -> its states, oldest first
    for c in (scope.filter(computed_at__gte=since).order_by("computed_at", "id")
              .values("id", "column_states", "computed_at", "host__name", "base_kernel_id",
                      "candidate_kernel_id", "candidate_kernel__release",
                      "candidate_kernel__git_commit", "candidate_kernel__patch_index")):
        kernel = kernel_label(c["candidate_kernel__release"], c["candidate_kernel__git_commit"],
                              c["candidate_kernel__patch_index"])
        for column in c["column_states"]:
            history[column["device_class"], column["study"]].append(
                {"state": column["state"], "label": _label(column["state"]), "kernel": kernel,
                 "host": c["host__name"], "at": c["computed_at"],
                 "base": c["base_kernel_id"], "candidate": c["candidate_kernel_id"]})
    open_regressions = defaultdict(list)
    for device_class, study, regression in (
            StoredVerdict.objects.filter(outcome=Outcome.REGRESSION.word, comparison__in=scope,
                                         comparison__regression__state__in=OPEN_STATES)
            .values_list("device_class", "study__slug", "comparison__regression__id")
            .distinct().order_by("comparison__regression__id")):
        if regression not in open_regressions[device_class, study]:
            open_regressions[device_class, study].append(regression)
    keys = set(history) | set(open_regressions)
    classes = []
    for device_class in sorted({k[0] for k in keys}, key=_class_order):
        rows = [_row(study, history.get((device_class, study), []),
                     open_regressions.get((device_class, study), []))
                for study in sorted(s for d, s in keys if d == device_class)]
        classes.append({"device_class": device_class or "unknown class", "rows": rows})
    return {"classes": classes, "days": days, "trend_length": TREND}


def _label(state: str) -> str:
    outcome = _outcome(state)
    return outcome.short if outcome else state


def _outcome(state: str) -> Outcome | None:
    try:
        return Outcome(state)  # a state's word finds its outcome ("unsure": inconclusive)
    except ValueError:
        return None


def _class_order(device_class: str) -> tuple:
    return (DEVICE_CLASSES.index(device_class) if device_class in DEVICE_CLASSES else len(DEVICE_CLASSES),
            device_class)


def _row(study: str, states: list[dict], regressions: list[int]) -> dict:
    """A study on a device class: its latest state, the last TREND states, and
    the state before the latest when it differs (the move is said in the
    states' own words: an improvement after "no change" is neither better
    nor worse in one word)."""
    latest = states[-1] if states else None
    before = states[-2] if len(states) > 1 else None
    return {"study": study, "latest": latest, "trend": states[-TREND:],
            "changed_from": before if before and before["state"] != latest["state"] else None,
            "same": bool(before) and before["state"] == latest["state"],
            "compared": len(states), "regressions": regressions}
