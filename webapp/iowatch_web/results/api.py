"""The results app's router of the HTTP API at /api/v1/: bundle ingest for
agents, reads for all (the API object, its agent token, errors and paging
are site/api.py's; ResultsConfig.ready adds this router).

The runner and the web app talk only through the result bundle and this API.
POST /bundles checks the bundle with iowatch.bundle, the
same code the runner uses, and stores it through results.ingest; the reads
page through the store with filters done in the database.
"""
from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import connection
from django.db.models import Count, Exists, OuterRef
from django.http import HttpRequest, HttpResponse, JsonResponse, UnreadablePostError
from django.utils import timezone
from ninja import Query, Router, Schema

from iowatch import bundle
from iowatch.vocabulary.outcomes import UNDECIDED_OUTCOMES
from iowatch_web.results import ingest
from iowatch_web.site.bounds import (MAX_PAGE, MAX_SAMPLES_FILTERED, MAX_SAMPLES_UNFILTERED,
                                     Offset, PageLimit, SampleLimit, StoreId, ValueLimit)
from iowatch_web.results.models import Artifact, Cell, Metric, Run, Sample
from iowatch_web.site.api import AgentToken, Error, Page, error_response, found, one_page
# The one API object is site/api.py's; read here too by the tests that describe it.
from iowatch_web.site.api import api  # noqa: F401
from iowatch_web.site.middleware import RETRY_AFTER_S

log = logging.getLogger(__name__)

router = Router()

# --- ingest -----------------------------------------------------------------

class BundleStored(Schema):
    run_id: uuid.UUID
    created: bool
    cells: int
    samples: int


def _bundle_request_body() -> dict:
    schema = {k: v for k, v in bundle.schema().items() if not k.startswith("$")}
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def _too_big(limit: int) -> JsonResponse:
    return error_response(413, f"bundle larger than the server's limit of {limit} bytes "
                       "(setting IOWATCH_MAX_BUNDLE_BYTES)", "bundle")


def _read_body(request: HttpRequest, limit: int) -> bytes | None:
    """The request body, or None when it is over the limit.

    A chunked upload (Transfer-Encoding: chunked, no Content-Length) is read
    from the WSGI input, which gunicorn (iowatch serve) takes apart chunk by
    chunk: Django alone would read it as empty. At most limit + 1 bytes are
    read. A body that ends early or breaks off is UnreadablePostError: a 400."""
    if "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
        try:
            body = request.META["wsgi.input"].read(limit + 1)
        except Exception as e:  # a malformed chunk or a dropped connection: the client's doing
            raise UnreadablePostError(f"chunked body: {e or type(e).__name__}") from e
    else:
        try:
            body = request.body
        except RequestDataTooBig:
            return None
        announced = int(request.META.get("CONTENT_LENGTH") or 0)
        if len(body) < announced:
            raise UnreadablePostError(f"the body ended after {len(body)} of the {announced} "
                                      "bytes its Content-Length announced")
    return None if len(body) > limit else body


@router.post("/bundles", auth=AgentToken(), tags=["ingest"],
          response={200: BundleStored, 201: BundleStored, 400: Error, 401: Error,
                    409: Error, 413: Error, 415: Error},
          openapi_extra={"requestBody": _bundle_request_body()},
          summary="Upload a result bundle (wire form: iowatch.bundle.to_wire)")
def post_bundle(request: HttpRequest):
    """Stores the run in one transaction. 201 for a new run; 200 with
    created=false when the same bundle was stored before (idempotent); 409 when
    the run id is stored from a different bundle; 400 naming the field for a
    malformed bundle, 413 over the size limit, 503 with Retry-After when the
    database cannot be reached. Nothing is stored on any error. The body comes
    with Content-Length or chunked (Transfer-Encoding: chunked), under the same
    size limit either way."""
    limit = settings.IOWATCH_MAX_BUNDLE_BYTES
    # Refuse by the announced length before reading a byte of the body.
    try:
        announced = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return error_response(400, "Content-Length is not a number", "request")
    if announced > limit:
        return _too_big(limit)
    content_type = request.content_type or ""
    if content_type != "application/json":
        return error_response(415, f"a bundle is sent as application/json, not {content_type or 'nothing'!r}",
                      "request")
    body = _read_body(request, limit)
    if body is None:
        return _too_big(limit)
    try:
        doc = bundle.validate(bundle.loads(body))
        stored = ingest.store_bundle(doc, agent=request.auth)
    except bundle.BundleError as e:
        return error_response(400, str(e), e.where)
    except ingest.RunConflict as e:
        return error_response(409, str(e), "bundle field run_id")
    if stored.created:
        log.info("stored run %s from agent %s: %d cells, %d samples",
                 stored.run.run_id, request.auth.name, stored.cells, stored.samples)
    return JsonResponse({"run_id": str(stored.run.run_id), "created": stored.created,
                         "cells": stored.cells, "samples": stored.samples},
                        status=201 if stored.created else 200)


