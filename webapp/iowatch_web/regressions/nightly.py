"""Nightly regressions and the bisect queue (issue 14; docs/lab.md).

A run whose bundle carries the nightly trigger ({"kind": "nightly", ...},
stored as Run.trigger) is judged like any other run (regressions/verdicts.py):
against the previous run of its matrix on its host, and by the change points
of every series key it touched. A regression opened by either is of kind
"nightly", and one change is one regression: a change point found later at
the step a night-over-night regression already names joins that regression
instead of opening a second one.

A new nightly regression queues a BisectJob in the transaction that opens it,
and a regression on a lab host a confirmation on a second host of its device
class (regressions/confirm.py);
a maintainer queues one with the "bisect" action. Agents claim jobs, post the
steps and then the result (regressions/bisect_api.py).
"""
from __future__ import annotations

from django.db.models import Q

from iowatch.judging.worst import severity, worst_order
from iowatch_web.regressions import confirm
from iowatch_web.regressions.models import BISECT_OPEN, BisectJob, StoredComparison, Regression
from iowatch_web.results.models import Kernel, Patch, Run

NIGHTLY = Q(trigger__kind="nightly")


def kind_of(comparison: StoredComparison) -> str:
    """nightly: a change point, or a night-over-night comparison of nightly runs;
    check: a patch of a series; ab: any other pairing."""
    if comparison.reason == "change-point":
        return "nightly"
    if comparison.reason in ("parent", "series-base"):
        return "check"
    if comparison.candidate_runs.filter(NIGHTLY).exists():
        return "nightly"
    return "ab"


def opened(regression: Regression) -> None:
    """A regression was just created (inside the verdict work's transaction):
    its kind, and for a nightly one the bisect job that starts by itself."""
    regression.kind = kind_of(regression.comparison)
    regression.save(update_fields=["kind"])
    if regression.kind == "nightly":
        queue_bisect(regression, origin="nightly")
    confirm.queue_for(regression)  # on a second lab host of the class, when there is one


def same_change(host_id: int, matrix: str, after: int, order: list[int]) -> StoredComparison | None:
    """The night-over-night comparison whose nightly regression already names
    the step at kernel `after` (or a kernel next to it in the history `order`:
    e-divisive may place a boundary one kernel off), if there is one."""
    i = order.index(after)
    near = order[max(i - 1, 0):i + 2]
    return (StoredComparison.objects.filter(reason="previous-run", host_id=host_id, matrix=matrix,
                                      candidate_kernel_id__in=near, regression__kind="nightly")
            .order_by("-computed_at").first())


# --- the cell a bisect follows ------------------------------------------------

def worst_cell(regression: Regression) -> dict | None:
    """The regression's worst deciding cell: of its regressed A/B cells (else its
    change points), the first in judging's worst-first order (iowatch.judging.worst:
    the slowdown in minimum effects), then by name."""
    cells = _cells(regression)
    ab = [c for c in cells if not c["point"]]
    return min(ab or cells, default=None, key=lambda c: (
        worst_order("regression", severity(c["change_pct"], c["direction"], c["min_effect_pct"])),
        c["key"], c["group"], c["metric"]))


class NoCell(ValueError):
    """The cell a maintainer named is not one of the regression's."""
    where = "body field cell"


class NothingToBisect(NoCell):
    """The regression's two kernels are one commit apart: nothing lies between."""
    where = "regression"


def already_first_bad(comparison: StoredComparison) -> str | None:
    """Why no bisect is needed, in words, when the bad kernel is a patch of a
    series compared with its parent (one commit apart: the patch is the first
    bad commit); None when commits may lie between the two kernels."""
    good, bad = comparison.base_kernel, comparison.candidate_kernel
    if not (good.series_id and good.series_id == bad.series_id and good.patch_index is not None
            and bad.patch_index == good.patch_index + 1):
        return None
    subject = (Patch.objects.filter(series_id=bad.series_id, index=bad.patch_index)
               .values_list("subject", flat=True).first())
    named = f"patch {bad.patch_index}" + (f" (\u201c{subject}\u201d)" if subject else "")
    return (f"{named} is applied on its parent alone, so it is already the first bad commit: "
            "there is no commit between the two kernels to bisect")


def queue_bisect(regression: Regression, *, origin: str, user=None,
                 cell: dict | None = None) -> BisectJob:
    """The regression's open bisect job, or a new queued one following `cell`
    ({key, group, metric}: one of its regressed cells; default the worst)."""
    job = regression.bisects.filter(state__in=BISECT_OPEN).first()
    if job is not None:
        return job
    if why := already_first_bad(regression.comparison):
        raise NothingToBisect(f"regression #{regression.pk}: {why}")
    if cell:
        found = [c for c in _cells(regression)
                 if (c["key"], c["group"], c["metric"]) == (cell.get("key"), cell.get("group"),
                                                           cell.get("metric"))]
        if not found:
            raise NoCell(f"cell {cell.get('key')!r} [{cell.get('group')}] {cell.get('metric')} "
                         f"is not a regressed cell of regression #{regression.pk}")
        chosen = found[0]
    else:
        chosen = worst_cell(regression)
        if chosen is None:
            raise NoCell(f"regression #{regression.pk} has no regressed cell to follow")
    comparison = regression.comparison
    good, bad = comparison.base_kernel, comparison.candidate_kernel
    return BisectJob.objects.create(
        regression=regression, origin=origin, requested_by=user, cell_key=chosen["key"],
        study=chosen["study"], device_class=chosen["device_class"],
        filesystem=chosen["filesystem"], group=chosen["group"], metric_id=chosen["metric"],
        good_kernel=good.release, good_commit=good.git_commit,
        bad_kernel=bad.release, bad_commit=bad.git_commit)


def _cells(regression: Regression) -> list[dict]:
    """Its regressed A/B cells, then its change points, as a bisect names a cell."""
    out = [{"key": v.cell_key, "study": v.study.slug, "device_class": v.device_class,
            "filesystem": v.filesystem, "group": v.group, "metric": v.metric_id,
            "change_pct": v.change_pct, "direction": v.direction,
            "min_effect_pct": v.min_effect_pct, "point": False}
           for v in regression.regressed_cells().select_related("study")]
    out += [{"key": p.cell_key, "study": p.study.slug,
             "device_class": p.device.device_class if p.device_id else "",
             "filesystem": p.filesystem, "group": p.group, "metric": p.metric_id,
             "change_pct": p.change_pct, "direction": p.metric.direction,
             "min_effect_pct": p.min_effect_pct, "point": True}
            for p in regression.comparison.change_points.select_related("study", "device", "metric")]
    return out


# --- what the detail and the claim say about the two ends -----------------------

def side(kernel: Kernel, runs) -> dict:
    return {"kernel": kernel.release, "commit": kernel.git_commit,
            "runs": [str(r) for r in runs.order_by("id").values_list("run_id", flat=True)]}


def good_and_bad(regression: Regression) -> tuple[dict, dict]:
    c = regression.comparison
    return side(c.base_kernel, c.base_runs), side(c.candidate_kernel, c.candidate_runs)


def trigger_of(regression: Regression) -> dict:
    """The nightly trigger of the bad side's newest nightly run ({} when none):
    the tree and branch a bisect builds from."""
    run = (regression.comparison.candidate_runs.filter(NIGHTLY).order_by("-id").first()
           or Run.objects.filter(NIGHTLY, kernel=regression.comparison.candidate_kernel,
                                 host=regression.comparison.host).order_by("-id").first())
    return run.trigger if run else {}

