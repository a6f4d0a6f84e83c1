"""/api/v1/confirmations: second hosts' confirmations of regressions
(regressions/confirm.py). Agents claim with their ingest token and hand the
job back with the runs they uploaded; the server judges them. Reading is open."""
from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from django.db import transaction
from django.http import HttpResponse
from django.utils import timezone
from ninja import Field, Router, Schema

from iowatch_web.hosts import giveback, grants
from iowatch_web.regressions import cancel, confirm, verdicts
from iowatch_web.regressions.bisect_api import MAX_RUNS, ClaimIn
from iowatch_web.regressions.api import Triager
from iowatch_web.regressions.models import CONFIRM_STATES, ConfirmJob, StoredVerdict
from iowatch_web.site.bounds import (HOST_NAME_OR_EMPTY, MAX_PAGE, Offset, PageLimit, StoreId,
                                     not_one_of, one_of)
from iowatch_web.results.models import Run
from iowatch_web.site.api import AgentInput, AgentToken, Error, Page, error_response, found, one_page

router = Router(tags=["confirmations"])


class ConfirmOut(Schema):
    id: int
    purpose: str  # "confirm", or "add-runs": more repetitions of an unsure cell
    regression: int | None
    comparison: int | None
    repetitions: int | None  # add-runs: the runs a side asked for, within the cell's cap
    matrix: str | None  # the compared runs' matrix: the new runs are of it, to pool with them
    host: str
    device_class: str
    state: str
    cells: list
    rounds: int
    good: dict
    bad: dict
    agent_host: str
    good_runs: list
    bad_runs: list
    outcome: str
    verdicts: list
    error: str | None
    created: datetime
    claimed_at: datetime | None
    finished_at: datetime | None

    @staticmethod
    def resolve_regression(job: ConfirmJob) -> int | None:
        return job.regression_id

    @staticmethod
    def resolve_comparison(job: ConfirmJob) -> int | None:
        return job.comparison_id

    @staticmethod
    def resolve_matrix(job: ConfirmJob) -> str | None:
        comparison = job.comparison if job.comparison_id else (
            job.regression.comparison if job.regression_id else None)
        return comparison.matrix if comparison else None

    @staticmethod
    def resolve_good(job: ConfirmJob) -> dict:
        return {"kernel": job.good_kernel, "commit": job.good_commit,
                **_kernel_identity(job, "base_kernel")}

    @staticmethod
    def resolve_bad(job: ConfirmJob) -> dict:
        return {"kernel": job.bad_kernel, "commit": job.bad_commit,
                **_kernel_identity(job, "candidate_kernel")}


def _kernel_identity(job: ConfirmJob, side: str) -> dict:
    """An add-runs job's kernel as its agent must build it: its config hash
    and its place in its series ({name, base, patch_index}). The agent's runs
    carry the place, and its build must have that config, so they are the
    comparison's kernel, not another. Empty for other jobs."""
    kernel = getattr(job.comparison, side) if job.purpose == "add-runs" and job.comparison_id else None
    if kernel is None:
        return {}
    config = {"config_hash": kernel.config_hash} if kernel.config_hash else {}
    if kernel.series_id is None:
        return config
    return {**config, "series": {"name": kernel.series.name, "base": kernel.series.base,
                                 "patch_index": kernel.patch_index}}


class ConfirmPage(Page):
    items: list[ConfirmOut]


class ConfirmResultIn(AgentInput):
    # the agent's host: a claim it lost is refused
    host: str = Field("", max_length=200, pattern=HOST_NAME_OR_EMPTY)
    state: Literal["done", "failed"]
    good_runs: list[uuid.UUID] = Field(default_factory=list, max_length=MAX_RUNS)
    bad_runs: list[uuid.UUID] = Field(default_factory=list, max_length=MAX_RUNS)
    error: str | None = Field(None, max_length=10_000)


@router.post("/claim", auth=AgentToken(),
             response={200: ConfirmOut, 204: None, 400: Error, 401: Error, 403: Error},
             summary="Take the oldest queued confirmation for this host (agents); 204 when none")
def claim_job(request, body: ClaimIn):
    if refused := grants.forbidden(request.auth, body.host, "body field host"):
        return refused
    job = confirm.claim(request.auth, body.host, body.holds_none)
    if job is None:
        return HttpResponse(status=204)
    return job


