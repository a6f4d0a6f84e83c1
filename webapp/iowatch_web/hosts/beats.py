"""A beat stored, and a host's state read with its reachability.

A host is reachable while its last beat is younger than
IOWATCH_HEARTBEAT_TIMEOUT_S; past that it is unreachable since its last beat
plus the timeout (the moment the server stopped expecting it to be alive)."""
from __future__ import annotations

from datetime import datetime, timedelta
from datetime import timezone as dt_timezone

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from iowatch.heartbeat import PHASES
from iowatch_web.hosts.models import KEPT_CHANGES, HostState, PhaseChange

SHOWN_CHANGES = 20


def timeout() -> timedelta:
    return timedelta(seconds=settings.IOWATCH_HEARTBEAT_TIMEOUT_S)


def record(name: str, beat: dict, agent, now: datetime | None = None) -> HostState:
    """Store one beat (phase, cell, job {kind, id} or None, commit, detail) of
    host `name`. A new phase starts `since` again; a new phase or job is a
    phase change, the oldest past KEPT_CHANGES dropped."""
    now = now or timezone.now()
    # When the state began, as the agent says (a beat held through an outage
    # arrives late), never after its arrival; the arrival is the sign of life.
    began = min(_utc(beat.get("at")) or now, now)
    job = beat.get("job") or {}
    fields = {"phase": beat["phase"], "cell": beat.get("cell") or "",
              "job_kind": job.get("kind", ""), "job_id": job.get("id"),
              "commit": beat.get("commit") or "", "detail": beat.get("detail") or ""}
    with transaction.atomic():
        # Locked: two beats of one host at once store one after the other (two
        # first beats meet at the unique name, and get_or_create reads the winner's).
        host, moved = HostState.objects.select_for_update().get_or_create(
            name=name, defaults={**fields, "since": began, "last_seen": now, "agent": agent})
        if not moved:
            moved = (host.phase, host.job_kind, host.job_id) != (
                fields["phase"], fields["job_kind"], fields["job_id"])
            if host.phase != fields["phase"]:
                host.since = began
            for k, v in fields.items():
                setattr(host, k, v)
            host.agent, host.last_seen = agent, now
            host.save()
        if moved:
            PhaseChange.objects.create(host=host, at=began, **fields)
            old = host.changes.order_by("-at", "-id").values_list("id", flat=True)[KEPT_CHANGES:]
            PhaseChange.objects.filter(id__in=list(old)).delete()
    return host


def _utc(at: datetime | None) -> datetime | None:
    """The agent's time in UTC: PostgreSQL keeps no offset past ±15:59, which
    RFC 3339 allows (+19:02 was a 500); an instant before year 1 in UTC is
    the earliest one the store takes."""
    if at is None:
        return None
    try:
        return at.astimezone(dt_timezone.utc)
    except OverflowError:
        return datetime.min.replace(tzinfo=dt_timezone.utc)


def reachability(host: HostState, now: datetime | None = None) -> tuple[bool, datetime | None]:
    """(reachable, unreachable_since): unreachable when the last beat is older
    than the timeout, since the last beat plus the timeout."""
    now = now or timezone.now()
    gone = host.last_seen + timeout()
    return (True, None) if gone > now else (False, gone)


def state_of(host: HostState, now: datetime | None = None, changes: bool = False) -> dict:
    """A host's state as the API and the pages give it; `changes`: with its
    newest SHOWN_CHANGES phase changes, newest first."""
    reachable, since_unreachable = reachability(host, now)
    state = {"name": host.name, "phase": host.phase, "phase_words": PHASES[host.phase],
             "cell": host.cell, "job": host.job, "commit": host.commit, "detail": host.detail,
             "since": host.since, "last_seen": host.last_seen,
             "agent": host.agent.name if host.agent_id else None,
             "reachable": reachable, "unreachable_since": since_unreachable}
    if changes:
        state["changes"] = [
            {"phase": c.phase, "phase_words": PHASES[c.phase], "cell": c.cell, "job": c.job,
             "commit": c.commit, "detail": c.detail, "at": c.at}
            for c in host.changes.all()[:SHOWN_CHANGES]]
    return state


def states(changes: bool = False) -> list[dict]:
    """Every host that has beaten, by name."""
    now = timezone.now()
    hosts = HostState.objects.select_related("agent")
    if changes:
        hosts = hosts.prefetch_related("changes")
    return [state_of(h, now, changes) for h in hosts]
