"""Verdicts stored when a run arrives (docs/verdicts.md): what a new run is
compared against, the A/B verdicts of its cells, and the change points in the
history of the series keys it touched.

The verdict is iowatch.judging's, the same the CLI, the check and the
dashboard give: this module reads the two sides through the store's adapter
(store/sides.py), asks the policy, and stores what it decided.

Pairing a measured run's kernel with a base (each side pools every run of
its kernel on the same host with the same matrix):
- a kernel of a series at patch k > 0: patch k-1 (its parent) and patch 0
  (the series base; for k = 1 the two are one comparison, "parent");
- any other kernel: the kernel of the run of the matrix on the host before
  the kernel's first one there.
A run of a kernel that is already the base of stored comparisons refreshes
them, so a patch that arrives after its child is still compared.
"""
from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Min, Q

from iowatch.cells import CellKey
from iowatch.vocabulary import FDR
from iowatch.judging import (compare_sides, confirm_change_points, deciding_metrics, history_of,
                             platform_words)
from iowatch.judging.changepoints import opening_steps
from iowatch.judging.sides import SideQuery
from iowatch_web.regressions import grouping, nightly
from iowatch_web.regressions.models import (ConfirmJob, Regression, StoredChangePoint,
                                            StoredComparison,
                                            StoredVerdict)
from iowatch_web.results.models import Cell, Kernel, Run
from iowatch_web.store.sides import (boot_history, judged_runs, judging_studies, runs_side,
                                     stored_runs)
from iowatch_web.store.values import sample_values

log = logging.getLogger(__name__)

# Kernels of a history the change-point search reads: two months of nightlies.
# A step older than that was raised when it was new.
CHANGE_POINT_WINDOW = 60


@dataclass(frozen=True)
class Pairing:
    reason: str
    base: Kernel
    candidate: Kernel


def verdicts_for_run(run: Run) -> list[StoredComparison]:
    """Compare a newly stored run and look for change points; returns the
    comparisons computed (none for a published or unmeasured run)."""
    # A run no side may pool (SideQuery.admits) is compared with nothing: a
    # failed build or boot, or a bisect's step (the bisect's evidence; judged
    # like a check, each bad step would open a second regression for the
    # change the bisect is already following).
    if run.published or not SideQuery.admits(run.status, (run.trigger or {}).get("kind")):
        return []
    comparisons = [compare_kernels(p, run) for p in pairings(run)]
    comparisons += change_point_alerts(run)
    return comparisons


def _measured(host_id: int, matrix: str):
    """The host's measured runs of the matrix that a side may pool, with their time `at`."""
    return judged_runs(Run.objects.filter(host_id=host_id, matrix=matrix, published=False))


def _latest_kernel(runs) -> Kernel | None:
    latest = runs.select_related("kernel").order_by("-at", "-id").first()
    return latest.kernel if latest else None


def pairings(run: Run) -> list[Pairing]:
    """What the run's kernel is compared against, and which stored comparisons
    use it as their base."""
    kernel = run.kernel
    runs = _measured(run.host_id, run.matrix)
    found: list[Pairing] = []
    if kernel.series_id is not None and kernel.patch_index is not None:
        in_series = runs.filter(kernel__series_id=kernel.series_id)
        k = kernel.patch_index
        if k > 0:
            if parent := _latest_kernel(in_series.filter(kernel__patch_index=k - 1)):
                found.append(Pairing("parent", parent, kernel))
            if k > 1 and (base := _latest_kernel(in_series.filter(kernel__patch_index=0))):
                found.append(Pairing("series-base", base, kernel))
        # Patches measured before this one: its child, and for the base every patch past 1.
        children = Kernel.objects.filter(
            pk__in=in_series.values("kernel"), series_id=kernel.series_id)
        for child in children.filter(patch_index=k + 1):
            found.append(Pairing("parent", kernel, child))
        if k == 0:
            for child in children.filter(patch_index__gt=1):
                found.append(Pairing("series-base", kernel, child))
    else:
        # A kernel measured here before (more runs asked of an unsure cell, a
        # confirmation's reruns) follows what preceded its first run, not the
        # kernel that ran last: a rerun of a base is not a new kernel after it.
        first = runs.filter(kernel=kernel).order_by("at", "id").first()
        since, since_id = (first.at, first.id) if first else (run_time(run), run.id)
        earlier = (runs.exclude(kernel=kernel)
                   .filter(Q(at__lt=since) | Q(at=since, id__lt=since_id)))
        if previous := _latest_kernel(earlier):
            found.append(Pairing("previous-run", previous, kernel))
        for c in StoredComparison.objects.filter(reason="previous-run", host_id=run.host_id,
                                           matrix=run.matrix, base_kernel=kernel):
            found.append(Pairing("previous-run", kernel, c.candidate_kernel))
    return found


