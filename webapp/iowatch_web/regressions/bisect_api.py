"""/api/v1/bisects: the bisect queue agents work from (docs/lab.md, "Nightly and bisect").

Agents authenticate with their ingest token (Authorization: Bearer). A claim
takes the oldest queued job atomically (a row lock that skips locked rows on
PostgreSQL, and on every store a conditional update from queued to running,
so two agents never hold one job); the agent posts each measured step, then
the result. A step or a result for a finished job is a 409: the job's record
is what it found; so is one from an agent whose claim was given back because
its host stopped beating (iowatch_web.hosts.giveback). Reading is open to anyone, like the rest of the API.
"""
from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from django.db import transaction
from django.db.models import Case, IntegerField, Value, When
from django.http import HttpResponse, JsonResponse
from django.utils import timezone
from ninja import Field, Router, Schema
from pydantic import StrictBool, StrictFloat, field_validator

from iowatch_web.hosts import giveback, grants
from iowatch_web.regressions import cancel, nightly, triage
from iowatch_web.site.bounds import (HOST_NAME, HOST_NAME_OR_EMPTY, MAX_PAGE, JsonInt, Offset,
                                     PageLimit, StoreId, not_one_of, one_of)
from iowatch_web.site.api import AgentInput, AgentToken, Error, Page, error_response, found, one_page
from iowatch_web.regressions.models import BISECT_OPEN, BISECT_STATES, BisectJob
from iowatch_web.results.models import DEVICE_CLASSES

router = Router(tags=["bisects"])

# Bounds on what an agent posts: a bisect of a year of nightlies is under 20
# steps; a step's text fields are a commit, a subject line and an author.
MAX_STEPS = 200
MAX_RUNS = 100


# --- what goes out ---------------------------------------------------------------

class BisectOut(Schema):
    id: int
    regression: int
    state: str
    origin: str
    agent: str | None
    agent_host: str
    requested_by: str | None
    cell: dict
    good: dict
    bad: dict
    steps: list
    result: dict | None
    error: str | None
    created: datetime
    updated: datetime
    claimed_at: datetime | None
    finished_at: datetime | None

    @staticmethod
    def resolve_regression(job: BisectJob) -> int:
        return job.regression_id

    @staticmethod
    def resolve_agent(job: BisectJob) -> str | None:
        return job.agent.name if job.agent_id else None

    @staticmethod
    def resolve_requested_by(job: BisectJob) -> str | None:
        return job.requested_by.get_username() if job.requested_by_id else None

    @staticmethod
    def resolve_cell(job: BisectJob) -> dict:
        return cell_of(job)

    @staticmethod
    def resolve_good(job: BisectJob) -> dict:
        return {"kernel": job.good_kernel, "commit": job.good_commit}

    @staticmethod
    def resolve_bad(job: BisectJob) -> dict:
        return {"kernel": job.bad_kernel, "commit": job.bad_commit}


def cell_of(job: BisectJob) -> dict:
    return {"study": job.study, "device_class": job.device_class, "filesystem": job.filesystem,
            "group": job.group, "metric": job.metric_id, "key": job.cell_key}


class Claimed(Schema):
    id: int
    regression: int
    good: dict
    bad: dict
    cell: dict
    host: str
    matrix: str
    tree: str | None
    branch: str | None


class BisectPage(Page):
    items: list[BisectOut]


def _jobs():
    return BisectJob.objects.select_related("agent", "requested_by")


# --- what comes in ------------------------------------------------------------------

class ClaimIn(AgentInput):
    # A host the agent's token may act for (else 403; hosts/grants.py).
    host: str = Field(..., min_length=1, max_length=200, pattern=HOST_NAME)
    # A lab host's agent takes only the bisects its devices can measure.
    device_classes: list[Annotated[str, one_of(DEVICE_CLASSES)]] | None = Field(None, max_length=20)
    # Only the bisects of regressions found on this host (a lab agent's default:
    # a change a host's hardware shows is bisected where it showed).
    own_only: StrictBool = False
    # The claiming agent holds no job: the host's running ones were lost when it
    # started again, and go back to the queue first (hosts/giveback.py).
    holds_none: StrictBool = False

    @field_validator("device_classes")
    @classmethod
    def _known(cls, value):
        unknown = sorted(set(value or ()) - set(DEVICE_CLASSES))
        if unknown:
            raise ValueError(f"unknown device class {', '.join(unknown)}: one of {', '.join(DEVICE_CLASSES)}")
        return value


