"""What a maintainer reads first, taken from what the verdict worker stored
(regressions.models): each comparison's state, failed cells and the state of
each study and device class as iowatch.judging decided them
(StoredComparison.state, .failed_cells, .column_states), and each deciding
cell's outcome (StoredVerdict). No state is worked out here: this module picks
the cell to show beside a stored state, orders by severity and writes the words.

- lines(): the open regressions and the suspected comparisons, one line each
  that can be pasted into a reply ("<subject> (patch 2/2 of <series>) —
  <study>, <class> (<model>): <group> <metric> -33.1% [-36.0%, -30.1%] 5 vs 5
  runs"), worst first;
- checks(), nightlies(), hosts(): the newest series checks, nightly runs and
  each host's latest run, with the stored state in one word and the cell
  that decided it;
- series_rows(): the series page's chips; regression_list() and
  regression_cells(): the regressions page and one regression's cells.

Severity is a change in the worse direction counted in the study's minimum
effects (2.0: twice the smallest change that counts); it orders every list here.
"""
from __future__ import annotations

from collections import defaultdict

from django.core.paginator import Paginator
from django.db.models import Case, Exists, F, FloatField, Max, OuterRef, Subquery, Value, When
from django.db.models.functions import Coalesce, NullIf
from django.urls import reverse
from django.utils.timezone import localtime

from iowatch_web.dashboard import freshness
from iowatch_web.dashboard.queries import OPEN_STATES, kernel_label, regressions_by_state, suspected_rows
from iowatch import figures
from iowatch.vocabulary import PATCH_STATES, Outcome, outcome_label
from iowatch.vocabulary.outcomes import UNDECIDED_OUTCOMES, UNDECIDED_STATES
from iowatch.judging.sides import NOT_MEASURED
from iowatch.judging.worst import worst_order
from iowatch.metrics import HIGHER, LOWER, METRICS
from iowatch.vocabulary.wording import rerun_words
from iowatch_web.regressions.models import REASONS, STATES, StoredVerdict, StoredChangePoint, StoredComparison, Regression
from iowatch_web.regressions.nightly import NIGHTLY
from iowatch_web.results.models import Host, Patch, PatchSeries, Run

# Of two comparisons of one kernel on one host, the line keeps the first of these.
REASON_RANK = {"parent": 0, "previous-run": 1, "change-point": 2, "series-base": 3}
# Where a run's verdict work stands when it is not done (Run.verdict_state).
WORK_LABELS = {"pending": "verdict pending", "running": "verdict running",
               "failed": "verdict work failed"}
def short_metric(group: str, metric: str) -> str:
    """"writer bw" for write.bw_kib_s of the group writer: the unit goes, and
    the direction too when the group's name already says it."""
    unit_free = metric
    for suffix in ("_kib_s", "_kib", "_ms", "_us", "_ns", "_s"):
        if unit_free.endswith(suffix):
            unit_free = unit_free[:-len(suffix)]
            break
    direction, _, rest = unit_free.partition(".")
    if rest and group.startswith(direction):
        unit_free = rest
    return f"{group} {unit_free}"


# --- severity, in the database and on rows -----------------------------------------------

def severity_of(change: str, direction: str, min_effect: str):
    """The severity of a row whose change, direction and minimum effect are these
    fields (null for an information-only metric): iowatch.judging.worst.severity
    as a query, so that many regressions are ordered in the database."""
    worse = Case(When(**{direction: HIGHER}, then=-F(change)),
                 When(**{direction: LOWER}, then=F(change)), output_field=FloatField())
    return Coalesce(worse / NullIf(F(min_effect), Value(0.0)), worse)


def cell_severity():
    return severity_of("change_pct", "direction", "min_effect_pct")


def point_severity():
    return severity_of("change_pct", "metric__direction", "min_effect_pct")