def run_time(run: Run):
    return run.started_at or run.received_at


# --- A/B of two kernels ------------------------------------------------------

def _group_samples(runs):
    """{(cell key, group, metric): [values]} of the runs' group-level samples
    (job null) of the metrics that decide their study (iowatch.judging)."""
    wanted = deciding_metrics(judging_studies())
    cells = Cell.objects.filter(run__in=runs, status="passed")
    keys = {pk: (key, slug) for pk, key, slug in cells.values_list("id", "key", "study__slug")}
    values = defaultdict(list)
    for v in sample_values(cells, metrics={m for _, _, m in wanted}):
        key, slug = keys[v.cell_id]
        if (slug, v.group, v.metric) in wanted:
            values[key, v.group, v.metric].append(v.value)
    return values


def compare_kernels(pairing: Pairing, trigger: Run) -> StoredComparison:
    """Compute (or recompute, replacing its verdicts) one comparison."""
    base_runs, candidate_runs = (
        stored_runs(SideQuery(f"kernel:{kernel.pk}", role, host=trigger.host_id,
                              matrix=trigger.matrix))
        for kernel, role in ((pairing.base, "base"), (pairing.candidate, "candidate")))
    judged = compare_sides(runs_side(str(pairing.base), base_runs),
                           runs_side(str(pairing.candidate), candidate_runs),
                           studies=judging_studies(), fdr=FDR,
                           history=boot_history(trigger.host_id))
    cells = {}
    for c in (Cell.objects.filter(run__in=candidate_runs).select_related("study", "device")
              .order_by("-run_id")):
        cells[c.study.slug, c.device.name if c.device else "", c.filesystem] = c

    with transaction.atomic():
        comparison, _ = StoredComparison.objects.update_or_create(
            reason=pairing.reason, host_id=trigger.host_id, matrix=trigger.matrix,
            base_kernel=pairing.base, candidate_kernel=pairing.candidate,
            defaults={"trigger_run": trigger, "fdr": FDR, **judged.decision,
                      "platform_words": platform_words(judged),
                      "recorded_boots": judged.recorded_boots or ""})
        # Serialise recomputations of one comparison (two runs arriving together).
        StoredComparison.objects.select_for_update().filter(pk=comparison.pk).get()
        comparison.base_runs.set([r.pk for r in base_runs])
        comparison.candidate_runs.set([r.pk for r in candidate_runs])
        comparison.cells.all().delete()
        StoredVerdict.objects.bulk_create(
            _cell_verdict(comparison, cells[v.key.study, v.key.device, v.key.filesystem], v)
            for v in judged.verdicts)
        _update_regression(comparison)
    return comparison


def _cell_verdict(comparison: StoredComparison, cell: Cell, v) -> StoredVerdict:
    return StoredVerdict(
        comparison=comparison, cell_key=cell.key, study=cell.study, host_id=comparison.host_id,
        device_class=v.key.device_class, device=cell.device, filesystem=cell.filesystem,
        group=v.key.group, metric_id=v.key.metric, direction=v.direction,
        min_effect_pct=v.min_effect_pct,
        base_n=v.base.n, base_mean=v.base.mean, base_median=v.base.median, base_sd=v.base.sd,
        candidate_n=v.candidate.n, candidate_mean=v.candidate.mean,
        candidate_median=v.candidate.median, candidate_sd=v.candidate.sd,
        change_pct=v.change_pct, ci_low=v.ci_low, ci_high=v.ci_high, p_value=v.p_value,
        p_adjusted=v.p_adjusted, p_worse=v.p_worse, p_worse_family=v.p_worse_family,
        level=v.level, hidden_pct=v.hidden_pct,
        budget_spent=v.budget_spent, mde_pct=v.mde_pct, cliffs_delta=v.cliffs_delta,
        outcome=v.outcome, needs_runs=v.needs_runs, cap=v.cap, size_only=v.size_only, words=v.words,
        base_centre=v.centre[0] if v.centre else None,
        candidate_centre=v.centre[1] if v.centre else None, centre_statistic=v.statistic or "")