class StepIn(AgentInput):
    # The host the agent measures on, as it claimed: a step from a host that
    # lost the job (iowatch_web.hosts.giveback) is refused even on a shared token.
    host: str = Field("", max_length=200, pattern=HOST_NAME_OR_EMPTY)
    commit: str = Field(..., pattern=r"^[0-9a-f]{7,64}$")
    subject: str = Field("", max_length=1000)
    author: str = Field("", max_length=500)
    outcome: Literal["good", "bad", "skipped", "unsure"]
    median: StrictFloat | None = Field(None, allow_inf_nan=False)
    unit: str = Field("", max_length=20)
    repetitions: JsonInt = Field(0, ge=0, le=10_000)
    run_ids: list[str] = Field(default_factory=list, max_length=MAX_RUNS)
    position: StrictFloat | None = Field(None, allow_inf_nan=False)


class Commit(AgentInput):
    commit: str = Field(..., pattern=r"^[0-9a-f]{7,64}$")
    subject: str = Field("", max_length=1000)
    author: str = Field("", max_length=500)


class Provenance(AgentInput):
    nightly: str | None = Field(None, max_length=100)
    good_runs: list[str] = Field(default_factory=list, max_length=MAX_RUNS)
    bad_runs: list[str] = Field(default_factory=list, max_length=MAX_RUNS)


class ResultIn(AgentInput):
    host: str = Field("", max_length=200, pattern=HOST_NAME_OR_EMPTY)
    state: Literal["done", "failed"]
    first_bad: Commit | None = None
    candidates: list[str] = Field(default_factory=list, max_length=MAX_STEPS)
    # The culprit model's probability of first_bad, or of the candidates together.
    probability: StrictFloat | None = Field(None, ge=0, le=1, allow_inf_nan=False)
    skipped: list[str] = Field(default_factory=list, max_length=MAX_STEPS)
    error: str | None = Field(None, max_length=10_000)
    provenance: Provenance = Field(default_factory=Provenance)


# --- the queue -------------------------------------------------------------------------

def claim(agent, host: str, device_classes: list[str] | None = None,
          own_only: bool = False, holds_none: bool = False) -> BisectJob | None:
    """The oldest queued job (one of this host's regressions first; of these
    device classes only, when given; of this host's only, with own_only), now
    running for `agent`; None when nothing is queued. A job whose host stopped
    beating is given back first, so a claim does not wait for the worker's sweep."""
    giveback.give_back_stuck(BisectJob, "bisect")
    if holds_none:
        giveback.give_back_held(BisectJob, "bisect", host, agent)
    while True:
        with transaction.atomic():
            queued = BisectJob.objects.filter(state="queued")
            if device_classes is not None:
                queued = queued.filter(device_class__in=device_classes)
            if own_only:
                queued = queued.filter(regression__comparison__host__name=host)
            queued = (queued
                      .annotate(here=Case(When(regression__comparison__host__name=host, then=Value(0)),
                                          default=Value(1), output_field=IntegerField()))
                      .order_by("here", "created", "id"))
            # skip_locked: another agent's claim in flight passes over this row.
            job = queued.select_for_update(skip_locked=True, of=("self",)).first()
            if job is None:
                return None
            # Where rows are not locked (SQLite), the update from queued is what
            # makes the claim one agent's.
            now = timezone.now()
            if BisectJob.objects.filter(pk=job.pk, state="queued").update(
                    state="running", agent=agent, agent_host=host, claimed_at=now, updated=now):
                job = BisectJob.objects.select_related("regression__comparison__host", "agent").get(pk=job.pk)
                triage.bisect_claimed(job)
                return job


def _finished(job: BisectJob) -> JsonResponse:
    if job.state == "cancelled":
        return error_response(409, cancel.refused("bisect", job), "cancelled")
    return error_response(409, f"bisect #{job.pk} is {job.state} (finished at {job.finished_at:%Y-%m-%d %H:%M} "
                       "UTC): it takes no more steps nor results; a maintainer queues a new one "
                       "with POST /api/v1/regressions/{id}/bisect", "bisect state")


def _lost(job: BisectJob, agent, host: str) -> JsonResponse | None:
    """The 409 for an agent whose claim was given back (its host stopped beating)."""
    if why := giveback.refusal(job, "bisect", agent, host):
        return error_response(409, why, "bisect claim")
    return None


def _locked(job_id: int) -> BisectJob:
    return found(BisectJob.objects.select_for_update(), "bisect job", pk=job_id)