def regression_severity():
    """A regression's severity: its worst regressed cell, else its worst change point."""
    def worst(rows, severity):
        return Subquery(rows.annotate(s=severity).order_by(F("s").desc(nulls_last=True))
                        .values("s")[:1], output_field=FloatField())
    return Coalesce(
        worst(StoredVerdict.objects.filter(comparison=OuterRef("comparison"), outcome="regression"),
              cell_severity()),
        worst(StoredChangePoint.objects.filter(comparison=OuterRef("comparison")), point_severity()))


def _worst(cell: dict) -> tuple:
    """The cell's place in judging's worst-first order (iowatch.judging.worst)."""
    return worst_order(cell["outcome"], cell["severity"])


def _rank(cell: dict) -> float:
    return cell["severity"] if cell["severity"] is not None else float("-inf")


# --- the stored verdicts as rows -----------------------------------------------------------

CELL_FIELDS = ("id", "comparison_id", "cell_key", "outcome", "study__slug", "device_class",
               "device__name", "device__model", "filesystem", "group", "metric_id", "base_n",
               "base_mean", "candidate_n", "candidate_mean", "change_pct", "ci_low", "ci_high",
               "p_adjusted", "needs_runs", "words", "severity", "direction", "min_effect_pct",
               "mde_pct", "cap", "budget_spent", "base_centre", "candidate_centre",
               "centre_statistic", "base_median", "candidate_median")
POINT_FIELDS = ("id", "comparison_id", "cell_key", "study__slug", "device__device_class",
                "device__name", "device__model", "filesystem", "group", "metric_id",
                "before_mean", "after_mean", "change_pct", "p_value", "severity",
                "run__run_id", "kernel__release", "kernel__git_commit", "kernel__patch_index")


def _cell(row: dict) -> dict:
    """A StoredVerdict or StoredChangePoint row in one shape (a change point is a
    regression with the means of the segments before and after it)."""
    point = "before_mean" in row
    metric = row["metric_id"]
    return _words({**row, "point": point, "ci_low": row.get("ci_low"), "ci_high": row.get("ci_high"), "study": row["study__slug"],
            "device_class": row["device__device_class"] if point else row["device_class"],
            "device": row["device__name"] or "", "model": row["device__model"] or "",
            "metric": metric, "unit": METRICS[metric].unit if metric in METRICS else "",
            "outcome": "regression" if point else row["outcome"],
            # One "before" number a cell everywhere: the two the change is computed
            # from (the verdict's centre), the means of one stored before it.
            **({"base_mean": row["before_mean"], "candidate_mean": row["after_mean"],
                "statistic": None} if point else _centre(row)),
            "short": short_metric(row["group"], metric),
            # The policy's label, read off the stored CI ("no change within X%", "slower
            # by less than X%, not confirmed"), and the cell's minimum detectable effect.
            "label": "regression" if point else outcome_label(
                row["outcome"], (row.get("ci_low"), row.get("ci_high")), row["direction"],
                row["min_effect_pct"]),
            "mde_pct": None if point else row.get("mde_pct")})


def _centre(row: dict) -> dict:
    """The cell's two numbers; of a verdict stored before the centre was, its
    medians, as the mail (iowatch.mailreport._before_after) shows them."""
    if row["base_centre"] is None or row["candidate_centre"] is None:
        return {"base_mean": row["base_median"], "candidate_mean": row["candidate_median"],
                "statistic": "median"}
    return {"base_mean": row["base_centre"], "candidate_mean": row["candidate_centre"],
            "statistic": row["centre_statistic"] or "mean"}