class AddRunsIn(Schema):
    verdict: StoreId  # the unsure cell (a stored verdict's id)


@router.post("/add-runs", auth=Triager(),
             response={200: ConfirmOut, 400: Error, 401: Error, 403: Error, 404: Error, 409: Error},
             summary="Queue more runs of an unsure cell on its comparison's host, within its cap "
                     "(logged-in users; CSRF token required); an open job for the cell is kept")
def add_runs(request, body: AddRunsIn):
    verdict = found(StoredVerdict.objects.select_related(
        "comparison__host", "comparison__base_kernel", "comparison__candidate_kernel", "study"),
        "stored verdict", pk=body.verdict)
    try:
        return confirm.queue_runs(verdict)
    except confirm.NoRunsToAdd as e:
        return error_response(409, str(e), "body field verdict")


@router.get("", response={200: ConfirmPage, 400: Error},
            summary="A page of confirmation jobs, oldest first; filter by state")
def list_jobs(request, state: Annotated[str | None, one_of(CONFIRM_STATES)] = None,
              limit: PageLimit = 100, offset: Offset = 0):
    if refused := not_one_of("state", state, CONFIRM_STATES):
        return refused
    jobs = ConfirmJob.objects.select_related("regression__comparison", "comparison__base_kernel__series",
                                             "comparison__candidate_kernel__series")
    if state is not None:
        jobs = jobs.filter(state=state)
    page, error = one_page(jobs, limit, offset, MAX_PAGE)
    return error or page


@router.get("/{job_id}", response={200: ConfirmOut, 404: Error}, summary="One confirmation job: its regression, host, rounds and outcome")
def get_job(request, job_id: StoreId):
    return found(ConfirmJob, "confirmation job", pk=job_id)


@router.post("/{job_id}/result", auth=AgentToken(),
             response={200: ConfirmOut, 400: Error, 401: Error, 403: Error, 404: Error, 409: Error},
             summary="Hand a confirmation back: done with the runs uploaded (the server judges "
                     "them), or failed with the reason (agents)")
def post_result(request, job_id: StoreId, body: ConfirmResultIn):
    if body.state == "failed" and not body.error:
        return error_response(400, "a failed confirmation says why", "body field error")
    if body.state == "done" and not (body.good_runs and body.bad_runs):
        return error_response(400, "a done confirmation names the runs of both kernels",
                      "body fields good_runs, bad_runs")
    with transaction.atomic():
        job = found(ConfirmJob.objects.select_for_update(), "confirmation job", pk=job_id)
        if refused := grants.forbidden_for_job(job, "confirmation", request.auth, body.host):
            return refused
        if job.state == "cancelled":
            return error_response(409, cancel.refused("confirmation", job), "cancelled")
        if not job.open:
            return error_response(409, f"confirmation #{job.pk} is {job.state}: it takes no more results",
                          "confirmation state")
        if (lost := giveback.refusal(job, "confirmation", request.auth, body.host)) is not None:
            return error_response(409, lost, "confirmation state")
        if job.state == "queued":
            return error_response(409, f"confirmation #{job.pk} is queued, claimed by no agent: "
                                  "claim it first (POST /api/v1/confirmations/claim)",
                                  "confirmation state")
        if body.state == "done":
            good, bad = [str(r) for r in body.good_runs], [str(r) for r in body.bad_runs]
            stored = {str(r) for r in Run.objects.filter(run_id__in=good + bad)
                      .values_list("run_id", flat=True)}
            missing = [r for r in good + bad if r not in stored]
            if missing:
                return error_response(400, f"runs not stored here: {', '.join(missing[:5])}: upload them first",
                              "body fields good_runs, bad_runs")
            if job.purpose == "add-runs" and (stray := confirm.added_runs_refused(job, good, bad)):
                return error_response(400, stray, "body fields good_runs, bad_runs")
            job.good_runs, job.bad_runs = good, bad
            job.state = "done"
            if job.purpose == "confirm":
                confirm.judge(job)
            else:  # added runs are in their kernels' sides: the comparison is judged again
                verdicts.rejudge(job)
        else:
            job.state, job.error = "failed", body.error
        job.finished_at = timezone.now()
        job.save()
    return job
