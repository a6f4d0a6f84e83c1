"""What the dashboard's pages and chart endpoints read from the store.

Every function pages and filters in the database and returns plain values
(values()/values_list() rows or small dicts), so a page and its JSON endpoint
read the same thing. Verdicts are read as stored by the regressions app; only
compare() judges two sides on the fly (two arbitrary kernels have no stored
comparison), with the same code the CLI's `iowatch compare` uses.
"""
from __future__ import annotations

import functools
import hashlib
import re
import statistics
from collections import defaultdict

from django.core.cache import cache
from django.db.models import Count, Exists, Max, Min, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from iowatch import comparison as compare_lib
from iowatch.judging import compare_sides
from iowatch.metrics import METRICS
from iowatch.report import render_text
from iowatch.stats import confounders as find_confounders
from iowatch.studies import load_studies
from regressions.models import STATES, CellVerdict, ChangePoint, Regression
from results.sides import judging_studies, manifest, runs_side, spec_query
from results.models import Cell, Host, Kernel, Patch, PatchSeries, Run, Sample, Study

OPEN_STATES = ("new", "acknowledged", "bisecting")
# Outcomes from the most to the least telling: a chip shows the first present.
OUTCOME_ORDER = ("regression", "suspected", "inconclusive", "improvement", "no-change")
# What a chip says for an outcome (iowatch.stats.verdict): unsure cells ask for a rerun.
OUTCOME_LABELS = {"regression": "regression", "suspected": "suspected regression",
                  "inconclusive": "unsure, rerun", "improvement": "improvement",
                  "no-change": "no change", "diagnostic": "diagnostic"}
# A side of a compare pools at most this many runs (the newest).
MAX_SIDE_RUNS = 50
MAX_HISTORY_KERNELS = 500


def kernel_label(release: str, commit: str | None, patch_index: int | None = None) -> str:
    label = release
    if commit:
        label += f" {commit[:12]}"
    if patch_index is not None:
        label += f" [{patch_index}]"
    return label


def studies() -> dict:
    return judging_studies()


# --- overview ---------------------------------------------------------------------

RUN_FIELDS = ("run_id", "status", "published", "label", "matrix", "received_at", "started_at",
              "host__name", "kernel_id", "kernel__release", "kernel__git_commit",
              "kernel__patch_index", "kernel__series__name")


def run_rows(runs) -> list[dict]:
    rows = list(runs.values(*RUN_FIELDS))
    for r in rows:
        r["kernel"] = kernel_label(r["kernel__release"], r["kernel__git_commit"],
                                   r["kernel__patch_index"])
    return rows


def latest_runs(limit: int = 20) -> list[dict]:
    return run_rows(Run.objects.order_by("-received_at", "-id")[:limit])


def regressions_by_state() -> dict[str, int]:
    counts = dict(Regression.objects.values_list("state").annotate(n=Count("id")).order_by())
    return {state: counts.get(state, 0) for state in STATES}


def regression_rows(states=None, limit: int = 50, offset: int = 0) -> list[dict]:
    regressions = Regression.objects.all()
    if states:
        regressions = regressions.filter(state__in=states)
    rows = list(regressions.order_by("-created", "-id").values(
        "id", "state", "created", "notes", "comparison__reason", "comparison__host__name",
        "comparison__base_kernel__release", "comparison__base_kernel__git_commit",
        "comparison__base_kernel__patch_index", "comparison__candidate_kernel__release",
        "comparison__candidate_kernel__git_commit", "comparison__candidate_kernel__patch_index",
        "comparison_id")[offset:offset + limit])
    for r in rows:
        r["state_label"] = STATES[r["state"]]
        r["base"] = kernel_label(r["comparison__base_kernel__release"],
                                 r["comparison__base_kernel__git_commit"],
                                 r["comparison__base_kernel__patch_index"])
        r["candidate"] = kernel_label(r["comparison__candidate_kernel__release"],
                                      r["comparison__candidate_kernel__git_commit"],
                                      r["comparison__candidate_kernel__patch_index"])
    return rows