def _words(cell: dict) -> dict:
    """The change with its 95% CI and the means with their unit, as the pages print them."""
    ci = figures.ci(cell["ci_low"], cell["ci_high"], missing="")
    change = figures.change(cell["change_pct"])
    (base, candidate), unit = figures.amount((cell["base_mean"], cell["candidate_mean"]), cell["unit"])
    means = f"{base} → {candidate} {unit}"
    if cell["statistic"]:  # a change point's segments say theirs in their own words
        means += f" ({figures.statistic(cell['statistic'], 2)})"
    return {**cell, "change_pct_text": change, "ci_text": ci,
            "change_text": f"{change} {ci}".strip(), "means_text": means.strip(),
            "runs_text": "step" if cell["point"] else f"{cell['base_n']} vs {cell['candidate_n']}"}


def cells_of(comparison_ids, outcomes=None) -> dict[int, list[dict]]:
    """The stored deciding cells and change points of these comparisons, worst first."""
    found = defaultdict(list)
    verdicts = StoredVerdict.objects.filter(comparison_id__in=list(comparison_ids))
    if outcomes:
        verdicts = verdicts.filter(outcome__in=outcomes)
    for row in verdicts.annotate(severity=cell_severity()).values(*CELL_FIELDS):
        found[row["comparison_id"]].append(_cell(row))
    if not outcomes or "regression" in outcomes:
        for row in (StoredChangePoint.objects.filter(comparison_id__in=list(comparison_ids))
                    .annotate(severity=point_severity()).values(*POINT_FIELDS)):
            found[row["comparison_id"]].append(_cell(row))
    for cells in found.values():
        cells.sort(key=_worst)
    return found


def stated(state: str, cells: list[dict], failed: list[dict], platform_drifted: bool) -> dict:
    """A stored state (what iowatch.judging decided) with what the pages show
    beside it: its label, the cell that decided it (the worst of that outcome,
    the best improvement), the first failed cell of a failed one, and the most
    runs an undecided cell asks for."""
    of_state = [c for c in cells if Outcome(c["outcome"]).state == state]
    # Of no cell of its outcome (a drifted platform's "unsure"): its worst cell.
    # The best improvement; else the worst cell by judging's order.
    cell = min(of_state or cells, key=_rank if state == "improvement" else _worst, default=None)
    undecided = [c for c in cells if c["outcome"] in UNDECIDED_OUTCOMES]
    needs = max((c["needs_runs"] or 0 for c in undecided), default=0)
    # Else the undecided cell the cap cannot decide (wording.rerun_words), the widest first.
    beyond = max((c for c in undecided if c.get("cap") and not c.get("budget_spent")
                  and c["ci_low"] is not None), default=None,
                 key=lambda c: c["ci_high"] - c["ci_low"])
    rerun = rerun_words(needs or None, beyond and beyond["cap"],
                        (beyond["ci_low"], beyond["ci_high"]) if beyond else (None, None))
    return {"state": state, "label": Outcome(state).short, "cell": cell,
            "failed": failed[0] if state == Outcome.FAILED.state and failed else None,
            "needs_runs": needs or None, "rerun": rerun, "platform_drifted": platform_drifted}


def worst_state(states: list[dict]) -> dict | None:
    """The worst of several states; of two alike, the one whose cell is worse."""
    return min(states, default=None, key=lambda s: (
        PATCH_STATES.index(s["state"]), -_rank(s["cell"]) if s["cell"] else float("inf")))


DECISION_FIELDS = ("id", "state", "failed_cells", "column_states", "platform_drifted")


def decisions(comparison_ids) -> dict[int, dict]:
    """The stored decisions of these comparisons (regressions.models.StoredComparison)."""
    return {row["id"]: row for row in StoredComparison.objects.filter(pk__in=list(comparison_ids))
            .values(*DECISION_FIELDS)}


def comparison_states(comparison_ids) -> dict[int, dict]:
    ids = list(comparison_ids)
    cells = cells_of(ids)
    return {cid: stated(d["state"], cells.get(cid, []), d["failed_cells"], d["platform_drifted"])
            for cid, d in decisions(ids).items()}


# --- who, where, what: the words of a line -------------------------------------------------

