"""Concurrent uploads against a live server: each run stored exactly once."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from io import StringIO

import pytest
from django.core.management import call_command

from bundle_maker import make_bundle, wire
from iowatch_web.results.models import Cell, Run, Sample

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def upload(live_server):
    out = StringIO()
    call_command("create_agent", "lab-agent", stdout=out)
    token = out.getvalue().strip()

    def upload(body: bytes) -> tuple[int, dict]:
        request = urllib.request.Request(
            f"{live_server.url}/api/v1/bundles", data=body, method="POST",
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(request, timeout=120) as reply:
                return reply.status, json.loads(reply.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    return upload


def test_twenty_different_bundles_at_once_are_each_stored_once(upload):
    docs = [make_bundle(cells=4, samples=25, seed=i) for i in range(20)]
    with ThreadPoolExecutor(max_workers=20) as pool:
        replies = list(pool.map(upload, [wire(d) for d in docs]))
    assert [status for status, _ in replies] == [201] * 20, replies
    assert Run.objects.count() == 20
    for doc in docs:
        run = Run.objects.get(run_id=doc["run_id"])
        assert Cell.objects.filter(run=run).count() == 4
        values = sorted(Sample.objects.filter(cell__run=run).values_list("value", flat=True))
        assert values == sorted(s["value"] for c in doc["cells"] for r in c["repetitions"]
                                for s in r["samples"])


def test_the_same_bundle_posted_five_times_at_once_is_stored_once(upload):
    body = wire(make_bundle(cells=4, samples=25))
    with ThreadPoolExecutor(max_workers=5) as pool:
        replies = list(pool.map(upload, [body] * 5))
    assert sorted(status for status, _ in replies) == [200, 200, 200, 200, 201], replies
    assert {r["samples"] for _, r in replies} == {100}
    assert Run.objects.count() == 1 and Sample.objects.count() == 100