def hosts_with_last_run() -> list[dict]:
    last = Run.objects.filter(host=OuterRef("pk")).order_by("-received_at", "-id")
    rows = list(Host.objects.exclude(kind="published").annotate(
        last_run=Subquery(last.values("run_id")[:1]),
        last_status=Subquery(last.values("status")[:1]),
        last_at=Subquery(last.values("received_at")[:1]),
        last_kernel=Subquery(last.values("kernel__release")[:1]),
    ).values("name", "kind", "last_run", "last_status", "last_at", "last_kernel"))
    return rows


def suspected_rows(limit: int = 20) -> list[dict]:
    """Cells judged "suspected" or "unsure" in the newest comparisons: a drop
    seen with too few runs to confirm, and what rerunning would take."""
    rows = list(CellVerdict.objects.filter(outcome__in=("suspected", "inconclusive"))
                .order_by("-comparison__computed_at", "-id")
                .values("outcome", "words", "change_pct", "ci_low", "ci_high", "base_n",
                        "candidate_n", "needs_runs", "group", "metric_id", "device_class",
                        "filesystem", "study__slug", "device__model", "comparison__host__name",
                        "comparison__base_kernel_id", "comparison__candidate_kernel_id",
                        "comparison__candidate_kernel__release",
                        "comparison__candidate_kernel__git_commit",
                        "comparison__candidate_kernel__patch_index",
                        "comparison__candidate_kernel__series__name")[:limit * 4])
    rows.sort(key=lambda r: (r["outcome"] != "suspected",))  # suspected first, newest first
    for r in rows:
        r["label"] = OUTCOME_LABELS[r["outcome"]]
        r["kernel"] = kernel_label(r["comparison__candidate_kernel__release"],
                                   r["comparison__candidate_kernel__git_commit"],
                                   r["comparison__candidate_kernel__patch_index"])
    return rows[:limit]


def overview() -> dict:
    return {"runs": latest_runs(), "regressions_by_state": regressions_by_state(),
            "open_regressions": regression_rows(OPEN_STATES, limit=20),
            "suspected": suspected_rows(), "hosts": hosts_with_last_run()}


# --- series check -------------------------------------------------------------------

def series_list() -> list[dict]:
    return list(PatchSeries.objects.annotate(n_kernels=Count("kernels", distinct=True))
                .values("id", "name", "base", "patch_count", "n_kernels"))


def series_check(series: PatchSeries) -> dict:
    """One row per kernel of the series (patch 0 is the base), one chip per
    (study, device class) column: the outcome of the stored 'parent' verdicts."""
    kernels = list(Kernel.objects.filter(series=series).order_by("patch_index", "id")
                   .values("id", "release", "git_commit", "patch_index"))
    subjects = dict(Patch.objects.filter(series=series).values_list("index", "subject"))
    verdicts = (CellVerdict.objects.filter(comparison__reason="parent",
                                           comparison__candidate_kernel__series=series)
                .values_list("comparison__candidate_kernel_id", "comparison__base_kernel_id",
                             "study__slug", "device_class", "outcome", "needs_runs"))
    outcomes: dict[int, dict[tuple, set]] = defaultdict(lambda: defaultdict(set))
    needs: dict[tuple, int] = {}
    parents: dict[int, int] = {}
    columns = set()
    for kernel_id, parent_id, study, device_class, outcome, needs_runs in verdicts:
        outcomes[kernel_id][study, device_class].add(outcome)
        if needs_runs:
            key = (kernel_id, study, device_class)
            needs[key] = max(needs.get(key, 0), needs_runs)
        parents[kernel_id] = parent_id
        columns.add((study, device_class))
    columns = sorted(columns)
    rows = []
    for k in kernels:
        chips = []
        for column in columns:
            found = outcomes[k["id"]].get(column, set())
            outcome = next((o for o in OUTCOME_ORDER if o in found), None)
            label = OUTCOME_LABELS.get(outcome, outcome)
            if outcome in ("suspected", "inconclusive") and needs.get((k["id"], *column)):
                label += f" (needs about {needs[k['id'], *column]} more runs a side)"
            chips.append({"outcome": outcome, "label": label} if outcome else None)
        rows.append({**k, "subject": subjects.get(k["patch_index"], "") if k["patch_index"] else "",
                     "label": kernel_label(k["release"], k["git_commit"], k["patch_index"]),
                     "parent": parents.get(k["id"]), "chips": chips})
    return {"columns": columns, "rows": rows}