COMPARISON_FIELDS = ("id", "reason", "host__name", "matrix", "computed_at", "base_kernel_id",
                     "candidate_kernel_id", "candidate_kernel__release",
                     "candidate_kernel__git_commit", "candidate_kernel__patch_index",
                     "candidate_kernel__series_id", "candidate_kernel__series__name",
                     "candidate_kernel__series__patch_count", "base_kernel__release",
                     "base_kernel__git_commit", "base_kernel__patch_index")


def comparisons(ids) -> dict[int, dict]:
    """The comparisons with their kernels' words: `who` names the patch (its
    subject, place and series) or the kernel, `compare_url` opens it."""
    rows = {c["id"]: c for c in StoredComparison.objects.filter(pk__in=list(ids))
            .values(*COMPARISON_FIELDS)}
    series_ids = {c["candidate_kernel__series_id"] for c in rows.values()} - {None}
    subjects, last = {}, defaultdict(int)
    for series_id, index, subject in (Patch.objects.filter(series_id__in=series_ids)
                                      .values_list("series_id", "index", "subject")):
        subjects[series_id, index] = subject
        last[series_id] = max(last[series_id], index)
    for c in rows.values():
        c.update(_who(c, subjects, last))
        c["reason_label"] = REASONS.get(c["reason"], c["reason"])
        c["compare_url"] = compare_url(c["base_kernel_id"], c["candidate_kernel_id"])
    return rows


def _who(c: dict, subjects: dict, last: dict) -> dict:
    candidate = kernel_label(c["candidate_kernel__release"], c["candidate_kernel__git_commit"],
                             c["candidate_kernel__patch_index"])
    base = kernel_label(c["base_kernel__release"], c["base_kernel__git_commit"],
                        c["base_kernel__patch_index"])
    series, index = c["candidate_kernel__series_id"], c["candidate_kernel__patch_index"]
    if series is not None and index:
        total = c["candidate_kernel__series__patch_count"] or last.get(series) or index
        subject = subjects.get((series, index)) or candidate
        name = c["candidate_kernel__series__name"]
        place = (f"patches 1–{index}/{total} of {name}, against its base"
                 if c["reason"] == "series-base" else f"patch {index}/{total} of {name}")
        return {"who": f"{subject} ({place})", "place": f"patch {index}/{total}",
                "subject": subject, "kernel": candidate, "base": base}
    after = base.removeprefix(c["candidate_kernel__release"] + " ")
    what = "a step after" if c["reason"] == "change-point" else "after"
    return {"who": f"{candidate} (on {c['host__name']}, {what} {after})", "subject": "",
            "place": candidate, "kernel": candidate, "base": base}


def where(cell: dict) -> str:
    model = cell["model"].split(", ")[0]  # the model's first words; the page shows all of it
    device = f"{cell['device_class']} ({model})" if model else cell["device_class"]
    return f"{cell['study']}, {device}" if device else cell["study"]


def what(cell: dict) -> str:
    text = f"{cell['group']} {cell['metric']} {cell['change_text']}"
    if cell["point"]:
        return text + f" (a step in the history: {cell['means_text']})"
    return text + f" {cell['base_n']} vs {cell['candidate_n']} runs"


def line(comparison: dict, cell: dict | None) -> str:
    if cell is None:
        return f"{comparison['who']}: no regressed cell remains"
    return f"{comparison['who']} — {where(cell)}: {what(cell)}"


def compare_url(base_kernel_id: int, candidate_kernel_id: int) -> str:
    # kernel:ID as the compare page's own links write it (a colon needs no escape in a query).
    return reverse("dashboard:compare") + (f"?base=kernel:{base_kernel_id}"
                                           f"&candidate=kernel:{candidate_kernel_id}")


# --- the overview -----------------------------------------------------------------------

# Suspected comparisons the overview looks at: the newest, as older ones were
# rerun or superseded by the next night's.
SUSPECTED_LOOKED_AT = 50


