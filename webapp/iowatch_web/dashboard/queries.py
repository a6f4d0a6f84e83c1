"""What the dashboard's pages and chart endpoints read from the store.

Every function pages and filters in the database and returns plain values
(values()/values_list() rows or small dicts), so a page and its JSON endpoint
read the same thing. Verdicts are read as stored by the regressions app; the
compare page alone judges two sides (two arbitrary kernels have no stored
comparison), in compare_page.py.
"""
from __future__ import annotations

import statistics
from collections import defaultdict

from django.db.models import Count, Min, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from iowatch.metrics import METRICS
from iowatch.stats import confounders as find_confounders
from iowatch.vocabulary import UNDECIDED_OUTCOMES, Outcome, rerun_words
from iowatch_web.regressions.models import STATES, StoredVerdict, StoredChangePoint, Regression
from iowatch_web.store.sides import judging_studies, manifest
from iowatch_web.results.models import Cell, Host, Kernel, Patch, PatchSeries, Run
from iowatch_web.store.values import sample_values

# A bisected regression still needs someone: the bisect named a commit, nobody
# has fixed, dismissed or won't-fixed it yet.
OPEN_STATES = ("new", "acknowledged", "bisecting", "bisected")
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
    rows = list(StoredVerdict.objects.filter(outcome__in=UNDECIDED_OUTCOMES)
                .order_by("-comparison__computed_at", "-id")
                .values("id", "outcome", "words", "change_pct", "ci_low", "ci_high", "base_n",
                        "candidate_n", "needs_runs", "cap", "budget_spent", "mde_pct",
                        "group", "metric_id",
                        "device_class", "filesystem", "study__slug", "device__model", "comparison__host__name",
                        "comparison__base_kernel_id", "comparison__candidate_kernel_id",
                        "comparison__candidate_kernel__release",
                        "comparison__candidate_kernel__git_commit",
                        "comparison__candidate_kernel__patch_index",
                        "comparison__candidate_kernel__series__name")[:limit * 4])
    rows.sort(key=lambda r: (r["outcome"] != "suspected",))  # suspected first, newest first
    for r in rows:
        r["label"] = Outcome(r["outcome"]).label  # suspected or unsure: no X to read
        r["rerun"] = None if r["budget_spent"] else rerun_words(
            r["needs_runs"], r["cap"], (r["ci_low"], r["ci_high"]))
        r["kernel"] = kernel_label(r["comparison__candidate_kernel__release"],
                                   r["comparison__candidate_kernel__git_commit"],
                                   r["comparison__candidate_kernel__patch_index"])
    return rows[:limit]


def overview() -> dict:
    return {"runs": latest_runs(), "regressions_by_state": regressions_by_state(),
            "open_regressions": regression_rows(OPEN_STATES, limit=20),
            "suspected": suspected_rows(), "hosts": hosts_with_last_run()}


# --- history of a series key -------------------------------------------------------------

HISTORY_KEYS = ("study", "host", "device", "filesystem", "group", "metric")


