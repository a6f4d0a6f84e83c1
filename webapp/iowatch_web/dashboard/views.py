"""The dashboard's pages. Each reads what queries.py reads; charts fetch their
numbers from the JSON endpoints in endpoints.py. Untrusted text reaches the
template as data (autoescaped), and JavaScript only as json_script."""
from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponseForbidden, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods

from iowatch_web.dashboard import (
    attention, compare_page, compare_work, device_classes as rollup, lab_hosts, published, queries,
    run_numbers, series_checks, series_keys,
)
from iowatch_web.hosts import beats, giveback, lava_boards
from iowatch_web.regressions import confirm
from iowatch_web.regressions.api import report_text
from iowatch_web.regressions.bisect_api import latest as latest_bisect
from iowatch_web.regressions.models import STATES, BisectJob, Regression, StoredVerdict
from iowatch_web.regressions.nightly import NoCell, already_first_bad, queue_bisect
from iowatch_web.regressions.triage import MAX_NOTE, TriageRefused, triage
from iowatch_web.results.models import RUN_STATUSES, Artifact, Host, PatchSeries, Run, Study


def overview(request):
    # The verdicts first (what regressed, where, by how much, how sure), then
    # the newest checks, nightlies and hosts; published runs are not lab runs.
    # Each host's state beside its latest run: read now, outside the overview's cache.
    context = attention.overview()
    now = lab_hosts.by_name()
    hosts = [{**h, "now": now.pop(h["run"].host.name if h["run"] else h["host"]["name"], None)}
             for h in context["hosts"]]
    # Hosts that beat before their first run.
    hosts += [{"run": None, "host": {"name": name, "kind": ""}, "now": state}
              for name, state in now.items()]
    return render(request, "dashboard/overview.html", {**context, "hosts": hosts})


def hosts(request):
    states = lab_hosts.host_states(changes=True)
    silent = lab_hosts.silent_hosts(states)
    devices = lab_hosts.devices_of([h["name"] for h in states] + silent)
    return render(request, "dashboard/hosts.html", {
        "hosts": [{**h, "devices": devices.get(h["name"], [])} for h in states],
        "silent": [{"name": n, "devices": devices.get(n, [])} for n in silent],
        "lava": lava_boards.board_states(),
        "timeout_s": beats.timeout().total_seconds()})


def device_classes(request):
    """Each device class and study on a branch, a series or the whole lab over the last days."""
    branch = request.GET.get("branch", "").strip()
    series, days = request.GET.get("series", "").strip(), request.GET.get("days", "7").strip()
    scopes = rollup.scopes()
    problems = []
    if branch and branch not in scopes["branches"]:
        problems.append(f"no nightly runs of a branch named {branch!r}: pick one of the list")
    if series and not (series.isdigit() and any(s["id"] == int(series) for s in scopes["series"])):
        problems.append(f"no series {series!r}: pick one of the list")
    if days not in {str(d) for d in rollup.WINDOWS}:
        problems.append(f"days={days!r}: pick one of {', '.join(map(str, rollup.WINDOWS))}")
    context = {"scopes": scopes, "windows": rollup.WINDOWS, "problems": problems,
               "branch": branch, "series": series, "days": days}
    if not problems:
        context.update(rollup.rollup(branch, int(series) if series else None, int(days)))
    return render(request, "dashboard/device_classes.html", context, status=400 if problems else 200)


def series_index(request):
    return render(request, "dashboard/series_index.html",
                  {"groups": series_checks.grouped(attention.series_index())})


def series_check(request, series_id: int):
    series = get_object_or_404(PatchSeries, pk=series_id)
    return render(request, "dashboard/series_check.html",
                  {"series": series, **attention.series_rows(series), **series_checks.other_checks(series)})


def compare(request):
    base, candidate = request.GET.get("base", "").strip(), request.GET.get("candidate", "").strip()
    filters = {f: request.GET.get(f, "") for f in compare_page.COMPARE_FILTERS}
    context = {"base": base, "candidate": candidate, "filters": filters, "error": None,
               "kernels": compare_page.kernel_choices()["kernels"]}
    status = 200
    if base and candidate:
        try:
            compare_page.check_query(request.GET)
            compare_page.two_sides(base, candidate)
            result = compare_work.answer(base, candidate)
        except compare_work.Computing as e:
            # A large compare is made by the verdict worker: the page refreshes until it is.
            context.update(computing=e, refresh_s=compare_work.REFRESH_S)
            status = 202
        except compare_work.CompareFailed as e:
            context["error"] = str(e)
            status = 500
        except compare_page.SeveralKernels as e:
            sides = {"base": base, "candidate": candidate}
            context.update(error=str(e), candidates=[
                {**c, "url": "?" + urlencode({**sides, e.role: c["spec"]})} for c in e.candidates])
            status = 400  # the form again, with the kernels to pick from
        except (compare_page.SameSides, compare_page.UnknownParameter) as e:
            context["error"] = str(e)
            status = 400
        except compare_page.SideNotFound as e:
            context["error"] = str(e)
            status = 404  # the form again, with what was not found
        else:
            cells = result["cells"]
            shown, page = compare_page.paged(result, filters, request.GET.get("page"))
            query = urlencode({"base": base, "candidate": candidate,
                               **{k: v for k, v in filters.items() if v}})
            context.update(
                result=shown, cells=shown["cells"], charts=compare_page.charts(shown["cells"]),
                page=page, query=query,
                # The summary's rows: the deciding cells that moved, worst first.
                deciding=[c for c in cells if c["outcome"] != "no-change"][:8],
                headline=compare_page.headline(result),
                choices={f: sorted({c[f] for c in cells}) for f in compare_page.COMPARE_FILTERS},
                # The charts draw the page's cells.
                data_url=reverse("dashboard:api-compare") + f"?{query}&page={page.number}")
    return render(request, "dashboard/compare.html", context, status=status)