def lines(limit: int = 8) -> dict:
    """The open regressions, then the suspected comparisons that opened none,
    worst first; one line per kernel on a host (its other comparisons are
    named beside it: a patch against its parent and against the series base,
    a nightly against the night before and as a step in its history)."""
    entries = [{"kind": "regression", "regression": r["id"], "triage": r["state"],
                "comparison_id": r["comparison_id"], "severity": r["severity"],
                "host": r["comparison__host_id"], "kernel": r["comparison__candidate_kernel_id"],
                "reason": r["comparison__reason"]}
               for r in Regression.objects.filter(state__in=OPEN_STATES)
               .annotate(severity=regression_severity())
               .values("id", "state", "comparison_id", "severity", "comparison__host_id",
                       "comparison__candidate_kernel_id", "comparison__reason")]
    # The other comparisons of a regression's change (grouping.py) are named beside it.
    views = defaultdict(list)
    for regression_id, comparison_id, reason in Regression.views.through.objects.filter(
            regression__state__in=OPEN_STATES).values_list(
            "regression_id", "storedcomparison_id", "storedcomparison__reason"):
        views[regression_id].append({"kind": "view", "regression": None,
                                     "comparison_id": comparison_id, "reason": reason})
    for e in entries:
        e["views"] = views.get(e["regression"], [])
    suspected = (StoredComparison.objects.filter(
        Exists(StoredVerdict.objects.filter(comparison=OuterRef("pk"), outcome="suspected")))
        .exclude(Exists(Regression.objects.filter(comparison=OuterRef("pk"))))
        .exclude(shown_in__isnull=False)
        .order_by("-computed_at", "-id")[:SUSPECTED_LOOKED_AT])
    worst_suspected = cells_of([c.pk for c in suspected], ["suspected"])
    entries += [{"kind": "suspected", "regression": None, "triage": None, "comparison_id": c.pk,
                 "severity": worst_suspected[c.pk][0]["severity"], "host": c.host_id,
                 "kernel": c.candidate_kernel_id, "reason": c.reason, "views": []}
                for c in suspected]
    groups: dict[tuple, list] = defaultdict(list)
    for e in entries:
        groups[e["host"], e["kernel"]].append(e)
    heads = []
    for group in groups.values():
        group.sort(key=lambda e: (e["kind"] != "regression", REASON_RANK[e["reason"]]))
        also = group[1:] + [v for e in group for v in e["views"]]
        heads.append({**group[0], "also": also, "severity": max(
            (e["severity"] for e in group if e["kind"] == group[0]["kind"]
             and e["severity"] is not None), default=None)})
    # Judging's order: an open regression (confirmed) before a suspected comparison.
    heads.sort(key=lambda e: worst_order(e["kind"] if e["kind"] == "regression" else "suspected",
                                         e["severity"]))
    shown = heads[:limit]
    ids = {e["comparison_id"] for e in shown} | {a["comparison_id"] for e in shown for a in e["also"]}
    context = comparisons(ids)
    cells = cells_of([e["comparison_id"] for e in shown], [Outcome.REGRESSION.word,
                                                           Outcome.SUSPECTED.word])
    out = []
    for e in shown:
        c = context[e["comparison_id"]]
        of_kind = [x for x in cells.get(e["comparison_id"], []) if x["outcome"] == e["kind"]]
        cell = of_kind[0] if of_kind else None
        out.append({
            **e, "text": line(c, cell), "cell": cell, "more": max(len(of_kind) - 1, 0),
            "host_name": c["host__name"], "triage_label": STATES.get(e["triage"], ""),
            "url": (reverse("dashboard:regression", args=[e["regression"]]) if e["regression"]
                    else c["compare_url"]),
            "compare_url": c["compare_url"],
            "also": [{"regression": a["regression"], "kind": a["kind"],
                      "reason": REASONS[a["reason"]],
                      "url": (reverse("dashboard:regression", args=[a["regression"]])
                              if a["regression"] else context[a["comparison_id"]]["compare_url"])}
                     for a in e["also"]]})
    return {"lines": out, "more": len(heads) - len(shown),
            "open": sum(1 for e in entries if e["kind"] == "regression")}


