"""The give-back rule, written once for every queue agents claim from.

A running job whose host has stopped beating for longer than
IOWATCH_HEARTBEAT_TIMEOUT_S goes back to queued, so another agent (or the same
one when it comes back) claims it; a GiveBack row says why, for the job's page.
The agent that lost it is then refused (409) when it posts for the job late.

A job model fits when it has:
- `state`, holding "running" while an agent works on it and "queued" when
  it waits to be claimed (a queued job may keep a claimed_at);
- `agent`, a foreign key to results.Agent (null allowed): who claimed it;
- `agent_host`, the host name the agent claimed it for (the heartbeat's name);
- `claimed_at`, when it was claimed;
- optionally `updated`, set to the give-back's time.

BisectJob and ConfirmJob fit. The sweep and each claim call
`give_back_stuck(BisectJob, "bisect")` and `give_back_stuck(ConfirmJob,
"confirmation")`, and each call an agent posts for a job asks `refusal(job,
kind, request.auth, host)`.

A host's agent that starts again (after a crash or a reboot of the
controller) keeps beating, so the timeout never frees what it held: its
claims say `holds_none` (`iowatch agent` sends it: one agent a host, under the
host's lock), and `give_back_held` frees the host's running jobs first.

A host that has never beaten is judged from its claim: a job claimed for it
that long ago with no beat since goes back as well (an agent that claims and
dies, or claims for a host it never works, holds nothing for ever). The
claim counts as a sign of life: a host silent since yesterday that claims a
job now has the whole timeout from the claim.
"""
from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction
from django.db.models import Model, Q
from django.utils import timezone

from iowatch_web.hosts.beats import timeout
from iowatch_web.hosts.models import GiveBack, HostState

log = logging.getLogger(__name__)


def give_back_stuck(model: type[Model], kind: str, now: datetime | None = None) -> list[int]:
    """Put back on the queue every running `model` job whose host missed its
    heartbeat; returns their ids."""
    now = now or timezone.now()
    late = now - timeout()
    running = model.objects.filter(state="running", claimed_at__lt=late)
    # The host silent since the timeout, or one that never beat at all.
    running = running.filter(Q(agent_host__in=HostState.objects.filter(last_seen__lt=late).values("name"))
                             | ~Q(agent_host__in=HostState.objects.values("name")))
    jobs = list(running.select_related("agent"))
    last_seen = dict(HostState.objects.filter(name__in={j.agent_host for j in jobs})
                     .values_list("name", "last_seen"))
    return [job.pk for job in jobs if _give_back(
        model, kind, job, now,
        f"given back to the queue at {now:%Y-%m-%d %H:%M} UTC: host {job.agent_host or '(unnamed)'} "
        + (f"sent no heartbeat after {last_seen[job.agent_host]:%Y-%m-%d %H:%M:%S} UTC"
           if job.agent_host in last_seen else
           f"never sent a heartbeat since the claim at {job.claimed_at:%Y-%m-%d %H:%M:%S} UTC")
        + f" (the timeout is {timeout().total_seconds():.0f} s, IOWATCH_HEARTBEAT_TIMEOUT_S)")]


def _give_back(model: type[Model], kind: str, job: Model, now: datetime, reason: str) -> bool:
    """Queue the job again with the reason recorded; False when it moved meanwhile."""
    with transaction.atomic():
        # Only the claim seen here: a step or a new claim meanwhile keeps the job.
        fields = {f.name for f in model._meta.get_fields()}
        changed = {"state": "queued", **({"updated": now} if "updated" in fields else {}),
                   # The lost claim's steps were measured on its host: the next
                   # claim starts clean, and the give-back keeps them.
                   **({"steps": []} if "steps" in fields else {})}
        # Locked, as a step's post locks it: no step lands between this read and the reset.
        steps = (model.objects.select_for_update().filter(pk=job.pk)
                 .values_list("steps", flat=True).first() or [] if "steps" in fields else [])
        if not model.objects.filter(pk=job.pk, state="running", agent_host=job.agent_host,
                                    claimed_at=job.claimed_at).update(**changed):
            return False
        GiveBack.objects.create(job_kind=kind, job_id=job.pk, host=job.agent_host,
                                agent=job.agent, claimed_at=job.claimed_at, reason=reason, at=now,
                                steps=steps)
    log.warning("%s #%s %s", kind, job.pk, reason)
    return True


def give_back_held(model: type[Model], kind: str, host: str, agent,
                   now: datetime | None = None) -> list[int]:
    """Put back on the queue the running `model` jobs `agent` claimed for
    `host`, when it says (claiming with holds_none) that it holds none: it
    started again without them. Another agent's jobs are never touched.
    Returns their ids."""
    now = now or timezone.now()
    running = model.objects.filter(state="running", agent_host=host, agent=agent).select_related("agent")
    return [job.pk for job in running if _give_back(
        model, kind, job, now,
        f"given back to the queue at {now:%Y-%m-%d %H:%M} UTC: the agent of host {host} claimed "
        "again holding no job (it started again without this one)")]


def refusal(job: Model, kind: str, agent, host: str = "") -> str | None:
    """Why `agent` (on `host`, when it says) may no longer post for `job`, or
    None: the job was given back and waits for a claim, or another agent or
    host holds it now. The caller answers 409 with this text."""
    name = f"{kind} #{job.pk}"
    if job.state == "queued":
        back = GiveBack.objects.filter(job_kind=kind, job_id=job.pk).first()
        if back is not None:
            return (f"{name} was {back.reason}; it takes nothing from the agent that lost it "
                    f"until claimed again (POST /api/v1/{kind}s/claim)")
    if job.state == "running" and job.agent_id is not None:
        if job.agent_id != agent.pk or (host and job.agent_host and host != job.agent_host):
            held = f"agent {job.agent.name}" + (f" on host {job.agent_host}" if job.agent_host else "")
            back = GiveBack.objects.filter(job_kind=kind, job_id=job.pk).first()
            why = f" (it was {back.reason})" if back is not None else ""
            return (f"{name} is held by {held} since {job.claimed_at:%Y-%m-%d %H:%M:%S} UTC{why}: "
                    "this agent's claim is lost")
    return None


def given_back(kind: str, job_id: int):
    """A job's give-backs, newest first (the job's page shows them)."""
    return GiveBack.objects.filter(job_kind=kind, job_id=job_id).select_related("agent")
