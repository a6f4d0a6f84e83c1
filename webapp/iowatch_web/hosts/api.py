"""/api/v1/hosts: agents tell what their host is doing; anyone reads it.

POST /hosts/{name}/heartbeat takes an agent's ingest token and a body
{phase, cell, job: {kind, id} | null, commit, detail}, the phases and job kinds
being iowatch.heartbeat's. A malformed field is a 400 naming it, no token a
401. GET /hosts and /hosts/{name} give each host's state with `reachable` and
`unreachable_since` (iowatch_web.hosts.beats)."""
from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Literal

from django.http import JsonResponse
from django.shortcuts import get_object_or_404
from ninja import Field, Router, Schema
from pydantic import AwareDatetime

from iowatch.heartbeat import JOB_KINDS, PHASES
from iowatch_web.hosts import beats
from iowatch_web.hosts.models import HostState
from iowatch_web.site.api import AgentInput, AgentToken, Error
from iowatch_web.results.bounds import STORE_MAX

router = Router(tags=["hosts"])

# The inventory's host names (a DNS label, dotted), as the runs carry them.
HOST_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
# The path's {name} as the OpenAPI description says it (_bad_name checks it).
HostName = Annotated[str, Field(json_schema_extra={"pattern": HOST_NAME.pattern})]


class JobIn(AgentInput):
    kind: Literal[JOB_KINDS]
    id: int = Field(..., ge=1, le=STORE_MAX)  # a job's id in the store (64-bit)


class BeatIn(AgentInput):
    phase: Literal[tuple(PHASES)]
    cell: str = Field("", max_length=300)
    job: JobIn | None = None
    commit: str = Field("", pattern=r"^([0-9a-f]{7,64})?$")
    detail: str = Field("", max_length=2000)
    at: AwareDatetime | None = Field(None, description="when the host entered this state (the "
                                "agent's clock; a beat sent late after an outage says when it "
                                "happened); never later than its arrival")


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


class HostOut(BeatOut):
    name: str
    since: datetime
    last_seen: datetime
    agent: str | None
    reachable: bool
    unreachable_since: datetime | None


class HostDetailOut(HostOut):
    changes: list[ChangeOut]


class HostsOut(Schema):
    count: int
    timeout_s: float
    items: list[HostOut]


def _bad_name(name: str) -> JsonResponse | None:
    if HOST_NAME.match(name):
        return None
    return JsonResponse({"error": f"host name {name[:100]!r} is not a host name: letters, digits, "
                                  "'.', '_' and '-', at most 200", "where": "path field name"},
                        status=400)


@router.post("/{name}/heartbeat", auth=AgentToken(),
             response={200: HostOut, 400: Error, 401: Error},
             summary="What the host is doing now (agents, every minute and at each phase change)")
def heartbeat(request, name: HostName, body: BeatIn):
    if bad := _bad_name(name):
        return bad
    host = beats.record(name, body.model_dump(), request.auth)
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
    host = get_object_or_404(HostState.objects.select_related("agent"), name=name)
    return beats.state_of(host, changes=True)