def run_states(runs: list[Run]) -> dict[int, dict]:
    """The verdict of each run's kernel on its host: the worst state of the
    stored comparisons it is the candidate of (against its parent patch, the
    previous run, or as a step in the history), or where its verdict work stands."""
    found = (StoredComparison.objects.filter(candidate_kernel_id__in={r.kernel_id for r in runs},
                                       host_id__in={r.host_id for r in runs})
             .exclude(reason="series-base").values_list("id", "host_id", "matrix",
                                                        "candidate_kernel_id"))
    by_run = defaultdict(list)
    for cid, host_id, matrix, kernel_id in found:
        by_run[host_id, matrix, kernel_id].append(cid)
    states = comparison_states({cid for ids in by_run.values() for cid in ids})
    out = {}
    for r in runs:
        worst = worst_state([states[i] for i in by_run[r.host_id, r.matrix, r.kernel_id]])
        if r.status in NOT_MEASURED:  # no performance result: no verdict to wait for
            out[r.pk] = {"state": "failed", "label": r.status, "cell": None}
        elif r.verdict_state != "done":
            out[r.pk] = {"state": "work-" + r.verdict_state, "label": WORK_LABELS[r.verdict_state],
                         "error": r.verdict_error, "cell": None}
        elif worst is None:
            first = "series base" if r.kernel.patch_index == 0 else "nothing to compare with yet"
            out[r.pk] = {"state": "none", "label": first, "cell": None}
        else:
            out[r.pk] = worst
    return out


def _run_row(run: Run, state: dict) -> dict:
    kernel = run.kernel
    who = kernel_label(kernel.release, kernel.git_commit, kernel.patch_index)
    if kernel.series_id:
        who = f"{kernel.series.name}: {who}"
    return {"run": run, "kernel": who, "verdict": state,
            "summary": summary(state)}


def summary(state: dict) -> str:
    """What decided a state, in a few words ("seqw write.bw −50.5%", "needs about 10 runs")."""
    cell, failed = state.get("cell"), state.get("failed")
    if failed:
        return (f"{failed['study']} {failed['device_class']} {failed['device']}: no result on "
                f"the {failed['side']} side")
    if cell is None:
        return state.get("error") or ""
    text = f"{cell['short']} {figures.change(cell['change_pct'])}"
    if state.get("rerun") and state["state"] in UNDECIDED_STATES:
        text += f", {state['rerun']}"
    return text


def overview() -> dict:
    """All the overview shows: made again after a run, a verdict or a triage."""
    return freshness.cached("overview", 1, _overview, also=freshness.work_stamp())


def _overview() -> dict:
    # The newest nightly runs (the trigger `iowatch nightly` gives them: a smoke
    # or one-off run is none, issue 28), and each lab host's latest run: their
    # verdicts read together.
    nightly = list(Run.objects.filter(NIGHTLY, published=False, kernel__series__isnull=True)
                   .select_related("host", "kernel").order_by("-received_at", "-id")[:5])
    last = Run.objects.filter(host=OuterRef("pk")).order_by("-received_at", "-id").values("pk")[:1]
    hosts = list(Host.objects.exclude(kind="published").annotate(last=Subquery(last))
                 .values("name", "kind", "last"))
    latest = {r.pk: r for r in Run.objects.filter(pk__in=[h["last"] for h in hosts if h["last"]])
              .select_related("host", "kernel__series")}
    states = run_states(nightly + list(latest.values()))
    return {**lines(), "checks": checks(),
            "nightlies": [_run_row(r, states[r.pk]) for r in nightly],
            "hosts": [_run_row(latest[h["last"]], states[h["last"]]) if h["last"]
                      else {"run": None, "host": h} for h in hosts],
            "unsure": [s for s in suspected_rows() if s["outcome"] == "inconclusive"],
            "regressions_by_state": regressions_by_state()}


