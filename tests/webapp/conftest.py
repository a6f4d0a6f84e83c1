"""Fixtures for the web app's tests: an agent token, a poster, table counts.

The suite runs against whatever DATABASE_URL names (PostgreSQL in CI) and
against SQLite when it is unset; both must pass."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.apps import apps
from django.core.management import call_command

from bundle_maker import wire

WEBAPP_TESTS = __file__.rsplit("/", 1)[0]


def pytest_collection_modifyitems(items):
    for item in items:
        if str(item.path).startswith(WEBAPP_TESTS):
            item.add_marker(pytest.mark.webapp)


# The hosts the tests' agent acts for (create_agent --host): every host name
# the tests claim, beat or post for with agent_token.
LAB_HOSTS = ("lab-1", "lab-2", "lab-a", "lab-b", "lab-c", "host-a", "host-b", "vlab", "old-agent")


@pytest.fixture
def agent_token(db) -> str:
    out = StringIO()
    call_command("create_agent", "lab-agent", "--host", *LAB_HOSTS, stdout=out)
    return out.getvalue().strip()


def _shape(doc: dict) -> tuple:
    """A bundle's host and (cell, metric, group)s: what its calibration must cover."""
    return (doc["host"]["name"], tuple(sorted(
        (c["id"], s["metric"], s["group"]) for c in doc["cells"]
        for r in c["repetitions"][:1] for s in r["samples"])))


@pytest.fixture
def post(client, agent_token, request):
    """post(doc or bytes, token=…) → (status, JSON body) through the test client.

    A stored run's verdict work is then done at once by the queue's own worker
    (regressions.work.drain), as a worker beside the server would; judge=False
    leaves it queued. In a module that sets CALIBRATE_HOSTS = True, a bundle
    whose host and cells were not posted before is preceded by its host's
    calibration boots (bundle_maker.calibration_bundles): those modules' runs
    are one boot a side, and a host in service has a record of its noise
    between boots that such comparisons read (issue 41 item 1)."""
    from bundle_maker import calibration_bundles
    calibrate, seen = getattr(request.module, "CALIBRATE_HOSTS", False), set()

    def post(body, token: str | None = agent_token, judge: bool = True, **headers):
        if calibrate and isinstance(body, dict) and (body.get("trigger") or {}).get("kind") \
                != "calibration" and body.get("cells") and _shape(body) not in seen:
            seen.add(_shape(body))
            for boot in calibration_bundles(body):
                status, said = post(boot, token)
                assert status == 201, said
        if isinstance(body, dict):
            body = wire(body)
        if token is not None:
            headers["HTTP_AUTHORIZATION"] = f"Bearer {token}"
        headers.setdefault("content_type", "application/json")
        response = client.post("/api/v1/bundles", body, **headers)
        if judge and response.status_code == 201:
            from iowatch_web.regressions.work import drain
            drain()
        return response.status_code, json.loads(response.content)

    return post


@pytest.fixture
def calibrated(post):
    """calibrated(doc): before doc is posted, its host's calibration boots of the
    same cells and metrics (bundle_maker.calibration_bundles), once per shape:
    the record of the noise between boots a lab host in service has, which a
    comparison of one uploaded run a side reads (iowatch.judging.boots)."""
    from bundle_maker import calibration_bundles
    done = set()

    def calibrated(doc: dict) -> dict:
        shape = _shape(doc)
        if shape not in done:
            done.add(shape)
            for boot in calibration_bundles(doc):
                status, body = post(boot)
                assert status == 201, body
        return doc

    return calibrated


def table_counts() -> dict[str, int]:
    """Rows in every table of the results app."""
    return {m.__name__: m.objects.count() for m in apps.get_app_config("results").get_models()}


@pytest.fixture
def counts():
    return table_counts