def _regressed(comparison: StoredComparison) -> bool:
    """What judging decided: a regressed deciding cell it stands behind, or a
    change point it confirmed."""
    return comparison.regressed or comparison.change_points.exists()


def _update_regression(comparison: StoredComparison) -> None:
    """One Regression per change while the comparison regressed (its stored
    `regressed`, Comparison.regressions of iowatch.judging: none while a
    canary drifted) or holds a change point: a patch's
    comparison with the series base is shown inside the one of its parent
    comparison (regressions/grouping.py). One that no longer has regressed
    cells goes only if nobody has triaged it yet."""
    if _regressed(comparison):
        if (joined := grouping.home(comparison)) is not None:
            grouping.join(joined, comparison)
            return
        regression, created = Regression.objects.get_or_create(comparison=comparison)
        if created:
            nightly.opened(regression)  # its kind; a nightly one queues its bisect
        else:
            regression.save(update_fields=["updated"])
        grouping.gather(regression, _regressed)
    else:
        shown = grouping.leave(comparison)
        Regression.objects.filter(comparison=comparison, state="new",
                                  events__isnull=True).delete()
        if not Regression.objects.filter(comparison=comparison).exists():
            for other in shown:  # the views it held stand alone again
                _update_regression(other)


# --- change points in a series key's history -----------------------------------

def change_point_alerts(run: Run) -> list[StoredComparison]:
    """Look for a new step in the history (one value per kernel: the median of
    its samples, kernels in order of their first run) of every series key the
    run touched, and raise a change-point Regression per kernel a step starts at.

    The history is the host's runs of the same matrix up to this run, of kernels
    outside any series: a series is compared patch by patch instead."""
    if run.kernel.series_id is not None:
        return []
    history, first_runs = _history_window(run)
    order = list(first_runs)  # kernels by their first run
    touched = _group_samples([run.pk])
    cells = Cell.objects.filter(run__in=history, status="passed",
                                key__in={k for k, _, _ in touched})
    kernel_of = {pk: (key, kernel_id) for pk, key, kernel_id
                 in cells.values_list("id", "key", "run__kernel_id")}
    series = defaultdict(lambda: defaultdict(list))
    # Raw samples and retention's summaries alike (store/values.py).
    for v in sample_values(cells, metrics={m for _, _, m in touched}):
        key, kernel_id = kernel_of[v.cell_id]
        if (key, v.group, v.metric) in touched:
            series[key, v.group, v.metric][kernel_id].append(v.value)

    cells = {c.key: c for c in run.cells.select_related("study", "device")}
    # Every series the run touched is one family; each candidate is confirmed
    # by the policy's A/B of its segments' repetitions (iowatch.judging).
    histories, kernels_of = [], {}
    for (key, group, metric), per_kernel in sorted(series.items()):
        cell = cells[key]
        name = CellKey(cell.study.slug, run.host.name, cell.device.device_class if cell.device else "",
                       cell.device.name if cell.device else "", cell.filesystem, group, metric)
        kernels_of[name] = (key, [k for k in order if k in per_kernel])
        kernels = kernels_of[name][1]
        histories.append(history_of(name, [per_kernel[k] for k in kernels], judging_studies()))
    history_runs = list(history.select_related("host", "kernel__series").order_by("at", "id"))

    def sides(name: CellKey, before: tuple[int, ...], after: tuple[int, ...]):
        kernels = kernels_of[name][1]
        side = [{kernels[i] for i in before}, {kernels[i] for i in after}]
        return tuple(runs_side(label, [r for r in history_runs if r.kernel_id in ids])
                     for label, ids in zip(("before the step", "after the step"), side))

    confirmed = confirm_change_points(histories, sides, studies=judging_studies(), fdr=FDR)
    # Which of them open a regression is judging's; only the stored change points are read here.
    steps = opening_steps(confirmed, {name: kernels for name, (_, kernels) in kernels_of.items()},
                          _stored_steps(run, kernels_of))
    steps = {step: [((kernels_of[name][0], name.group, name.metric), cp) for name, cp in found]
             for step, found in steps.items()}

    return [_step_comparison(run, before, after, found, cells, history, first_runs)
            for (before, after), found in steps.items()]