# --- compare A vs B -------------------------------------------------------------------

class SideNotFound(LookupError):
    pass


def _spec_filter(spec: str) -> Q:
    """kernel:ID (the links of the series and regression pages), or what
    `iowatch compare` takes: a run id, a kernel release, label or commit prefix."""
    if m := re.fullmatch(r"kernel:(\d+)", spec):
        return Q(kernel_id=int(m[1]))
    return spec_query(spec)


def side_runs(spec: str, role: str) -> list[Run]:
    runs = (Run.objects.filter(_spec_filter(spec)).select_related("host", "kernel__series")
            .order_by("-received_at", "-id"))
    measured = runs.filter(published=False)
    chosen = list(measured[:MAX_SIDE_RUNS]) or list(runs[:MAX_SIDE_RUNS])
    if not chosen:
        raise SideNotFound(f"{role} {spec!r}: no stored run with that id, and no kernel with that "
                           "release, label or commit (or kernel:ID)")
    return chosen


def compare(base_spec: str, candidate_spec: str) -> dict:
    """Judge two sides from their stored samples; cached by the runs on each side
    (a stored run never changes, so new runs make a new key)."""
    base_runs = side_runs(base_spec, "base")
    candidate_runs = side_runs(candidate_spec, "candidate")
    ids = ",".join(str(r.pk) for r in base_runs) + "|" + ",".join(str(r.pk) for r in candidate_runs)
    key = "dashboard-compare-" + hashlib.sha256(f"{base_spec}|{candidate_spec}|{ids}".encode()).hexdigest()
    if (found := cache.get(key)) is not None:
        return found
    base = runs_side(base_spec, base_runs)
    candidate = runs_side(candidate_spec, candidate_runs)
    # The deciding cells as every other path judges them (iowatch.judging);
    # the other metrics beside them as diagnostics, never a verdict.
    result = compare_sides(base, candidate, studies=studies())
    cells = [_cell_row(v, deciding=True) for v in result.verdicts]
    diagnostics = [_cell_row(v, deciding=False) for v in result.diagnostics]
    out = {"base": {"spec": base_spec, "title": base.title,
                    "runs": [str(r.run_id) for r in base_runs]},
           "candidate": {"spec": candidate_spec, "title": candidate.title,
                         "runs": [str(r.run_id) for r in candidate_runs]},
           "cells": cells, "diagnostics": diagnostics, "state": result.state,
           "failed": [vars(f) for f in result.failed], "report": render_text(result),
           "confounders": [{"name": c.name, "base": str(c.base), "candidate": str(c.candidate),
                            "why": c.why} for c in result.confounders]}
    cache.set(key, out, 600)
    return out


def _cell_row(v, *, deciding: bool) -> dict:
    k = v.key
    return {
        "study": k.study, "device_class": k.device_class, "device": k.device,
        "filesystem": k.filesystem, "group": k.group, "metric": k.metric,
        "unit": METRICS[k.metric].unit, "direction": METRICS[k.metric].direction,
        "deciding": deciding,
        "base": {"n": v.base.n, "mean": v.base.mean, "median": v.base.median, "sd": v.base.sd},
        "candidate": {"n": v.candidate.n, "mean": v.candidate.mean,
                      "median": v.candidate.median, "sd": v.candidate.sd},
        "change_pct": v.change_pct, "ci_low": v.ci_low, "ci_high": v.ci_high,
        "p_value": v.p_value, "p_adjusted": v.p_adjusted,
        "outcome": v.outcome if deciding else "diagnostic", "needs_runs": v.needs_runs,
        "label": OUTCOME_LABELS[v.outcome if deciding else "diagnostic"],
        "size_only": v.size_only, "words": v.words}


COMPARE_FILTERS = ("study", "device_class", "filesystem", "metric")


def filter_cells(cells: list[dict], filters: dict) -> list[dict]:
    return [c for c in cells if all(not filters.get(f) or c[f] == filters[f] for f in COMPARE_FILTERS)]