@router.post("/claim", auth=AgentToken(),
             response={200: Claimed, 204: None, 400: Error, 401: Error, 403: Error},
             summary="Take the oldest queued bisect (agents); 204 when nothing is queued")
def claim_job(request, body: ClaimIn):
    if refused := grants.forbidden(request.auth, body.host, "body field host"):
        return refused
    job = claim(request.auth, body.host, body.device_classes, body.own_only, body.holds_none)
    if job is None:
        return HttpResponse(status=204)
    regression = job.regression
    good, bad = nightly.good_and_bad(regression)
    trigger = nightly.trigger_of(regression)
    return {"id": job.pk, "regression": regression.pk,
            "good": {**good, "kernel": job.good_kernel, "commit": job.good_commit},
            "bad": {**bad, "kernel": job.bad_kernel, "commit": job.bad_commit},
            "cell": cell_of(job), "host": regression.comparison.host.name,
            "matrix": regression.comparison.matrix,
            "tree": trigger.get("tree"), "branch": trigger.get("branch")}


@router.get("", response={200: BisectPage, 400: Error},
            summary="A page of bisect jobs, oldest first; filter by state")
def list_jobs(request, state: Annotated[str | None, one_of(BISECT_STATES)] = None,
              limit: PageLimit = 100, offset: Offset = 0):
    if refused := not_one_of("state", state, BISECT_STATES):
        return refused
    jobs = _jobs()
    if state is not None:
        jobs = jobs.filter(state=state)
    page, error = one_page(jobs, limit, offset, MAX_PAGE)
    return error or page


@router.get("/{job_id}", response={200: BisectOut, 404: Error}, summary="One bisect job: its regression, its steps and its first bad commit")
def get_job(request, job_id: StoreId):
    return found(_jobs(), "bisect job", pk=job_id)


@router.post("/{job_id}/steps", auth=AgentToken(),
             response={200: BisectOut, 400: Error, 401: Error, 403: Error, 404: Error, 409: Error},
             summary="Append a measured step to a bisect (agents)")
def post_step(request, job_id: StoreId, body: StepIn):
    with transaction.atomic():
        job = _locked(job_id)
        if refused := grants.forbidden_for_job(job, "bisect", request.auth, body.host):
            return refused
        if not job.open:
            return _finished(job)
        if lost := _lost(job, request.auth, body.host):
            return lost
        if len(job.steps) >= MAX_STEPS:
            return error_response(400, f"bisect #{job.pk} has {MAX_STEPS} steps already", "body")
        job.steps = [*job.steps, {**body.model_dump(exclude={"host"}), "at": timezone.now().isoformat()}]
        fields = ["steps", "updated"]
        if job.state == "queued":  # an agent that bisects without claiming first
            job.state, job.agent, job.claimed_at = "running", request.auth, timezone.now()
            job.agent_host = body.host
            fields += ["state", "agent", "claimed_at", "agent_host"]
            triage.bisect_claimed(job)
        job.save(update_fields=fields)
    return found(_jobs(), "bisect job", pk=job_id)


@router.post("/{job_id}/result", auth=AgentToken(),
             response={200: BisectOut, 400: Error, 401: Error, 403: Error, 404: Error, 409: Error},
             summary="Write a bisect's result: done with the first bad commit, or failed (agents)")
def post_result(request, job_id: StoreId, body: ResultIn):
    if body.state == "done" and body.first_bad is None and not body.candidates:
        return error_response(400, "a done bisect names first_bad, or the candidates skips left",
                      "body field first_bad")
    if body.state == "failed" and not body.error:
        return error_response(400, "a failed bisect says why", "body field error")
    with transaction.atomic():
        job = _locked(job_id)
        if refused := grants.forbidden_for_job(job, "bisect", request.auth, body.host):
            return refused
        if not job.open:
            return _finished(job)
        if lost := _lost(job, request.auth, body.host):
            return lost
        job.state = body.state
        job.result = body.model_dump(exclude={"state", "error", "host"})
        job.error = body.error
        job.finished_at = timezone.now()
        if job.claimed_at is None:
            job.agent, job.claimed_at, job.agent_host = request.auth, job.finished_at, body.host
        job.save()
        triage.bisect_finished(job)
    return found(_jobs(), "bisect job", pk=job_id)


def latest(regression) -> BisectJob | None:
    """The regression's open bisect, else its newest finished one."""
    jobs = regression.bisects.select_related("agent", "requested_by")
    return (jobs.filter(state__in=BISECT_OPEN).first()
            or jobs.order_by("-finished_at", "-id").first())
