"""/api/v1/regressions: the open regressions, their cells, and their triage.

Reading is open to anyone, like the rest of the API. Triage changes state and
needs a logged-in user (Django's session, with its CSRF token); every change is
a TriageEvent naming the user. Everything goes out as JSON data: pages that
show it escape it (untrusted text).
"""
from __future__ import annotations

import uuid
from datetime import datetime
from email.errors import HeaderParseError
from email.headerregistry import Address
from email.utils import getaddresses
from typing import Annotated

from django.db import transaction
from django.db.models import Count, Exists, OuterRef, Q
from django.http import HttpRequest, HttpResponse, JsonResponse
from ninja import Field, Query, Router, Schema
from ninja.errors import HttpError
from ninja.security import SessionAuth

from iowatch import mailreport
from iowatch_web.regressions import confirm, detail, nightly
from iowatch_web.regressions.bisect_api import BisectOut, latest
from iowatch_web.regressions.models import (KINDS, STATES, StoredVerdict, StoredChangePoint, StoredComparison,
                                            Regression, TriageEvent)
from iowatch_web.regressions.triage import MAX_NOTE, TriageRefused, triage as apply_triage
from iowatch_web.site.bounds import MAX_PAGE, Offset, PageLimit, StoreId, one_of
from iowatch_web.site.api import Error, error_response, found, page_problem

router = Router(tags=["regressions"])



class Triager(SessionAuth):
    """A logged-in Django user; the POST must carry the CSRF token (403 without)."""

    def authenticate(self, request: HttpRequest, key):
        if request.user.is_authenticated:
            return request.user
        raise HttpError(401, "log in to triage regressions")


class KernelRef(Schema):
    id: int
    release: str
    git_commit: str | None
    series: str | None
    patch_index: int | None

    @staticmethod
    def resolve_series(kernel) -> str | None:
        return kernel.series.name if kernel.series_id else None


class RegressionOut(Schema):
    id: int
    kind: str
    state: str
    state_label: str
    reason: str
    reason_label: str
    host: str
    matrix: str
    base_kernel: KernelRef
    candidate_kernel: KernelRef
    cell_count: int
    notes: str
    platform: str = Field(description="the platform canary's finding in words (empty without "
                                      "a canary); a drifted platform claims no regression")
    created: datetime
    updated: datetime

    @staticmethod
    def resolve_kind(r: Regression) -> str:
        return r.kind

    @staticmethod
    def resolve_state_label(r: Regression) -> str:
        return r.get_state_display()

    @staticmethod
    def resolve_reason(r: Regression) -> str:
        return r.comparison.reason

    @staticmethod
    def resolve_platform(r: Regression) -> str:
        return r.comparison.platform_words

    @staticmethod
    def resolve_reason_label(r: Regression) -> str:
        return r.comparison.get_reason_display()

    @staticmethod
    def resolve_host(r: Regression) -> str:
        return r.comparison.host.name

    @staticmethod
    def resolve_matrix(r: Regression) -> str:
        return r.comparison.matrix

    @staticmethod
    def resolve_base_kernel(r: Regression):
        return r.comparison.base_kernel

    @staticmethod
    def resolve_candidate_kernel(r: Regression):
        return r.comparison.candidate_kernel


class SideOut(Schema):
    n: int
    mean: float
    median: float
    sd: float | None
    centre: float | None = None  # what the words compare (centre_statistic); None on older verdicts


class CellVerdictOut(Schema):
    id: int
    cell_key: str
    study: str
    host: str
    device_class: str
    device: str | None
    device_model: str | None
    unit: str
    filesystem: str
    group: str
    metric: str
    direction: str
    min_effect_pct: float
    base: SideOut
    candidate: SideOut
    change_pct: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    p_adjusted: float | None
    p_worse: float | None  # one-sided, the cell's own t: what confirmation reads
    p_worse_family: float | None  # the same with the family's variance lent: what "suspected" reads
    cliffs_delta: float | None
    outcome: str
    mde_pct: float | None  # minimum detectable effect at these runs (80% power, iowatch.stats.detectable)
    needs_runs: int | None
    size_only: bool
    words: str
    centre_statistic: str | None  # "geometric mean" or "mean": what base.centre and candidate.centre are

    @staticmethod
    def resolve_centre_statistic(v: StoredVerdict) -> str | None:
        return v.centre_statistic or None

    @staticmethod
    def resolve_study(v: StoredVerdict) -> str:
        return v.study.slug

    @staticmethod
    def resolve_device(v: StoredVerdict) -> str | None:
        return v.device.name if v.device_id else None

    @staticmethod
    def resolve_host(v: StoredVerdict) -> str:
        return v.host.name

    @staticmethod
    def resolve_device_model(v: StoredVerdict) -> str | None:
        return v.device.model or None if v.device_id else None

    @staticmethod
    def resolve_unit(v: StoredVerdict) -> str:
        return v.metric.unit

    @staticmethod
    def resolve_metric(v: StoredVerdict) -> str:
        return v.metric_id

    @staticmethod
    def resolve_base(v: StoredVerdict) -> dict:
        return {"n": v.base_n, "mean": v.base_mean, "median": v.base_median, "sd": v.base_sd,
                "centre": v.base_centre}

    @staticmethod
    def resolve_candidate(v: StoredVerdict) -> dict:
        return {"n": v.candidate_n, "mean": v.candidate_mean, "median": v.candidate_median,
                "sd": v.candidate_sd, "centre": v.candidate_centre}