def _stored_steps(run: Run, kernels_of: dict) -> dict[CellKey, set[int]]:
    """Per series (its CellKey: kernels_of's keys), the kernels the host has a
    change point of it stored at."""
    name_of = {(key, name.group, name.metric): name for name, (key, _) in kernels_of.items()}
    stored = defaultdict(set)
    for key, group, metric, kernel_id in StoredChangePoint.objects.filter(
            host_id=run.host_id, cell_key__in={key for key, _ in kernels_of.values()}).values_list(
            "cell_key", "group", "metric_id", "kernel_id"):
        if (name := name_of.get((key, group, metric))) is not None:
            stored[name].add(kernel_id)
    return stored


def _history_window(run: Run):
    """The runs a change point of `run` is looked for in (the host's runs of its
    matrix up to it, of kernels outside any series), bounded to the latest
    CHANGE_POINT_WINDOW kernels by their first run (index run_host_matrix_time)
    so the work per run stays flat as the history grows; and each kernel's
    first run, in order."""
    at = run_time(run)
    history = (_measured(run.host_id, run.matrix).filter(kernel__series__isnull=True)
               .filter(Q(at__lt=at) | Q(at=at, id__lte=run.id)))
    window = [k for k, _ in history.values("kernel_id").annotate(first=Min("at"))
              .order_by("-first", "-kernel_id").values_list("kernel_id", "first")
              [:CHANGE_POINT_WINDOW]]
    history = history.filter(kernel_id__in=window)
    first_runs = {}
    for r in history.order_by("at", "id").only("id", "kernel_id", "started_at", "received_at"):
        first_runs.setdefault(r.kernel_id, r)
    return history, first_runs


def _step_comparison(run: Run, before: int, after: int, found: list, cells: dict, history,
                     first_runs: dict) -> StoredComparison:
    """The regression of one step (kernel `before` to `after`) and its change
    points `found` ([(series key, change point)]), stored."""
    with transaction.atomic():
        # One change, one regression: a step a nightly's night-over-night
        # regression already names gets its change points there.
        comparison = (nightly.same_change(run.host_id, run.matrix, after, list(first_runs))
                      or _change_point_comparison(run, before, after, history))
        for (key, group, metric), cp in found:
            cell = cells[key]
            StoredChangePoint.objects.get_or_create(
                host_id=run.host_id, cell_key=key, group=group, metric_id=metric,
                kernel_id=after,
                defaults={"comparison": comparison, "study": cell.study, "device": cell.device,
                          "filesystem": cell.filesystem, "run": first_runs[after],
                          "before_mean": cp.point.before_mean, "after_mean": cp.point.after_mean,
                          "change_pct": cp.point.change_pct, "p_value": cp.verdict.p_value,
                          "min_effect_pct": cp.verdict.min_effect_pct})
        _update_regression(comparison)
    if comparison.reason == "change-point":
        # The A/B of the kernels either side, by the one policy (iowatch.judging):
        # the numbers, CI and repetitions a report of the step gives.
        comparison = compare_kernels(Pairing("change-point", comparison.base_kernel,
                                             comparison.candidate_kernel), run)
    return comparison


def _change_point_comparison(run: Run, before: int, after: int, history) -> StoredComparison:
    comparison, _ = StoredComparison.objects.update_or_create(
        reason="change-point", host_id=run.host_id, matrix=run.matrix,
        base_kernel_id=before, candidate_kernel_id=after,
        defaults={"trigger_run": run, "fdr": FDR})
    comparison.base_runs.set(history.filter(kernel_id=before))
    comparison.candidate_runs.set(history.filter(kernel_id=after))
    return comparison


def rejudge(job: ConfirmJob) -> None:
    """An add-runs job handed back: its runs are ordinary runs of the comparison's
    kernels (the verdict worker pools them as they arrive); the comparison is
    judged again here at once, so the job says what its cell is with them."""
    c = job.comparison
    last = Run.objects.filter(run_id__in=job.bad_runs).order_by("-received_at", "-id").first()
    again = compare_kernels(Pairing(c.reason, c.base_kernel, c.candidate_kernel), last)
    wanted = {(x["study"], x["device_class"], x["filesystem"], x["group"],
               x["metric"]) for x in job.cells}
    job.verdicts = [
        {"study": v.study.slug, "device_class": v.device_class, "filesystem": v.filesystem,
         "group": v.group, "metric": v.metric_id, "outcome": v.outcome, "change_pct": v.change_pct,
         "ci_low": v.ci_low, "ci_high": v.ci_high, "base_n": v.base_n, "candidate_n": v.candidate_n,
         "needs_runs": v.needs_runs}
        for v in again.cells.select_related("study")
        if (v.study.slug, v.device_class, v.filesystem, v.group, v.metric_id) in wanted]