# --- history of a series key -------------------------------------------------------------

HISTORY_KEYS = ("study", "host", "device", "filesystem", "group", "metric")


def history(key: dict, limit: int = 100, offset: int = 0) -> dict:
    """Every group-level sample of one series key, by kernel (kernels in the
    order of their first run on the host, the newest `limit` after skipping
    `offset` of the newest), with the median per kernel and the stored change points."""
    cells = Q(cells__study__slug=key["study"], cells__filesystem=key.get("filesystem") or "",
              cells__status="passed")
    if key.get("device"):
        cells &= Q(cells__device__name=key["device"])
    kernels = list(Run.objects.filter(cells, host__name=key["host"], published=False)
                   .values("kernel_id").annotate(first=Min(Coalesce("started_at", "received_at")))
                   .order_by("-first", "-kernel_id")[offset:offset + limit])
    kernels.reverse()
    order = {k["kernel_id"]: i for i, k in enumerate(kernels)}
    # The cells first, then their samples through the (metric, cell) index.
    cells = Cell.objects.filter(study__slug=key["study"], filesystem=key.get("filesystem") or "",
                                status="passed", run__host__name=key["host"],
                                run__published=False, run__kernel_id__in=list(order))
    if key.get("device"):
        cells = cells.filter(device__name=key["device"])
    cell_runs = {cell_id: (run_id, kernel_id) for cell_id, run_id, kernel_id
                 in cells.values_list("id", "run__run_id", "run__kernel_id")}
    samples = Sample.objects.filter(metric_id=key["metric"], cell_id__in=list(cell_runs),
                                    group=key["group"], job__isnull=True)
    per_kernel = defaultdict(list)
    points = []
    # No ordering: Sample's default (cell, then the cell's run and key) costs two joins.
    for value, cell_id in samples.order_by().values_list("value", "cell_id"):
        run_id, kernel_id = cell_runs[cell_id]
        per_kernel[kernel_id].append(value)
        points.append({"x": order[kernel_id], "y": value, "run": str(run_id)})
    names = {k["id"]: kernel_label(k["release"], k["git_commit"], k["patch_index"])
             for k in Kernel.objects.filter(pk__in=list(order))
             .values("id", "release", "git_commit", "patch_index")}
    steps = ChangePoint.objects.filter(host__name=key["host"], study__slug=key["study"],
                                       group=key["group"], metric_id=key["metric"],
                                       filesystem=key.get("filesystem") or "",
                                       kernel_id__in=list(order))
    if key.get("device"):
        steps = steps.filter(device__name=key["device"])
    return {
        "key": key, "unit": METRICS[key["metric"]].unit if key["metric"] in METRICS else "",
        "kernels": [{"id": k["kernel_id"], "label": names.get(k["kernel_id"], "?"),
                     "median": statistics.median(per_kernel[k["kernel_id"]])
                     if per_kernel[k["kernel_id"]] else None} for k in kernels],
        "points": points,
        "change_points": [{"x": order[kernel_id], "change_pct": pct}
                          for kernel_id, pct in steps.values_list("kernel_id", "change_pct")],
        "limit": limit, "offset": offset,
    }


def history_keys_of_regression(regression: Regression) -> list[dict]:
    """The series keys a regression stands on: its regressed cells and change points."""
    keys = []
    for row in (regression.comparison.cells.filter(outcome="regression")
                .values("study__slug", "host__name", "device__name", "filesystem", "group",
                        "metric_id").distinct()):
        keys.append({"study": row["study__slug"], "host": row["host__name"],
                     "device": row["device__name"] or "", "filesystem": row["filesystem"],
                     "group": row["group"], "metric": row["metric_id"]})
    for row in (regression.comparison.change_points
                .values("study__slug", "host__name", "device__name", "filesystem", "group",
                        "metric_id").distinct()):
        key = {"study": row["study__slug"], "host": row["host__name"],
               "device": row["device__name"] or "", "filesystem": row["filesystem"],
               "group": row["group"], "metric": row["metric_id"]}
        if key not in keys:
            keys.append(key)
    return keys