class ChangePointOut(Schema):
    cell_key: str
    study: str
    device: str | None
    filesystem: str
    group: str
    metric: str
    run_id: uuid.UUID
    before_mean: float
    after_mean: float
    change_pct: float | None
    p_value: float | None
    min_effect_pct: float | None = None  # the study's, when the point was found: its severity's unit

    @staticmethod
    def resolve_study(cp) -> str:
        return cp.study.slug

    @staticmethod
    def resolve_device(cp) -> str | None:
        return cp.device.name if cp.device_id else None

    @staticmethod
    def resolve_metric(cp) -> str:
        return cp.metric_id

    @staticmethod
    def resolve_run_id(cp) -> uuid.UUID:
        return cp.run.run_id


class TriageEventOut(Schema):
    user: str
    from_state: str
    to_state: str
    note: str
    at: datetime

    @staticmethod
    def resolve_user(e: TriageEvent) -> str:
        return e.who


class ViewOut(Schema):
    """Another comparison of the same change the regression holds (a patch
    against the series base beside it against its parent): its regressed cells."""
    id: int
    reason: str
    base_kernel: KernelRef
    cells: list[CellVerdictOut]

    @staticmethod
    def resolve_cells(c: StoredComparison) -> list:
        return list(c.cells.filter(outcome="regression")
                    .select_related("study", "device", "host", "metric"))


class RegressionDetail(RegressionOut):
    base_runs: list[uuid.UUID]
    candidate_runs: list[uuid.UUID]
    cells: list[CellVerdictOut]
    # The comparison's deciding cells, regressed or not: a page of them
    # (verdicts_limit, verdicts_offset) out of verdict_count.
    verdicts: list[CellVerdictOut]
    verdict_count: int
    change_points: list[ChangePointOut]
    views: list[ViewOut]  # the same change seen by other comparisons (regressions/grouping.py)
    events: list[TriageEventOut]
    # The two ends: kernel release, commit and runs (the contract of issue 14).
    good: dict
    bad: dict
    bisect: BisectOut | None
    confirmation: dict  # a second lab host's (regressions/confirm.py)
    # What the mailing-list report needs beside the verdicts (regressions/detail.py).
    host_kind: str
    # A LAVA board class's device type and tags (the bundle's host.lava); None
    # for any other host, and for a board class whose bundles said bare-metal.
    host_lava: dict | None
    trigger: dict
    series: dict | None
    confounders: list[dict]
    mail: dict
    workloads: dict  # cell key -> the workload as run (regressions/detail.py)
    boots: list[int]  # [base, candidate] boots a side (regressions/detail.py)
    # The host's record that stood in for a side of one boot, in words (None: none
    # did, or the comparison was stored before it was kept).
    recorded_boots: str | None

    @staticmethod
    def resolve_good(r: Regression) -> dict:
        return nightly.good_and_bad(r)[0]

    @staticmethod
    def resolve_bad(r: Regression) -> dict:
        return nightly.good_and_bad(r)[1]

    @staticmethod
    def resolve_bisect(r: Regression):
        return latest(r)

    @staticmethod
    def resolve_confirmation(r: Regression) -> dict:
        return confirm.state(r)

    @staticmethod
    def resolve_host_kind(r: Regression) -> str:
        return r.comparison.host.kind

    @staticmethod
    def resolve_host_lava(r: Regression) -> dict | None:
        return r.comparison.host.inventory.get("lava")

    @staticmethod
    def resolve_trigger(r: Regression) -> dict:
        return nightly.trigger_of(r)

    @staticmethod
    def resolve_series(r: Regression) -> dict | None:
        return detail.series(r.comparison.candidate_kernel)

    @staticmethod
    def resolve_confounders(r: Regression) -> list[dict]:
        return detail.confounders(r)

    @staticmethod
    def resolve_mail(r: Regression) -> dict:
        return detail.mail_headers(r)

    @staticmethod
    def resolve_workloads(r: Regression) -> dict:
        return detail.workloads(r)

    @staticmethod
    def resolve_boots(r: Regression) -> list[int]:
        return detail.boots(r)

    @staticmethod
    def resolve_recorded_boots(r: Regression) -> str | None:
        return r.comparison.recorded_boots or None

    @staticmethod
    def resolve_base_runs(r: Regression) -> list:
        return list(r.comparison.base_runs.order_by("id").values_list("run_id", flat=True))

    @staticmethod
    def resolve_candidate_runs(r: Regression) -> list:
        return list(r.comparison.candidate_runs.order_by("id").values_list("run_id", flat=True))

    @staticmethod
    def resolve_cells(r: Regression) -> list:
        return list(r.regressed_cells().select_related("study", "device", "host", "metric"))

    @staticmethod
    def resolve_verdicts(r: Regression) -> list:
        offset, limit = getattr(r, "verdict_window", (0, MAX_PAGE))
        cells = r.comparison.cells
        if getattr(r, "moved_only", False):  # the mail's trade-off reads only these
            cells = cells.exclude(outcome="no-change")
        return list(cells.select_related("study", "device", "host", "metric")
                    .order_by("cell_key", "group", "metric_id")[offset:offset + limit])

    @staticmethod
    def resolve_verdict_count(r: Regression) -> int:
        return r.comparison.cells.count()

    @staticmethod
    def resolve_change_points(r: Regression) -> list:
        return list(r.comparison.change_points.select_related("study", "device", "run"))

    @staticmethod
    def resolve_views(r: Regression) -> list:
        return list(r.views.select_related("base_kernel__series").order_by("id"))

    @staticmethod
    def resolve_events(r: Regression) -> list:
        return list(r.events.select_related("user", "agent"))