def history(request):
    # An incomplete key is filled from the newest measured cell that fits it.
    key = series_keys.starting_key({k: request.GET.get(k, "") for k in queries.HISTORY_KEYS})
    missing = [k for k in ("study", "host", "group", "metric") if not key[k]]
    choices = series_keys.choices(key)
    return render(request, "dashboard/history.html", {
        "key": key, "missing": missing, "choices": [(k, choices[k], key[k]) for k in queries.HISTORY_KEYS],
        "data_url": reverse("dashboard:api-history") + "?" + urlencode(key)})


def regressions(request):
    state = request.GET.get("state", "")
    rows = attention.regression_list([state] if state in STATES else None, limit=200)
    bisects = bisect_states([r["id"] for r in rows])
    rows = [{**r, "bisect": bisects.get(r["id"])} for r in rows]
    return render(request, "dashboard/regressions.html", {
        "rows": rows, "state": state,
        "by_state": [(s, STATES[s], n) for s, n in queries.regressions_by_state().items()]})


def bisect_states(regression_ids) -> dict[int, str]:
    """Each regression's latest bisect state (open before finished)."""
    states: dict[int, str] = {}
    for rid, state in (BisectJob.objects.filter(regression_id__in=regression_ids)
                       .order_by("regression_id", "-created", "-id").values_list("regression_id", "state")):
        states.setdefault(rid, state)
    return states


@require_http_methods(["GET", "POST"])
def regression_detail(request, regression_id: int):
    regression = get_object_or_404(
        Regression.objects.select_related("comparison__host", "comparison__base_kernel",
                                          "comparison__candidate_kernel"), pk=regression_id)
    if request.method == "POST":
        # Anonymous users read; only a logged-in user triages (the CSRF
        # middleware has already refused a POST without its token).
        if not request.user.is_authenticated:
            return HttpResponseForbidden("log in to triage regressions")
        if request.POST.get("action") == "bisect":
            return _queue_bisect(request, regression)
        try:
            triage(regression.pk, request.user, request.POST.get("state", ""),
                   request.POST.get("note", "").strip())
        except TriageRefused as e:
            messages.error(request, str(e))
        else:
            messages.success(request, "triage saved")
        return HttpResponseRedirect(reverse("dashboard:regression", args=[regression.pk]))
    comparison = regression.comparison
    keys = queries.history_keys_of_regression(regression)
    bisect = latest_bisect(regression)
    confirmation = confirm.state(regression)
    # While a second host's confirmation is pending, the page offers no mail (the API's 409).
    report = None if confirmation["state"] == "pending" else report_text(
        regression.pk, "email",
        request.build_absolute_uri(reverse("dashboard:regression", args=[regression.pk])))
    # "bisected" is offered only with a finished bisect behind it (triage refuses it otherwise).
    states = {s: label for s, label in STATES.items() if s != "bisected"
              or regression.state == s or regression.bisects.filter(state="done").exists()}
    return render(request, "dashboard/regression.html", {
        "regression": regression, "comparison": comparison, "states": states, "max_note": MAX_NOTE,
        **attention.regression_cells(regression, request.GET.get("page")),
        "events": regression.events.select_related("user", "agent").order_by("-at", "-id"),
        "bisect": bisect, "already_first_bad": already_first_bad(comparison), "report": report,
        "given_back": list(giveback.given_back("bisect", bisect.pk)) if bisect else [],
        "confirmation": confirmation,
        "history_urls": [(key, reverse("dashboard:api-history") + "?" + urlencode(
                              {**key, "good": comparison.base_kernel_id, "bad": comparison.candidate_kernel_id}),
                          reverse("dashboard:history") + "?" + urlencode(key)) for key in keys[:4]],
    })


@require_http_methods(["POST"])
def add_runs(request, verdict_id: int):
    """The "add runs" button of an unsure cell: more repetitions of both kernels
    on the comparison's host, within the cell's cap (confirm.queue_runs)."""
    if not request.user.is_authenticated:
        return HttpResponseForbidden("log in to add runs")
    verdict = get_object_or_404(StoredVerdict.objects.select_related(
        "comparison__host", "comparison__base_kernel", "comparison__candidate_kernel", "study"),
        pk=verdict_id)
    try:
        job = confirm.queue_runs(verdict)
    except confirm.NoRunsToAdd as e:
        messages.error(request, str(e))
    else:
        messages.success(request, f"add-runs #{job.pk} queued: {job.repetitions} more runs a side "
                                  f"on {job.host}, for its agent to take")
    return HttpResponseRedirect(reverse("dashboard:overview") + "#unsure")