# --- reads ------------------------------------------------------------------



class HostOut(Schema):
    name: str
    kind: str


class DeviceOut(Schema):
    id: int
    name: str
    device_class: str
    path: str
    model: str
    size_bytes: int | None
    rotational: bool | None


class SeriesOut(Schema):
    name: str
    message_id: str | None
    base: str | None
    patch_count: int | None
    # As the series came by mail (empty otherwise): a report replies in its thread.
    subject: str | None
    to: list[str]
    cc: list[str]
    archive: str | None

    @staticmethod
    def resolve_subject(series) -> str | None:
        return series.mail.get("subject")

    @staticmethod
    def resolve_to(series) -> list[str]:
        return series.mail.get("to", [])

    @staticmethod
    def resolve_cc(series) -> list[str]:
        return series.mail.get("cc", [])

    @staticmethod
    def resolve_archive(series) -> str | None:
        return series.mail.get("archive")


class PatchOut(Schema):
    index: int
    subject: str
    commit: str | None
    message_id: str | None
    author: str
    sha256: str


class KernelOut(Schema):
    id: int
    release: str
    git_commit: str | None
    config_hash: str | None
    series: SeriesOut | None
    patch_index: int | None


class VerdictWork(Schema):
    """Where the run's verdict work stands (regressions/work.py): pending (queued,
    or waiting to retry), running, done, or failed after its tries (error says why)."""
    state: str
    attempts: int
    error: str
    done_at: datetime | None
    undecided: int  # deciding cells left unsure or suspected in the comparisons this run is the candidate of
    # The states iowatch.judging decided for those comparisons, as stored
    # (StoredComparison.state): what a nightly's exit status reads.
    states: list[str] = []


class RunOut(Schema):
    run_id: uuid.UUID
    status: str
    published: bool
    label: str
    matrix: str
    host: HostOut
    kernel: KernelOut
    agent: str | None
    started_at: datetime | None
    finished_at: datetime | None
    received_at: datetime
    # What started the run: {} or a nightly's or a bisect step's ({"kind": ...});
    # a client's side drops a bisect's steps by it (SideQuery.admits).
    trigger: dict[str, Any]
    verdict: VerdictWork

    @staticmethod
    def resolve_agent(run: Run) -> str | None:
        return run.agent.name if run.agent_id else None

    @staticmethod
    def resolve_verdict(run: Run) -> dict:
        # The regressions app's verdicts, through the reverse relation: results does not import it.
        undecided = run.candidate_of_comparisons.filter(
            cells__outcome__in=UNDECIDED_OUTCOMES).values("cells").count()
        states = sorted(set(run.candidate_of_comparisons.values_list("state", flat=True)))
        return {"state": run.verdict_state, "attempts": run.verdict_attempts,
                "error": run.verdict_error, "done_at": run.verdict_done_at,
                "undecided": undecided, "states": states}


class RunDetail(RunOut):
    command: str
    cmdline: str
    kernel_config: dict[str, Any]
    devices: list[DeviceOut]
    tools: dict[str, Any]
    environment: dict[str, Any]
    cell_count: int
    sample_count: int
    bundle_sha256: str
    patches: list[PatchOut]  # every patch of the kernel's series, with its Message-ID
    check_round: dict[str, Any]  # {} or an `iowatch check`'s id and the round the run was in

    @staticmethod
    def resolve_kernel_config(run: Run) -> dict:
        return run.kernel.config

    @staticmethod
    def resolve_patches(run: Run) -> list:
        return list(run.kernel.series.patches.all()) if run.kernel.series_id else []

    @staticmethod
    def resolve_devices(run: Run) -> list:
        return list(run.devices.all())

    @staticmethod
    def resolve_cell_count(run: Run) -> int:
        return run.cells.count() if run.cell_count is None else run.cell_count

    @staticmethod
    def resolve_sample_count(run: Run) -> int:
        if run.sample_count is None:
            return Sample.objects.filter(cell__run=run).count()
        return run.sample_count