class RegressionPage(Schema):
    count: int
    limit: int
    offset: int
    items: list[RegressionOut]


class RegressionFilters(Schema):
    state: Annotated[str | None, one_of(STATES)] = None
    study: str | None = None
    host: str | None = None
    kind: Annotated[str | None, one_of((*KINDS, "change-point"))] = None
    limit: PageLimit = 100
    offset: Offset = 0


class TriageIn(Schema):
    state: str
    # Checked by triage() (a 400 naming the field), said here for the OpenAPI description.
    note: str = Field("", json_schema_extra={"maxLength": MAX_NOTE})


def _regressions():
    regressed = Count("comparison__cells", filter=Q(comparison__cells__outcome="regression"),
                      distinct=True)
    return (Regression.objects
            .select_related("comparison__host", "comparison__base_kernel__series",
                            "comparison__candidate_kernel__series")
            .annotate(cell_count=regressed + Count("comparison__change_points", distinct=True)))


@router.get("", response={200: RegressionPage, 400: Error},
            summary="Regressions, newest first; filter by state, study, host, kind "
                    "(nightly, check, ab; change-point: the nightly ones found as a step)")
def list_regressions(request, filters: Query[RegressionFilters]):
    if error := page_problem(filters.limit, filters.offset, MAX_PAGE):
        return error
    if filters.state is not None and filters.state not in STATES:
        return error_response(400, f"state {filters.state!r} is not one of {', '.join(STATES)}",
                            "query field state")
    regressions = _regressions()
    if filters.state is not None:
        regressions = regressions.filter(state=filters.state)
    if filters.host is not None:
        regressions = regressions.filter(comparison__host__name=filters.host)
    if filters.kind == "change-point":
        regressions = regressions.filter(comparison__reason="change-point")
    elif filters.kind in KINDS:
        regressions = regressions.filter(kind=filters.kind)
    elif filters.kind is not None:
        return error_response(400, f"kind is one of {', '.join(KINDS)} (or change-point)",
                            "query field kind")
    if filters.study is not None:
        same = Q(comparison_id=OuterRef("comparison_id"), study__slug=filters.study)
        regressions = regressions.filter(
            Exists(StoredVerdict.objects.filter(same, outcome="regression"))
            | Exists(StoredChangePoint.objects.filter(same)))
    return {"count": regressions.count(), "limit": filters.limit, "offset": filters.offset,
            "items": list(regressions[filters.offset:filters.offset + filters.limit])}


@router.get("/{regression_id}", response={200: RegressionDetail, 400: Error, 404: Error},
            summary="One regression with its regressed cells, change points, runs and triage log, "
                    "and a page of its comparison's deciding cells (verdicts_limit, verdicts_offset)")
def get_regression(request, regression_id: StoreId, verdicts_limit: PageLimit | None = None,
                   verdicts_offset: Offset = 0):
    limit = MAX_PAGE if verdicts_limit is None else verdicts_limit
    if error := page_problem(limit, verdicts_offset, MAX_PAGE, ("verdicts_limit", "verdicts_offset")):
        return error
    regression = found(_regressions(), "regression", pk=regression_id)
    regression.verdict_window = (verdicts_offset, limit)
    return regression