def history(key: dict, limit: int = 100, offset: int = 0, marks: dict | None = None) -> dict:
    """Every group-level sample of one series key, by kernel (kernels in the
    order of their first run on the host, the newest `limit` after skipping
    `offset` of the newest), with the median per kernel, one line per series
    or tracked branch the kernels belong to, the stored change points, and
    `marks` ({"good": kernel id, "bad": kernel id}: a regression's two
    kernels) at their places."""
    cells = Q(cells__study__slug=key["study"], cells__filesystem=key.get("filesystem") or "",
              cells__status="passed")
    if key.get("device"):
        cells &= Q(cells__device__name=key["device"])
    # A host's calibration boots are its record of noise, not a kernel of its history.
    kernels = list(Run.objects.filter(cells, host__name=key["host"], published=False)
                   .filter(Q(trigger__kind__isnull=True) | ~Q(trigger__kind="calibration"))
                   .values("kernel_id").annotate(first=Min(Coalesce("started_at", "received_at")))
                   .order_by("-first", "-kernel_id")[offset:offset + limit])
    kernels.reverse()
    order = {k["kernel_id"]: i for i, k in enumerate(kernels)}
    # The cells first, then their samples through the (metric, cell) index.
    cells = Cell.objects.filter(study__slug=key["study"], filesystem=key.get("filesystem") or "",
                                status="passed", run__host__name=key["host"],
                                run__published=False, run__kernel_id__in=list(order))
    cells = cells.filter(Q(run__trigger__kind__isnull=True) | ~Q(run__trigger__kind="calibration"))
    if key.get("device"):
        cells = cells.filter(device__name=key["device"])
    cell_runs = {cell_id: (run_id, kernel_id) for cell_id, run_id, kernel_id
                 in cells.values_list("id", "run__run_id", "run__kernel_id")}
    per_kernel = defaultdict(list)
    points = []
    # Raw samples, or retention's summaries of the older runs (store/values.py).
    for v in sample_values(list(cell_runs), metrics=[key["metric"]], group=key["group"]):
        run_id, kernel_id = cell_runs[v.cell_id]
        per_kernel[kernel_id].append(v.value)
        points.append({"x": order[kernel_id], "y": v.value, "run": str(run_id)})
    names, parts, subjects = {}, {}, {}
    found = list(Kernel.objects.filter(pk__in=list(order))
                 .values("id", "release", "git_commit", "patch_index", "series_id"))
    for k in found:
        names[k["id"]] = kernel_label(k["release"], k["git_commit"], k["patch_index"])
        # For the chart's axis, which names the kernels as shortly as they differ.
        parts[k["id"]] = {"release": k["release"], "commit": (k["git_commit"] or "")[:12],
                          "patch_index": k["patch_index"]}
    # The patch subjects of the kernels that are a series' patches, in one query.
    patched = {(k["series_id"], k["patch_index"]): k["id"] for k in found
               if k["series_id"] and k["patch_index"]}
    if patched:
        wanted = Q(pk__in=[])
        for series_id, index in patched:
            wanted |= Q(series_id=series_id, index=index)
        for series_id, index, subject in Patch.objects.filter(wanted).values_list(
                "series_id", "index", "subject"):
            subjects[patched[series_id, index]] = subject
    steps = StoredChangePoint.objects.filter(host__name=key["host"], study__slug=key["study"],
                                       group=key["group"], metric_id=key["metric"],
                                       filesystem=key.get("filesystem") or "",
                                       kernel_id__in=list(order))
    if key.get("device"):
        steps = steps.filter(device__name=key["device"])
    return {
        "key": key, "unit": METRICS[key["metric"]].unit if key["metric"] in METRICS else "",
        "kernels": [{"id": k["kernel_id"], "label": names.get(k["kernel_id"], "?"),
                     **parts.get(k["kernel_id"], {}),
                     "subject": subjects.get(k["kernel_id"], ""),
                     "median": statistics.median(per_kernel[k["kernel_id"]])
                     if per_kernel[k["kernel_id"]] else None} for k in kernels],
        "points": points,
        "change_points": [{"x": order[kernel_id], "change_pct": pct, "kernel": names.get(kernel_id, "?"),
                           "before_mean": before, "after_mean": after}
                          for kernel_id, pct, before, after in steps.values_list(
                              "kernel_id", "change_pct", "before_mean", "after_mean")],
        "lines": history_lines(key["host"], found, order, per_kernel),
        "marks": [{"x": order[kernel_id], "role": role, "kernel": names.get(kernel_id, "?")}
                  for role, kernel_id in (marks or {}).items() if kernel_id in order],
        "limit": limit, "offset": offset,
    }


def history_lines(host: str, kernels: list[dict], order: dict, per_kernel: dict) -> list[dict]:
    """The kernels of a history grouped as a reader follows them: a series'
    patches (each check of it, on its own base, is its own line), a tracked
    branch's nightlies, and the other kernels; each line the medians of its
    kernels in order. One line across them all drew a sawtooth (issue 44)."""
    series = {s["id"]: s for s in PatchSeries.objects.filter(
        pk__in={k["series_id"] for k in kernels} - {None}).values("id", "name", "base")}
    branches = dict(Run.objects.filter(host__name=host, kernel_id__in=list(order), trigger__kind="nightly")
                    .values_list("kernel_id", "trigger__branch"))
    lines: dict[tuple, dict] = {}
    for k in sorted(kernels, key=lambda k: order[k["id"]]):
        if k["series_id"] in series:
            s = series[k["series_id"]]
            line = ("series", s["id"], f"{s['name']} on {(s['base'] or '?')[:12]}")
        elif branches.get(k["id"]):
            line = ("branch", branches[k["id"]], f"nightly {branches[k['id']]}")
        else:
            line = ("other", None, "other kernels")
        values = per_kernel.get(k["id"])
        entry = lines.setdefault(line, {"kind": line[0], "name": line[2], "points": []})
        entry["points"].append({"x": order[k["id"]],
                                "y": statistics.median(values) if values else None})
    return list(lines.values())


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