def _queue_bisect(request, regression: Regression):
    """The bisect button: a job for the lab's agents. The state stays: it says
    "bisecting" once an agent has taken the job (triage.bisect_claimed)."""
    try:
        job = queue_bisect(regression, origin="maintainer", user=request.user)
    except NoCell as e:
        messages.error(request, str(e))
    else:
        messages.success(request, f"bisect #{job.pk} queued: it waits for a lab agent "
                                  "(iowatch bisect --next); the state says bisecting once one takes it")
    return HttpResponseRedirect(reverse("dashboard:regression", args=[regression.pk]) + "#bisect")


def regressions_of_runs(run_ids) -> dict:
    """run id -> the regressions whose candidate side the run is (its verdict, linked)."""
    out: dict = {}
    for pk, state, run_id in (Regression.objects
                              .filter(comparison__candidate_runs__run_id__in=list(run_ids))
                              .values_list("pk", "state", "comparison__candidate_runs__run_id")
                              .order_by("pk")):
        out.setdefault(run_id, []).append(
            {"id": pk, "state": state, "url": reverse("dashboard:regression", args=[pk])})
    return out


def runs(request):
    filters = {f: request.GET.get(f, "") for f in queries.RUN_FILTERS}
    page = Paginator(queries.runs(filters).values_list("pk", flat=True), 50).get_page(
        request.GET.get("page"))
    rows = queries.run_rows(Run.objects.filter(pk__in=list(page.object_list))
                            .order_by("-received_at", "-id"))
    found = regressions_of_runs(r["run_id"] for r in rows)
    # A run without a regression still has a verdict: "no change", "unsure",
    # "series base", where its verdict work stands (attention.run_states, as
    # the overview says it); published runs are the post's numbers, judged by none.
    measured = list(Run.objects.filter(run_id__in=[r["run_id"] for r in rows], published=False)
                    .select_related("kernel"))
    by_pk = attention.run_states(measured) if measured else {}
    states = {run.run_id: by_pk[run.pk] for run in measured}
    for r in rows:
        r["regressions"] = found.get(r["run_id"], [])
        r["verdict"] = states.get(r["run_id"])
    query = urlencode({k: v for k, v in filters.items() if v})
    return render(request, "dashboard/runs.html", {
        "rows": rows, "page": page, "filters": filters, "query": query,
        "hosts": Host.objects.values_list("name", flat=True),
        "statuses": RUN_STATUSES, "studies": Study.objects.values_list("slug", flat=True)})


# A run page shows this many cells at a time: a 100,000-cell run (a 17 MB
# bundle) made one page of 82 MB that held a web worker for a minute (issue 28).
CELLS_PER_PAGE = 50


def run_detail(request, run_id):
    run = get_object_or_404(Run.objects.select_related("host", "kernel__series", "agent"),
                            run_id=run_id)
    previous = queries.previous_run(run) if not run.published else None
    page = Paginator(run.cells.select_related("study", "device").prefetch_related("repetitions")
                     .order_by("key"), CELLS_PER_PAGE).get_page(request.GET.get("page"))
    cells = list(page.object_list)
    numbers = run_numbers.cell_numbers(run, cells)
    for cell in cells:
        rows = numbers[cell.pk]
        deciding = [r for r in rows if r["deciding"]]
        # The deciding metrics' table, then the others' (folded beside deciding ones).
        cell.tables = [(deciding, False), ([r for r in rows if not r["deciding"]], bool(deciding))
                       ] if rows else []
    artifacts = (Artifact.objects.filter(cell__in=cells).defer("content")
                 .select_related("cell").order_by("cell__key", "repetition", "name"))
    return render(request, "dashboard/run.html", {
        "run": run, "previous": previous, "cells": cells, "page": page, "artifacts": artifacts,
        "regressions": regressions_of_runs([run.run_id]).get(run.run_id, []),
        "devices": run.devices.all(),
        "confounders": queries.run_confounders(run, previous),
        "kernel": run_numbers.kernel_options(run),
        "environment": run_numbers.environment_rows(run),
        "lava": run_numbers.lava_job(run),
        "cmdline": run_numbers.readable_cmdline(run.cmdline),
        "device_states": run_numbers.device_state_rows(run),
        "tools": sorted((run.tools or {}).items()),
        "kernel_label": queries.kernel_label(run.kernel.release, run.kernel.git_commit,
                                             run.kernel.patch_index)})


def studies(request):
    return render(request, "dashboard/studies.html", {"studies": published.studies_index()})


def study_published(request, slug: str):
    study = get_object_or_404(Study, slug=slug)
    return render(request, "dashboard/study.html", {
        "study": study, "check": published.claim_check(study),
        "data_url": reverse("dashboard:api-published", args=[study.slug])})