def series_index() -> list[dict]:
    return freshness.cached("series-index", 1, lambda: checks(limit=200),
                            also=freshness.work_stamp())


def checks(limit: int = 5) -> list[dict]:
    """The newest series checks: each series' worst patch against its parent."""
    series = list(PatchSeries.objects.annotate(last=Max("kernels__runs__received_at"),
                                               measured=Max("kernels__patch_index"),
                                               mailed=Max("patches__index"))
                  .filter(last__isnull=False).order_by("-last", "-id")[:limit])
    parents = list(StoredComparison.objects.filter(reason="parent",
                                             candidate_kernel__series__in=series)
                   .values_list("id", "candidate_kernel__series_id"))
    states = comparison_states([cid for cid, _ in parents])
    context = comparisons(states)
    pending = set(Run.objects.filter(kernel__series__in=series).exclude(verdict_state="done")
                  .values_list("kernel__series_id", flat=True))
    out = []
    for s in series:
        worst = worst_state([{**states[cid], "comparison": context[cid]}
                             for cid, series_id in parents if series_id == s.pk])
        if worst is None:
            worst = {"state": "none", "label": "no patch compared yet", "cell": None}
        c = worst.get("comparison")
        where = f"{c['place']} on {c['host__name']}" if c else ""
        # A series that came without its patch count (a git range) has as many
        # patches as the highest index measured or recorded.
        patches = s.patch_count or max(s.measured or 0, s.mailed or 0) or None
        out.append({"series": s, "patches": patches, "verdict": worst, "where": where,
                    "summary": summary(worst), "pending": s.pk in pending})
    return out


# --- the series page -------------------------------------------------------------------------

def series_rows(series: PatchSeries) -> dict:
    """One row per kernel of the series (patch 0 is the base), one chip per
    (study, device class): the state of the stored cells of the patch against
    its parent in that column, its deciding metric and change."""
    return freshness.cached("series", series.pk, lambda: _series_rows(series))


def _series_rows(series: PatchSeries) -> dict:
    kernels = list(series.kernels.order_by("patch_index", "id")
                   .values("id", "release", "git_commit", "patch_index"))
    subjects = dict(Patch.objects.filter(series=series).values_list("index", "subject"))
    total = series.patch_count or max(subjects, default=0)
    parents = list(StoredComparison.objects.filter(reason="parent", candidate_kernel__series=series)
                   .values_list("id", "candidate_kernel_id", "base_kernel_id"))
    cells, decided = cells_of([p[0] for p in parents]), decisions(p[0] for p in parents)
    # {kernel: {(study, device class): [the stored state of each parent comparison there]}}
    by_kernel: dict[int, dict[tuple, list]] = defaultdict(lambda: defaultdict(list))
    parent_of = {}
    for cid, kernel_id, base_id in parents:
        parent_of[kernel_id] = base_id
        d = decided[cid]
        for column in d["column_states"]:
            where = (column["study"], column["device_class"])
            by_kernel[kernel_id][where].append(stated(
                column["state"], [c for c in cells.get(cid, []) if (c["study"], c["device_class"]) == where],
                [f for f in d["failed_cells"] if (f["study"], f["device_class"]) == where],
                d["platform_drifted"]))
    columns = sorted({column for per in by_kernel.values() for column in per})
    rows = []
    for k in kernels:
        chips = []
        for column in columns:
            found = by_kernel[k["id"]].get(column)
            chips.append(_chip(worst_state(found)) if found else None)
        states = [c for c in chips if c]
        rows.append({**k, "subject": subjects.get(k["patch_index"], "") if k["patch_index"] else "",
                     "place": f"{k['patch_index']}/{total}" if k["patch_index"] else "base",
                     "label": kernel_label(k["release"], k["git_commit"], k["patch_index"]),
                     "verdict": worst_state(states),
                     "compare_url": compare_url(parent_of[k["id"]], k["id"])
                     if k["id"] in parent_of else "",
                     "chips": chips})
    return {"columns": columns, "rows": rows}