class RunPage(Page):
    items: list[RunOut]


class RunFilters(Schema):
    status: str | None = None
    host: str | None = None
    kernel: str | None = None
    study: str | None = None
    published: bool | None = None
    label: str | None = None
    limit: PageLimit = 100
    offset: Offset = 0


def _runs():
    return Run.objects.select_related("host", "kernel__series", "agent")


@router.get("/runs", response={200: RunPage, 400: Error}, tags=["reads"],
         summary="Runs, newest first; kernel is the kernel release")
def list_runs(request, filters: Query[RunFilters]):
    runs = _runs()
    for field, value in (("status", filters.status), ("host__name", filters.host),
                         ("kernel__release", filters.kernel), ("published", filters.published),
                         ("label", filters.label)):
        if value is not None:
            runs = runs.filter(**{field: value})
    if filters.study is not None:
        runs = runs.filter(Exists(Cell.objects.filter(run=OuterRef("pk"),
                                                      study__slug=filters.study)))
    page, error = one_page(runs, filters.limit, filters.offset, MAX_PAGE)
    return error or page


@router.get("/runs/{run_id}", response={200: RunDetail, 404: Error}, tags=["reads"],
         summary="One run: its kernel, host, devices, environment and verdict state")
def get_run(request, run_id: uuid.UUID):
    return found(_runs(), "run", run_id=run_id)


class RepetitionOut(Schema):
    index: int
    status: str
    error: str


class CellOut(Schema):
    id: int
    run_id: uuid.UUID
    key: str
    study: str
    device: DeviceOut | None
    filesystem: str
    mkfs_options: str
    mount_options: str
    params: dict[str, Any]
    status: str
    reason: str
    repetitions: list[RepetitionOut]
    sample_count: int

    @staticmethod
    def resolve_run_id(cell: Cell) -> uuid.UUID:
        return cell.run.run_id

    @staticmethod
    def resolve_study(cell: Cell) -> str:
        return cell.study.slug

    @staticmethod
    def resolve_repetitions(cell: Cell) -> list:
        return list(cell.repetitions.all())


class FailureOut(Schema):
    repetition: int
    group: str
    job: str
    error: int
    message: str


class ArtifactOut(Schema):
    id: int
    repetition: int
    name: str
    sha256: str
    size: int
    url: str

    @staticmethod
    def resolve_url(artifact: Artifact) -> str:
        return f"/api/v1/artifacts/{artifact.id}"


class CellDetail(CellOut):
    failures: list[FailureOut]
    artifacts: list[ArtifactOut]

    @staticmethod
    def resolve_failures(cell: Cell) -> list:
        return list(cell.failures.all())

    @staticmethod
    def resolve_artifacts(cell: Cell) -> list:
        return list(cell.artifacts.defer("content"))


class CellPage(Page):
    items: list[CellOut]


def _cells():
    return (Cell.objects.select_related("run", "study", "device")
            .prefetch_related("repetitions").annotate(sample_count=Count("samples")))


@router.get("/runs/{run_id}/cells", response={200: CellPage, 400: Error, 404: Error},
         tags=["reads"], summary="A page of a run's cells, by key, with their sample counts")
def list_run_cells(request, run_id: uuid.UUID, limit: PageLimit = 100, offset: Offset = 0):
    run = found(Run, "run", run_id=run_id)
    # The page's cell ids first, then their sample counts: counting every cell's
    # samples before the offset took seconds on a 100,000-cell run (issue 28).
    page, error = one_page(Cell.objects.filter(run=run).order_by("key").values_list("pk", flat=True),
                        limit, offset, MAX_PAGE)
    if error:
        return error
    page["items"] = list(_cells().filter(pk__in=page["items"]).order_by("key"))
    return page


@router.get("/cells/{cell_id}", response={200: CellDetail, 404: Error}, tags=["reads"],
         summary="One cell of a run: its study, device, filesystem and parameters")
def get_cell(request, cell_id: StoreId):
    return found(_cells(), "cell", pk=cell_id)


class SampleOut(Schema):
    id: int
    run_id: uuid.UUID
    cell_id: int
    cell: str
    study: str
    repetition: int
    metric: str
    value: float
    group: str
    job: str | None


class SamplePage(Page):
    items: list[SampleOut]


