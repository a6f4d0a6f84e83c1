""""Add runs" on an unsure cell (issue 44; Perfherder's retrigger): the
button and POST /api/v1/confirmations/add-runs queue the repetitions the cell
needs within its cap, on its comparison's host, as a job the host's agent
claims through the confirmation queue."""
from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from bundle_maker import planted_bundle
from iowatch_web.regressions.models import ConfirmJob, StoredVerdict

pytestmark = pytest.mark.django_db(transaction=True)


def _unsure(post, base, candidate) -> StoredVerdict:
    for commit, values in ((1, base), (2, candidate)):
        doc = planted_bundle({"write.bw_kib_s": values}, started_at=f"2024-05-0{commit}T10:00:00Z",
                             kernel={"release": "6.12.0-iowatch", "git_commit": f"{commit:012x}"})
        assert post(doc)[0] == 201
    v = StoredVerdict.objects.get()
    assert v.outcome in ("inconclusive", "suspected"), v.words
    return v


@pytest.fixture
def maintainer() -> Client:
    c = Client()
    c.force_login(get_user_model().objects.create_user("maintainer", password="not-used-here"))
    return c


def test_the_api_queues_the_runs_the_cell_needs_and_the_hosts_agent_claims_them(
        post, client, maintainer, agent_token):
    v = _unsure(post, [960, 1000, 1040], [930, 970, 1010])
    assert v.needs_runs and v.base_n + v.needs_runs <= v.cap
    # Anonymous: refused, nothing queued.
    assert Client().post("/api/v1/confirmations/add-runs", json.dumps({"verdict": v.pk}),
                         content_type="application/json").status_code == 401
    response = maintainer.post("/api/v1/confirmations/add-runs", json.dumps({"verdict": v.pk}),
                               content_type="application/json")
    assert response.status_code == 200, response.content
    job = response.json()
    assert (job["purpose"], job["comparison"], job["regression"]) == ("add-runs", v.comparison_id, None)
    assert job["repetitions"] == v.needs_runs and job["host"] == "lab-1" and job["state"] == "queued"
    assert job["cells"] == [{"study": "f2fs-dio-write", "device_class": v.device_class,
                             "filesystem": v.filesystem, "group": v.group, "metric": "write.bw_kib_s"}]
    # Asked again: the open job is kept.
    again = maintainer.post("/api/v1/confirmations/add-runs", json.dumps({"verdict": v.pk}),
                            content_type="application/json").json()
    assert again["id"] == job["id"] and ConfirmJob.objects.count() == 1
    # The host's agent takes it from the confirmation queue.
    claim = client.post("/api/v1/confirmations/claim", json.dumps({"host": "lab-1"}),
                        content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {agent_token}")
    assert claim.status_code == 200, claim.content
    assert (claim.json()["id"], claim.json()["state"], claim.json()["purpose"]) == (
        job["id"], "running", "add-runs")


def test_past_the_cap_it_asks_for_the_runs_the_cap_leaves(post, maintainer):
    v = _unsure(post, [880, 1000, 1120], [850, 970, 1090])
    assert v.needs_runs is None
    job = maintainer.post("/api/v1/confirmations/add-runs", json.dumps({"verdict": v.pk}),
                          content_type="application/json").json()
    assert job["repetitions"] == v.cap - 3


def test_the_unsure_cell_has_the_button_and_a_decided_cell_is_refused(post, maintainer):
    v = _unsure(post, [960, 1000, 1040], [930, 970, 1010])
    page = maintainer.get("/").content.decode()
    assert f'action="/cells/{v.pk}/add-runs"' in page
    response = maintainer.post(f"/cells/{v.pk}/add-runs", follow=True)
    assert "more runs a side on lab-1, for its agent to take" in response.content.decode()
    assert ConfirmJob.objects.get().purpose == "add-runs"
    StoredVerdict.objects.filter(pk=v.pk).update(outcome="no-change")
    response = maintainer.post("/api/v1/confirmations/add-runs", json.dumps({"verdict": v.pk}),
                               content_type="application/json")
    assert response.status_code == 409 and "only an unsure or suspected cell" in response.json()["error"]


def _hand_back(client, agent_token, job_id: int, good: list[str], bad: list[str]):
    return client.post(f"/api/v1/confirmations/{job_id}/result",
                       json.dumps({"host": "lab-1", "state": "done", "good_runs": good, "bad_runs": bad}),
                       content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {agent_token}")


def test_the_added_runs_join_the_comparison_and_open_no_reversed_one(post, client, maintainer,
                                                                     agent_token):
    """A nightly-style pair (no series: the base is the kernel run before): the
    agent runs the good kernel again first (ABAB), then the bad one. The good
    kernel's new run comes after the bad kernel's first one, yet it is a rerun
    of the base, not a new kernel after the bad one: no comparison of bad
    against good is opened, and the one comparison is judged again with both
    new runs in its sides."""
    from iowatch_web.regressions.models import StoredComparison
    v = _unsure(post, [960, 1000, 1040], [930, 970, 1010])
    job = maintainer.post("/api/v1/confirmations/add-runs", json.dumps({"verdict": v.pk}),
                          content_type="application/json").json()
    client.post("/api/v1/confirmations/claim", json.dumps({"host": "lab-1"}),
                content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {agent_token}")
    runs = {}
    for side, commit, values, day in (("good", 1, [980, 1000, 1020, 990, 1010], 3),
                                      ("bad", 2, [900, 920, 880, 910, 890], 4)):
        doc = planted_bundle({"write.bw_kib_s": values}, started_at=f"2024-05-0{day}T10:00:00Z",
                             kernel={"release": "6.12.0-iowatch", "git_commit": f"{commit:012x}"})
        assert post(doc)[0] == 201
        runs[side] = [doc["run_id"]]
    done = _hand_back(client, agent_token, job["id"], runs["good"], runs["bad"])
    assert done.status_code == 200, done.content
    assert StoredComparison.objects.count() == 1, [
        (str(c.base_kernel), str(c.candidate_kernel)) for c in StoredComparison.objects.all()]
    again = StoredVerdict.objects.get()
    assert (again.comparison_id, again.base_n, again.candidate_n) == (v.comparison_id, 8, 8)
    (row,) = done.json()["verdicts"]
    assert (row["base_n"], row["candidate_n"], row["outcome"]) == (8, 8, again.outcome)


def test_runs_of_another_kernel_are_refused_with_the_reason(post, client, maintainer, agent_token):
    v = _unsure(post, [960, 1000, 1040], [930, 970, 1010])
    job = maintainer.post("/api/v1/confirmations/add-runs", json.dumps({"verdict": v.pk}),
                          content_type="application/json").json()
    client.post("/api/v1/confirmations/claim", json.dumps({"host": "lab-1"}),
                content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {agent_token}")
    runs = []
    for commit in (1, 3):  # the bad side's run is of a third commit
        doc = planted_bundle({"write.bw_kib_s": [1000, 990, 1010]}, started_at="2024-05-05T10:00:00Z",
                             kernel={"release": "6.12.0-iowatch", "git_commit": f"{commit:012x}"})
        assert post(doc)[0] == 201
        runs.append(doc["run_id"])
    refused = _hand_back(client, agent_token, job["id"], [runs[0]], [runs[1]])
    assert refused.status_code == 400, refused.content
    said = refused.json()["error"]
    assert f"bad run {runs[1]}: its kernel is 6.12.0-iowatch 000000000003" in said, said
    assert "cannot pool" in said
    assert ConfirmJob.objects.get().state == "running"