def _chip(state: dict) -> dict:
    """A chip's words: the deciding metric and its change ("writer bw −33%"),
    what an unsure cell needs, or where a cell failed; its title the verdict's words."""
    cell = state["cell"]
    if state["failed"]:
        text = f"failed on the {state['failed']['side']} side"
        title = f"{state['failed']['device']} {state['failed']['filesystem']}: no passed repetition"
    else:
        text = f"{cell['short']} {figures.change(cell['change_pct'], digits=0)}"
        title = cell["words"] or what(cell)
        if cell.get("mde_pct") is not None:  # issue 41 item 8: the MDE beside every deciding cell
            title += f" (minimum detectable effect {cell['mde_pct']:g}%)"
        if state["state"] in UNDECIDED_STATES and state.get("rerun"):
            text += f" · {state['rerun']}"
    return {**state, "text": text, "title": title}


# --- the regressions ------------------------------------------------------------------------

def regression_list(states=None, limit: int = 200) -> list[dict]:
    """Regressions by severity, worst first, each with its worst cell."""
    return freshness.cached("regressions", (states, limit), lambda: _regression_list(states, limit),
                            also=freshness.work_stamp())


def _regression_list(states, limit: int) -> list[dict]:
    found = Regression.objects.all()
    if states:
        found = found.filter(state__in=states)
    rows = list(found.annotate(severity=regression_severity())
                .order_by(F("severity").desc(nulls_last=True), "-created", "-id")
                .values("id", "state", "created", "notes", "comparison_id", "severity")[:limit])
    context = comparisons({r["comparison_id"] for r in rows})
    cells = cells_of(context, ["regression"])
    for r in rows:
        c, of = context[r["comparison_id"]], cells.get(r["comparison_id"], [])
        r.update(comparison=c, cell=of[0] if of else None, more=max(len(of) - 1, 0),
                 url=reverse("dashboard:regression", args=[r["id"]]),
                 # Words made once for the cached list (the template's filters cost per row).
                 opened=localtime(r["created"]).strftime("%Y-%m-%d %H:%M"),
                 state_label=STATES[r["state"]], text=line(c, of[0] if of else None))
    return rows


# The regression page lists its comparison's other deciding cells this many at
# a time: a 100,000-cell comparison listed every one (issue 28).
OTHERS_PER_PAGE = 100


def regression_cells(regression: Regression, page=None) -> dict:
    """One regression's cells: its regressed cells and change points worst
    first, then a page of the other deciding cells of its comparison (worst
    first); and the regressed cells of each other comparison of the same
    change it holds (a patch against the series base beside the patch against
    its parent)."""
    cid = regression.comparison_id
    views = list(regression.views.values_list("id", flat=True))
    cells = cells_of([cid, *views], outcomes=("regression",))
    rows = comparisons([cid, *views])
    regressed = cells.get(cid, [])
    others = Paginator(StoredVerdict.objects.filter(comparison_id=cid).exclude(outcome="regression")
                       .annotate(severity=cell_severity())
                       .order_by(F("severity").desc(nulls_last=True), "id").values(*CELL_FIELDS),
                       OTHERS_PER_PAGE).get_page(page)
    return {"comparison_row": rows[cid],
            "line": line(rows[cid], regressed[0] if regressed else None),
            "regressed": [c for c in regressed if not c["point"]],
            "points": [c for c in regressed if c["point"]],
            "others": [_cell(row) for row in others.object_list], "page": others,
            "views": [{"row": rows[v], "regressed": cells.get(v, [])} for v in views]}
