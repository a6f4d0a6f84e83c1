"""What each lab host is doing, for the hosts page and the overview: the
heartbeat states (iowatch_web.hosts.beats) with a link for each job, and the
lab hosts that have runs but have never beaten.

Read on every request, never cached: a host's phase moves by the minute."""
from __future__ import annotations

from django.urls import reverse

from iowatch_web.hosts import beats
from iowatch_web.regressions.models import BisectJob
from iowatch_web.results.models import Host


def _job_urls(states: list[dict]) -> dict[tuple[str, int], str]:
    """(kind, id) → the page that shows the job; a bisect is shown on its regression's page."""
    ids = {s["job"]["id"] for s in states if s["job"] and s["job"]["kind"] == "bisect"}
    ids |= {c["job"]["id"] for s in states for c in s.get("changes", ())
            if c["job"] and c["job"]["kind"] == "bisect"}
    regressions = BisectJob.objects.filter(pk__in=ids).values_list("pk", "regression_id")
    return {("bisect", pk): reverse("dashboard:regression", args=[r]) + "#bisect"
            for pk, r in regressions}


def _linked(beat: dict, urls: dict) -> dict:
    job = beat["job"]
    return {**beat, "job_url": urls.get((job["kind"], job["id"])) if job else None}


def host_states(changes: bool = False) -> list[dict]:
    """Every host that has beaten, with `job_url` (and its changes' too)."""
    states = beats.states(changes)
    urls = _job_urls(states)
    return [{**_linked(s, urls),
             "changes": [_linked(c, urls) for c in s.get("changes", ())]} for s in states]


def silent_hosts(beating: list[dict]) -> list[str]:
    """The lab hosts with runs that have never beaten (their agents predate the heartbeat)."""
    names = {s["name"] for s in beating}
    return [n for n in Host.objects.exclude(kind="published").values_list("name", flat=True)
            if n not in names]


def by_name() -> dict[str, dict]:
    return {s["name"]: s for s in host_states()}
