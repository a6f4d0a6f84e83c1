"""What each lab host is doing, for the hosts page and the overview: the
heartbeat states (iowatch_web.hosts.beats) with a link for each job, and the
lab hosts that have runs but have never beaten.

Read on every request, never cached: a host's phase moves by the minute."""
from __future__ import annotations

from django.urls import reverse

from iowatch_web.hosts import beats
from iowatch_web.dashboard.run_numbers import device_state_rows
from iowatch_web.regressions.models import BisectJob, ConfirmJob
from iowatch_web.results.models import Device, Host, Run


def _job_urls(states: list[dict]) -> dict[tuple[str, int], str]:
    """(kind, id) → the page that shows the job: a bisect or a confirmation is
    shown on its regression's page."""
    urls = {}
    for kind, model, anchor in (("bisect", BisectJob, "#bisect"),
                                ("confirmation", ConfirmJob, "#confirmation")):
        ids = {s["job"]["id"] for s in states if s["job"] and s["job"]["kind"] == kind}
        ids |= {c["job"]["id"] for s in states for c in s.get("changes", ())
                if c["job"] and c["job"]["kind"] == kind}
        for pk, r in model.objects.filter(pk__in=ids).values_list("pk", "regression_id"):
            urls[kind, pk] = reverse("dashboard:regression", args=[r]) + anchor
    return urls


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


def devices_of(names) -> dict[str, list[dict]]:
    """Each host's devices (the inventory its runs sent) with their state as
    its newest run recorded it (firmware, wear, temperature, health), and that run."""
    out: dict[str, list[dict]] = {}
    states: dict[str, dict] = {}
    newest: dict[str, Run] = {}
    for name in names:
        run = (Run.objects.filter(host__name=name, published=False)
               .order_by("-received_at", "-id").first())
        if run is not None:
            newest[name] = run
            states[name] = {r["device"]: r for r in device_state_rows(run)}
    for d in Device.objects.filter(host__name__in=list(names)).select_related("host"):
        out.setdefault(d.host.name, []).append({
            "name": d.name, "device_class": d.device_class, "model": d.model, "path": d.path,
            "state": states.get(d.host.name, {}).get(d.name),
            "run": newest.get(d.host.name)})
    return out


def by_name() -> dict[str, dict]:
    return {s["name"]: s for s in host_states()}