class SampleFilters(Schema):
    metric: str | None = None
    study: str | None = None
    host: str | None = None
    run: uuid.UUID | None = None
    cell: StoreId | None = None
    group: str | None = None
    # Up to MAX_SAMPLES_FILTERED with a filter; the description says the bound of every request.
    limit: SampleLimit = 1000
    offset: Offset = 0


SAMPLE_FIELDS = {"id": "id", "run_id": "cell__run__run_id", "cell_id": "cell_id",
                 "cell": "cell__key", "study": "cell__study__slug", "repetition": "repetition",
                 "metric": "metric_id", "value": "value", "group": "group", "job": "job"}


def _sample_page(samples, limit: int, offset: int, filtered: bool) -> JsonResponse:
    # Rows go out as plain values: building a model and a schema object per
    # sample would cost more than the query.
    most = MAX_SAMPLES_FILTERED if filtered else MAX_SAMPLES_UNFILTERED
    page, error = one_page(samples.order_by("id").values_list(*SAMPLE_FIELDS.values()),
                        limit, offset, most)
    if error:
        return error
    page["items"] = [dict(zip(SAMPLE_FIELDS, row)) for row in page["items"]]
    return JsonResponse(page)


@router.get("/samples", response={200: SamplePage, 400: Error}, tags=["reads"],
         summary=f"Samples by filter; without a filter, limit is at most {MAX_SAMPLES_UNFILTERED}")
def list_samples(request, filters: Query[SampleFilters]):
    conditions = {"metric_id": filters.metric, "cell__study__slug": filters.study,
                  "cell__run__host__name": filters.host, "cell__run__run_id": filters.run,
                  "cell_id": filters.cell, "group": filters.group}
    conditions = {k: v for k, v in conditions.items() if v is not None}
    return _sample_page(Sample.objects.filter(**conditions), filters.limit, filters.offset,
                        filtered=bool(conditions))


@router.get("/cells/{cell_id}/samples", response={200: SamplePage, 400: Error, 404: Error},
         tags=["reads"], summary="A page of one cell's samples, every repetition and metric")
def list_cell_samples(request, cell_id: StoreId, limit: ValueLimit = MAX_SAMPLES_UNFILTERED,
                      offset: Offset = 0):
    cell = found(Cell, "cell", pk=cell_id)
    return _sample_page(Sample.objects.filter(cell=cell), limit, offset, filtered=True)


@router.get("/artifacts/{artifact_id}", tags=["reads"], response={200: bytes, 404: Error},
         summary="Download one raw file a run kept (tool output, diskstats), as it was written",
         openapi_extra={"responses": {200: {"description": "the raw file",
                                            "content": {"application/octet-stream": {}}}}})
def get_artifact(request, artifact_id: StoreId):
    artifact = found(Artifact, "artifact", pk=artifact_id)
    # Tool output is untrusted text: sent as a download, never rendered as a page.
    response = HttpResponse(bytes(artifact.content), content_type="application/octet-stream")
    response["Content-Disposition"] = f'attachment; filename="{artifact.name}"'
    response["X-Content-Type-Options"] = "nosniff"
    response["Digest"] = f"sha-256={artifact.sha256}"
    return response


class MetricOut(Schema):
    name: str
    unit: str
    direction: str
    description: str
    nonnegative: bool


@router.get("/metrics", response=list[MetricOut], tags=["reads"], summary="The metric table: each metric's unit and direction")
def list_metrics(request):
    # Read here, not while the answer is built: a database that is down is then a plain OperationalError.
    return list(Metric.objects.all())


class Health(Schema):
    status: str
    database: str
    error: str | None = None
    verdicts_open: int | None = None
    oldest_open_s: float | None = None


@router.get("/health", response={200: Health, 503: Health}, tags=["reads"],
         summary="Whether the server reaches its database, and how far behind its verdict work is")
def health(request):
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as e:  # any failure to reach the store is what this reports
        response = JsonResponse({"status": "error", "database": connection.vendor, "error": str(e)},
                                status=503)
        response["Retry-After"] = str(RETRY_AFTER_S)
        return response
    # The verdict queue's backlog: a growing age means no worker is keeping up.
    oldest = (Run.objects.filter(verdict_state__in=("pending", "running"))
              .order_by("received_at").values_list("received_at", flat=True).first())
    return {"status": "ok", "database": connection.vendor,
            "verdicts_open": Run.objects.filter(verdict_state__in=("pending", "running")).count(),
            "oldest_open_s": (timezone.now() - oldest).total_seconds() if oldest else None}