# --- runs -----------------------------------------------------------------------------------

RUN_FILTERS = ("host", "status", "kernel", "study", "published")


def runs(filters: dict):
    found = Run.objects.order_by("-received_at", "-id")
    if filters.get("host"):
        found = found.filter(host__name=filters["host"])
    if filters.get("status"):
        found = found.filter(status=filters["status"])
    if filters.get("kernel"):
        found = found.filter(kernel__release=filters["kernel"])
    if filters.get("published") in ("yes", "no"):
        found = found.filter(published=filters["published"] == "yes")
    if filters.get("study"):
        found = found.filter(cells__study__slug=filters["study"]).distinct()
    return found


def previous_run(run: Run) -> Run | None:
    return (Run.objects.filter(host_id=run.host_id, matrix=run.matrix, published=False)
            .filter(Q(received_at__lt=run.received_at)
                    | Q(received_at=run.received_at, id__lt=run.id))
            .select_related("host", "kernel__series").order_by("-received_at", "-id").first())


def run_confounders(run: Run, previous: Run | None) -> list:
    if previous is None:
        return []
    return find_confounders(manifest(previous), manifest(run))


# --- published results beside measured ones -------------------------------------------------

def published_vs_measured(study: Study, kernels: int = 10) -> dict:
    """The seed's numbers per label, and the measured medians of the same
    (group, metric) per kernel (the newest `kernels` kernels measured)."""
    published = (Sample.objects.filter(cell__study=study, cell__run__published=True,
                                       job__isnull=True)
                 .values_list("group", "metric_id", "cell__run__label",
                              "cell__device__device_class", "value")
                 .order_by("cell__run__received_at", "id"))
    rows: dict[tuple, dict] = {}
    columns_published = []
    for group, metric, label, device_class, value in published:
        column = f"{label} ({device_class})" if device_class else label
        if column not in columns_published:
            columns_published.append(column)
        rows.setdefault((group, metric), {"published": {}, "measured": {}})["published"][column] = value
    # The newest kernels measured with a sample of a published (group, metric).
    pairs = Q(pk__in=[])
    for group, metric in rows:
        pairs |= Q(group=group, metric_id=metric)
    sampled = Sample.objects.filter(pairs, cell__run=OuterRef("pk"), cell__study=study,
                                    job__isnull=True)
    newest = list(Run.objects.filter(Exists(sampled), published=False)
                  .values("kernel_id").annotate(last=Max("received_at"))
                  .order_by("-last")[:kernels]) if rows else []
    kernel_ids = [k["kernel_id"] for k in reversed(newest)]
    names = {k["id"]: kernel_label(k["release"], k["git_commit"], k["patch_index"])
             for k in Kernel.objects.filter(pk__in=kernel_ids)
             .values("id", "release", "git_commit", "patch_index")}
    values = defaultdict(list)
    wanted = Q()
    for group, metric in rows:
        wanted |= Q(group=group, metric_id=metric)
    if rows and kernel_ids:
        measured = (Sample.objects.filter(wanted, cell__study=study, cell__run__published=False,
                                          cell__run__kernel_id__in=kernel_ids,
                                          cell__status="passed", job__isnull=True)
                    .values_list("group", "metric_id", "cell__run__kernel_id",
                                 "cell__device__device_class", "value").order_by())
        for group, metric, kernel_id, device_class, value in measured:
            values[group, metric, f"{names[kernel_id]} ({device_class})"].append(value)
    columns_measured = sorted({c for (_, _, c) in values},
                              key=lambda c: next(i for i, k in enumerate(kernel_ids)
                                                 if c.startswith(names[k])))
    for (group, metric, column), vs in values.items():
        rows[group, metric]["measured"][column] = statistics.median(vs)
    return {"study": study.slug,
            "published_columns": columns_published, "measured_columns": columns_measured,
            "rows": [{"group": g, "metric": m,
                      "unit": METRICS[m].unit if m in METRICS else "",
                      "published": [r["published"].get(c) for c in columns_published],
                      "measured": [r["measured"].get(c) for c in columns_measured]}
                     for (g, m), r in sorted(rows.items())]}

