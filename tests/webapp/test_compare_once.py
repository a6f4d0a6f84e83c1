"""A large compare is computed once, by the verdict worker, never in a request
(issue 42 item 2; dashboard/compare_work.py): the first readers are told
"being computed" (HTTP 202, a page that refreshes), however many ask one
computation is queued, and the answer, once made, is every reader's.

IOWATCH_COMPARE_INLINE_CELLS is set to 0 here so the two small runs count as
large; the 100,000-cell case against a served store is test_compare_served.py."""
from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from bundle_maker import planted_bundle
from iowatch_web.dashboard import compare_page, compare_work
from iowatch_web.regressions.models import CompareAnswer
from iowatch_web.regressions.work import drain

NOISE = [-4, 2, 4, -2, 0]
READERS = 4
# The two runs are one boot a side: their host keeps a record of its noise between boots.
CALIBRATE_HOSTS = True


def _sides(post) -> dict:
    a = planted_bundle({"write.bw_kib_s": [1000 + e for e in NOISE]}, cells=3,
                       kernel={"release": "6.11.0", "git_commit": "a" * 12, "config_hash": "c"})
    b = planted_bundle({"write.bw_kib_s": [500 + e for e in NOISE]}, cells=3,
                       kernel={"release": "6.12.0", "git_commit": "b" * 12, "config_hash": "c"})
    for doc in (a, b):
        assert post(doc)[0] == 201
    return {"base": a["run_id"], "candidate": b["run_id"]}


def _compare_tasks() -> int:
    return DBTaskResult.objects.filter(task_path=compare_work.compute_answer.module_path).count()


@pytest.fixture
def large(settings):
    settings.IOWATCH_COMPARE_INLINE_CELLS = 0


@pytest.mark.django_db(transaction=True)
def test_a_large_compare_is_queued_not_computed_in_the_request(post, client, large):
    sides = _sides(post)
    cold = client.get("/dashboard/api/compare", sides)
    assert cold.status_code == 202 and cold["Retry-After"] == str(compare_work.REFRESH_S)
    assert cold.json()["state"] == "computing" and cold.json()["cells"] == 6
    page = client.get("/compare", sides)
    assert page.status_code == 202
    text = page.content.decode()
    assert 'id="compare-computing"' in text and 'http-equiv="refresh"' in text
    assert "Verdict:" not in text
    assert _compare_tasks() == 1 and CompareAnswer.objects.get().state == "queued"

    assert drain() == 1  # the verdict worker's turn
    done = client.get("/dashboard/api/compare", sides).json()
    assert done["computed"]["times"] == 1
    assert done["state"] == "regression"
    assert done["cells"] == compare_page.compare(sides["base"], sides["candidate"])["cells"]
    page = client.get("/compare", sides)
    assert page.status_code == 200 and "Verdict:" in page.content.decode()
    assert _compare_tasks() == 1  # read again, not computed again


@pytest.mark.django_db(transaction=True)
def test_concurrent_first_readers_share_one_computation(post, large):
    sides = _sides(post)
    statuses: list[int] = []
    start = threading.Barrier(READERS)

    def read() -> None:
        try:
            start.wait()
            statuses.append(Client().get("/dashboard/api/compare", sides).status_code)
        finally:
            connection.close()

    readers = [threading.Thread(target=read) for _ in range(READERS)]
    for t in readers:
        t.start()
    for t in readers:
        t.join()
    print(f"{READERS} cold readers answered {sorted(statuses)}")
    assert statuses == [202] * READERS
    assert CompareAnswer.objects.count() == 1 and _compare_tasks() == 1
    drain()
    assert Client().get("/dashboard/api/compare", sides).json()["computed"]["times"] == 1


@pytest.mark.django_db(transaction=True)
def test_a_failed_computation_is_said_and_asking_again_tries_again(post, client, large,
                                                                   monkeypatch):
    sides = _sides(post)
    assert client.get("/dashboard/api/compare", sides).status_code == 202

    def broken(base, candidate):
        raise RuntimeError("the store went away")

    monkeypatch.setattr(compare_page, "compare", broken)
    drain()
    failed = client.get("/dashboard/api/compare", sides)
    assert failed.status_code == 500 and "the store went away" in failed.json()["error"]
    page = client.get("/compare", sides)
    assert page.status_code == 500 and "the store went away" in page.content.decode()
    assert _compare_tasks() == 1
    # A while later, a read queues it again.
    CompareAnswer.objects.update(
        computed_at=timezone.now() - timedelta(seconds=compare_work.FAILED_SHOWN_S + 1))
    assert client.get("/dashboard/api/compare", sides).status_code == 202 and _compare_tasks() == 2
    monkeypatch.undo()
    drain()
    assert client.get("/dashboard/api/compare", sides).json()["computed"]["times"] == 1


@pytest.mark.django_db(transaction=True)
def test_a_small_compare_is_answered_in_its_own_request(post, client):
    sides = _sides(post)
    answer = client.get("/dashboard/api/compare", sides)
    assert answer.status_code == 200 and answer.json()["computed"]["times"] == 1
    assert _compare_tasks() == 0
