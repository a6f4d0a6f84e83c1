"""The dashboard's pages. Each reads what queries.py reads; charts fetch their
numbers from the JSON endpoints in endpoints.py. Untrusted text reaches the
template as data (autoescaped), and JavaScript only as json_script."""
from __future__ import annotations

from collections import defaultdict

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponseForbidden, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods

from dashboard import queries
from iowatch.report import STATE_WORDS
from regressions.models import STATES, Regression
from regressions.triage import TriageRefused, triage
from results.models import RUN_STATUSES, Artifact, Host, PatchSeries, Run, Sample, Study


def overview(request):
    return render(request, "dashboard/overview.html", {
        **queries.overview(), "series": queries.series_list(),
        "studies": Study.objects.order_by("slug").values("slug", "title")})


def series_index(request):
    return render(request, "dashboard/series_index.html", {"series": queries.series_list()})


def series_check(request, series_id: int):
    series = get_object_or_404(PatchSeries, pk=series_id)
    return render(request, "dashboard/series_check.html",
                  {"series": series, **queries.series_check(series)})


def compare(request):
    base, candidate = request.GET.get("base", "").strip(), request.GET.get("candidate", "").strip()
    filters = {f: request.GET.get(f, "") for f in queries.COMPARE_FILTERS}
    context = {"base": base, "candidate": candidate, "filters": filters, "error": None}
    if base and candidate:
        try:
            result = queries.compare(base, candidate)
        except queries.SideNotFound as e:
            context["error"] = str(e)
        else:
            cells = result["cells"]
            context.update(
                result=result, cells=queries.filter_cells(cells, filters),
                state_words=STATE_WORDS[result["state"]],
                choices={f: sorted({c[f] for c in cells}) for f in queries.COMPARE_FILTERS},
                data_url=reverse("dashboard:api-compare") + "?" + urlencode(
                    {"base": base, "candidate": candidate, **{k: v for k, v in filters.items() if v}}))
    return render(request, "dashboard/compare.html", context)


def history(request):
    key = {k: request.GET.get(k, "") for k in queries.HISTORY_KEYS}
    missing = [k for k in ("study", "host", "group", "metric") if not key[k]]
    return render(request, "dashboard/history.html", {
        "key": key, "missing": missing,
        "data_url": reverse("dashboard:api-history") + "?" + urlencode(key)})


def regressions(request):
    state = request.GET.get("state", "")
    rows = queries.regression_rows([state] if state in STATES else None, limit=200)
    return render(request, "dashboard/regressions.html", {
        "rows": rows, "state": state,
        "by_state": [(s, STATES[s], n) for s, n in queries.regressions_by_state().items()]})


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
    return render(request, "dashboard/regression.html", {
        "regression": regression, "comparison": comparison, "states": STATES,
        "cells": comparison.cells.filter(outcome="regression")
                 .select_related("study", "device").order_by("cell_key", "group", "metric"),
        "change_points": comparison.change_points.select_related("study", "device", "run", "kernel"),
        "events": regression.events.select_related("user").order_by("-at", "-id"),
        "history_urls": [(key, reverse("dashboard:api-history") + "?" + urlencode(key),
                          reverse("dashboard:history") + "?" + urlencode(key)) for key in keys[:4]],
        "compare_url": reverse("dashboard:compare") + "?" + urlencode({
            "base": f"kernel:{comparison.base_kernel_id}",
            "candidate": f"kernel:{comparison.candidate_kernel_id}"}),
    })


def runs(request):
    filters = {f: request.GET.get(f, "") for f in queries.RUN_FILTERS}
    page = Paginator(queries.runs(filters).values_list("pk", flat=True), 50).get_page(
        request.GET.get("page"))
    rows = queries.run_rows(Run.objects.filter(pk__in=list(page.object_list))
                            .order_by("-received_at", "-id"))
    query = urlencode({k: v for k, v in filters.items() if v})
    return render(request, "dashboard/runs.html", {
        "rows": rows, "page": page, "filters": filters, "query": query,
        "hosts": Host.objects.values_list("name", flat=True),
        "statuses": RUN_STATUSES, "studies": Study.objects.values_list("slug", flat=True)})


def run_detail(request, run_id):
    run = get_object_or_404(Run.objects.select_related("host", "kernel__series", "agent"),
                            run_id=run_id)
    previous = queries.previous_run(run) if not run.published else None
    cells = list(run.cells.select_related("study", "device").prefetch_related("repetitions"))
    keys = defaultdict(list)
    for cell_id, group, metric in (Sample.objects.filter(cell__run=run, job__isnull=True)
                                   .values_list("cell_id", "group", "metric_id")
                                   .distinct().order_by("cell_id", "group", "metric_id")):
        keys[cell_id].append((group, metric))
    for cell in cells:
        cell.histories = [
            (group, metric, reverse("dashboard:history") + "?" + urlencode({
                "study": cell.study.slug, "host": run.host.name,
                "device": cell.device.name if cell.device else "", "filesystem": cell.filesystem,
                "group": group, "metric": metric}))
            for group, metric in keys[cell.pk]]
    artifacts = (Artifact.objects.filter(cell__run=run).defer("content")
                 .select_related("cell").order_by("cell__key", "repetition", "name"))
    return render(request, "dashboard/run.html", {
        "run": run, "previous": previous, "cells": cells, "artifacts": artifacts,
        "devices": run.devices.all(),
        "confounders": queries.run_confounders(run, previous),
        "kernel_label": queries.kernel_label(run.kernel.release, run.kernel.git_commit,
                                             run.kernel.patch_index)})


def studies(request):
    return render(request, "dashboard/studies.html", {
        "studies": Study.objects.order_by("slug").values("slug", "title", "seed")})


def study_published(request, slug: str):
    study = get_object_or_404(Study, slug=slug)
    data = queries.published_vs_measured(study)
    return render(request, "dashboard/study.html", {
        "study": study, "data": data,
        "data_url": reverse("dashboard:api-published", args=[study.slug])})
