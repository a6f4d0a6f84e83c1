"""/api/v1/hosts: agents tell what their host is doing; anyone reads it.

POST /hosts/{name}/heartbeat takes an agent's ingest token and a body
{phase, cell, job: {kind, id} | null, commit, detail, at}, the phases and job kinds
being iowatch.heartbeat's. A malformed field is a 400 naming it, no token a
401, a host the token may not act for a 403 (hosts/grants.py). GET /hosts and /hosts/{name} give each host's state with `reachable` and
`unreachable_since` (iowatch_web.hosts.beats)."""
from __future__ import annotations

from datetime import datetime, timezone as dt_timezone
from typing import Annotated, Literal

from django.http import JsonResponse
from ninja import Field, Router, Schema

from iowatch.heartbeat import JOB_KINDS, PHASES
from iowatch_web.hosts import beats, grants
from iowatch_web.hosts.models import HostState
from iowatch_web.site.api import AgentInput, AgentToken, Error, found
from iowatch_web.site.bounds import HOST_NAME, HOST_NAME_RULE, STORE_MAX, JsonInt, is_host_name

router = Router(tags=["hosts"])

# The path's {name} as the OpenAPI description says it (_bad_name checks it).
HostName = Annotated[str, Field(json_schema_extra={"pattern": HOST_NAME})]

# An agent's time: RFC 3339 with its offset, in 2000-2099 (an `at` of 0, or of
# year 1, is a clock or a client gone wrong, not a phase change to record).
# The pattern says every valid date of those years and no other, so a client
# that keeps to the description is never refused.
_DAY = (r"(20[0-9]{2}-(0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])"
        r"|20[0-9]{2}-(0[469]|11)-(0[1-9]|[12][0-9]|30)"
        r"|20[0-9]{2}-02-(0[1-9]|1[0-9]|2[0-8])"
        r"|20(0[048]|[2468][048]|[13579][26])-02-29)")
RFC3339_TIME = (rf"^{_DAY}T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{{1,6}})?"
                r"(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$")


class JobIn(AgentInput):
    kind: Literal[JOB_KINDS]
    id: JsonInt = Field(..., ge=1, le=STORE_MAX)  # a job's id in the store (64-bit)


class BeatIn(AgentInput):
    phase: Literal[tuple(PHASES)]
    cell: str = Field("", max_length=300)
    job: JobIn | None = None
    commit: str = Field("", pattern=r"^([0-9a-f]{7,64})?$")
    detail: str = Field("", max_length=2000)
    at: str | None = Field(None, pattern=RFC3339_TIME,
                           description="when the host entered this state (the agent's clock, RFC "
                           "3339 with its offset, years 2000-2099; a beat sent late after an "
                           "outage says when it happened); never later than its arrival")


def instant(at: str | None) -> datetime | None:
    """A beat's `at` (RFC3339_TIME, so it parses) in UTC."""
    if at is None:
        return None
    return datetime.fromisoformat(at.replace("Z", "+00:00")).astimezone(dt_timezone.utc)


class JobOut(Schema):
    kind: str
    id: int


class BeatOut(Schema):
    """What a beat said (a host's state and each of its changes)."""
    phase: str
    phase_words: str
    cell: str
    job: JobOut | None
    commit: str
    detail: str


class ChangeOut(BeatOut):
    at: datetime


class HostStateOut(BeatOut):
    """A host's state as its agent beat it (not a run's host: results' HostOut)."""
    name: str
    since: datetime
    last_seen: datetime
    agent: str | None
    reachable: bool
    unreachable_since: datetime | None


class HostDetailOut(HostStateOut):
    changes: list[ChangeOut]


class HostsOut(Schema):
    count: int
    timeout_s: float
    items: list[HostStateOut]


def _bad_name(name: str) -> JsonResponse | None:
    if is_host_name(name):
        return None
    return JsonResponse({"error": f"host name {name[:100]!r} is not a host name: {HOST_NAME_RULE}",
                         "where": "path field name"}, status=400)


def _not_held(name: str, job: JobIn | None) -> JsonResponse | None:
    """The 409 for a beat naming a job of the server's queues (a bisect, a
    confirmation) that this host does not hold: none such, not running, or
    claimed for another host. A check's or a nightly's job is the agent's own."""
    if job is None or job.kind not in ("bisect", "confirmation"):
        return None
    from iowatch_web.regressions.models import BisectJob, ConfirmJob
    model = BisectJob if job.kind == "bisect" else ConfirmJob
    found = model.objects.filter(pk=job.id).values_list("state", "agent_host").first()
    if found == ("running", name):
        return None
    why = ("there is no such job" if found is None
           else f"it is {found[0]}" if found[0] != "running"
           else f"it runs on {found[1] or 'another host'}")
    return JsonResponse({"error": f"host {name} does not hold {job.kind} #{job.id}: {why}; a beat "
                         "names only a job its host claimed", "where": "body field job"}, status=409)


@router.post("/{name}/heartbeat", auth=AgentToken(),
             response={200: HostStateOut, 400: Error, 401: Error, 403: Error, 409: Error},
             summary="What the host is doing now (agents, every minute and at each phase change)")
def heartbeat(request, name: HostName, body: BeatIn):
    if bad := _bad_name(name):
        return bad
    if refused := grants.forbidden(request.auth, name, "path field name"):
        return refused
    if refused := _not_held(name, body.job):
        return refused
    host = beats.record(name, {**body.model_dump(), "at": instant(body.at)}, request.auth)
    return beats.state_of(host)


@router.get("", response={200: HostsOut}, summary="Every host's state, by name")
def list_hosts(request):
    items = beats.states()
    return {"count": len(items), "timeout_s": beats.timeout().total_seconds(), "items": items}


@router.get("/{name}", response={200: HostDetailOut, 400: Error, 404: Error},
            summary="One host's state and its newest phase changes")
def get_host(request, name: HostName):
    if bad := _bad_name(name):
        return bad
    host = found(HostState.objects.select_related("agent"), "host", name=name)
    return beats.state_of(host, changes=True)