@router.post("/{regression_id}/triage", auth=Triager(),
             response={200: RegressionDetail, 400: Error, 401: Error, 403: Error, 404: Error},
             summary="Change a regression's state (logged-in users; CSRF token required)")
def triage(request, regression_id: StoreId, body: TriageIn):
    """States: new, acknowledged, invalid, fixed, bisecting, bisected, wontfix
    (won't fix). The change and its note are logged with the user."""
    try:
        apply_triage(regression_id, request.auth, body.state, body.note)
    except TriageRefused as e:
        return error_response(400, str(e), e.where)
    return found(_regressions(), "regression", pk=regression_id)


class BisectIn(Schema):
    note: str = Field("", json_schema_extra={"maxLength": MAX_NOTE})
    # One of the regression's regressed cells to follow (default: the worst).
    cell: dict | None = None


@router.post("/{regression_id}/bisect", auth=Triager(),
             response={200: RegressionDetail, 400: Error, 401: Error, 403: Error, 404: Error},
             summary="Queue a bisect of the regression (logged-in users; CSRF token required); "
                     "an open bisect is kept. Its state becomes bisecting when an agent takes it")
def bisect(request, regression_id: StoreId, body: BisectIn):
    try:
        with transaction.atomic():
            regression = found(Regression, "regression", pk=regression_id)
            nightly.queue_bisect(regression, origin="maintainer", user=request.auth, cell=body.cell)
            if body.note:  # logged beside the state it leaves as it is
                apply_triage(regression_id, request.auth, regression.state, body.note)
    except TriageRefused as e:
        return error_response(400, str(e), e.where)
    except nightly.NoCell as e:
        return error_response(400, str(e), e.where)
    return found(_regressions(), "regression", pk=regression_id)


def report_text(regression_id: int, fmt: str, page: str | None = None,
                to: list[str] | tuple = (), cc: list[str] | tuple = ()) -> str:
    """The mailing-list report, rendered from the detail's own JSON, with more
    recipients and the page's address (`page`, when IOWATCH_PUBLIC_URL is unset)."""
    regression = found(_regressions(), "regression", pk=regression_id)
    regression.moved_only = True
    doc = RegressionDetail.from_orm(regression).model_dump(mode="json")
    return mailreport.render(mailreport.with_recipients(doc, to, cc, page), fmt)


def _addresses(value: str, field: str) -> list[str]:
    """Comma-separated addresses ("Doe, Jo" <jo@example.org> stays one), as
    written (a UTF-8 name stays UTF-8: the mail is 8bit, never RFC 2047);
    ValueError naming the one that is not an address."""
    out = []
    for name, addr in getaddresses([value]) if value.strip() else []:
        try:
            if "@" not in addr:
                raise ValueError(addr)
            out.append(str(Address(display_name=name, addr_spec=addr)))
        except (ValueError, IndexError, HeaderParseError) as e:
            raise ValueError(f"query field {field}: {addr or value!r} is not an e-mail address "
                             "(give name <user@host>, comma-separated)") from e
    return out


# Its 200 is text/plain, said by openapi_extra (ninja would describe a JSON string).
@router.get("/{regression_id}/report", response={400: Error, 404: Error, 409: Error},
            summary="The regression as a mailing-list report (text/plain): format email "
                    "(with headers, a reply in the series' thread) or text; to and cc add "
                    "recipients (comma-separated)",
            openapi_extra={"responses": {200: {"description": "the report",
                                               "content": {"text/plain": {"schema": {
                                                   "type": "string"}}}}}})
def report(request, regression_id: StoreId,
           format: Annotated[str, one_of(mailreport.FORMATS)] = "email",
           unconfirmed: bool = False,
           to: Annotated[str, Field(max_length=MAX_NOTE)] = "",
           cc: Annotated[str, Field(max_length=MAX_NOTE)] = ""):
    if format not in mailreport.FORMATS:
        return error_response(400, f"format {format!r} is not one of {', '.join(mailreport.FORMATS)}",
                            "query field format")
    regression = found(_regressions(), "regression", pk=regression_id)
    pending = confirm.state(regression)
    if format == "email" and pending["state"] == "pending" and not unconfirmed:
        # The mail goes out after a second host has had its say (docs/lab.md §7).
        return JsonResponse({"error": f"regression #{regression_id} is {pending['words']}: the "
                             "mail goes out after it (add unconfirmed=true to write it now)",
                             "where": "confirmation"}, status=409)
    try:
        recipients = _addresses(to, "to"), _addresses(cc, "cc")
    except ValueError as e:
        return error_response(400, str(e), str(e).split(":")[0])
    page = request.build_absolute_uri(f"/regressions/{regression_id}/")
    return HttpResponse(report_text(regression_id, format, page, *recipients),
                        content_type="text/plain; charset=utf-8")
