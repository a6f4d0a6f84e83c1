"""Nightly regressions and the bisect queue (issue 14; webapp/iowatch_web/regressions
nightly.py and bisect_api.py): nightly runs arrive through the ingest API, the
server's own verdict work opens one nightly regression per change and queues
its bisect; an agent claims it, posts steps and the result; the regression's
detail and page show them."""
from __future__ import annotations

import json
import threading
import uuid

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client

from bundle_maker import planted_bundle
from iowatch_web.regressions.models import BisectJob, StoredChangePoint, Regression
from iowatch_web.regressions.nightly import queue_bisect
from iowatch_web.results.models import Run

pytestmark = pytest.mark.django_db

# One run a kernel: the host is calibrated first (conftest.post, issue 41 item 1).
CALIBRATE_HOSTS = True


NOISE = [-10, 4, 10, -4, 0]


def nightly_bundle(night: int, bw: float) -> dict:
    """Night `night` of branch for-next: its own commit, write bandwidth about `bw`."""
    doc = planted_bundle({"write.bw_kib_s": [bw + night % 3 + e for e in NOISE]},
                         kernel={"release": f"6.13.0-rc{night}", "git_commit": f"{night + 1:040x}",
                                 "config_hash": "c0ffee"},
                         started_at=f"2024-05-{1 + night:02d}T02:00:00Z", matrix="nightly")
    doc.update(schema_version=2, trigger={"kind": "nightly", "branch": "for-next",
                                          "tree": "https://git.example.org/linux.git",
                                          "night": f"2024-05-{1 + night:02d}"})
    return doc


@pytest.fixture
def nights(post):
    """Ten nights, the write bandwidth falling from about 1000 to 700 KiB/s at night 6."""
    runs = []
    for night, bw in enumerate([1000] * 6 + [700] * 4):
        doc = nightly_bundle(night, bw)
        status, body = post(doc)
        assert status == 201, body
        runs.append(Run.objects.get(run_id=doc["run_id"]))
    return runs


def test_a_step_in_a_nightly_history_opens_one_nightly_regression_and_queues_its_bisect(nights, client):
    assert nights[6].trigger == {"kind": "nightly", "branch": "for-next",
                                 "tree": "https://git.example.org/linux.git", "night": "2024-05-07"}
    regression = Regression.objects.get()  # one change, one regression
    assert regression.kind == "nightly"
    c = regression.comparison
    assert (c.base_kernel, c.candidate_kernel) == (nights[5].kernel, nights[6].kernel)
    # The change points found later joined the night-over-night regression.
    assert StoredChangePoint.objects.filter(comparison=c, kernel=nights[6].kernel).exists()
    job = BisectJob.objects.get()
    assert (job.regression, job.state, job.origin) == (regression, "queued", "nightly")
    assert (job.good_commit, job.bad_commit) == (nights[5].kernel.git_commit, nights[6].kernel.git_commit)
    assert (job.study, job.group, job.metric_id) == ("f2fs-dio-write", "seqw", "write.bw_kib_s")

    detail = client.get(f"/api/v1/regressions/{regression.pk}").json()
    assert detail["kind"] == "nightly"
    assert detail["good"] == {"kernel": "6.13.0-rc5", "commit": f"{6:040x}",
                              "runs": [str(nights[5].run_id)]}
    assert detail["bad"] == {"kernel": "6.13.0-rc6", "commit": f"{7:040x}",
                             "runs": [str(nights[6].run_id)]}
    assert detail["bisect"]["state"] == "queued" and detail["bisect"]["steps"] == []
    cell = detail["cells"][0]
    assert (cell["study"], cell["device_class"], cell["device"], cell["host"], cell["filesystem"],
            cell["group"], cell["metric"]) == ("f2fs-dio-write", "sdcard", "sd0", "lab-1", "f2fs",
                                               "seqw", "write.bw_kib_s")
    assert [r["id"] for r in client.get("/api/v1/regressions?kind=nightly").json()["items"]] == \
        [regression.pk]
    assert client.get("/api/v1/regressions?kind=check").json()["items"] == []


def test_a_flat_nightly_history_opens_nothing(post):
    for night in range(8):
        assert post(nightly_bundle(night, 1000))[0] == 201
    assert not Regression.objects.exists() and not BisectJob.objects.exists()


# --- the agent's side ----------------------------------------------------------------

def api(client, method: str, path: str, body=None, token: str | None = None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    call = getattr(client, method)
    if method == "post":
        response = call(f"/api/v1/{path}", json.dumps(body or {}), content_type="application/json",
                        **headers)
    else:
        response = call(f"/api/v1/{path}", **headers)
    return response.status_code, (response.json() if response.content else None)


STEP = {"commit": "ab" * 20, "subject": "ext4: wait before each direct write",
        "author": "Ann Dev <ann@example.org>", "outcome": "bad", "median": 701.5,
        "unit": "KiB/s", "repetitions": 5, "run_ids": [str(uuid.uuid4())], "position": 0.97}


def test_claim_steps_and_result_round_trip(nights, client, agent_token):
    job = BisectJob.objects.get()
    status, claimed = api(client, "post", "bisects/claim", {"host": "vlab"}, agent_token)
    assert status == 200, claimed
    assert claimed["id"] == job.pk and claimed["regression"] == job.regression_id
    assert claimed["good"]["commit"] == nights[5].kernel.git_commit
    assert claimed["bad"]["runs"] == [str(nights[6].run_id)]
    assert claimed["cell"] == {"study": "f2fs-dio-write", "device_class": "sdcard",
                               "filesystem": "f2fs", "group": "seqw", "metric": "write.bw_kib_s",
                               "key": "f2fs-dio-write/sd0/f2fs"}
    assert (claimed["host"], claimed["matrix"]) == ("lab-1", "nightly")
    assert (claimed["tree"], claimed["branch"]) == ("https://git.example.org/linux.git", "for-next")
    assert api(client, "post", "bisects/claim", {"host": "vlab"}, agent_token)[0] == 204

    status, after = api(client, "post", f"bisects/{job.pk}/steps", STEP, agent_token)
    assert status == 200, after
    assert after["state"] == "running" and after["agent"] == "lab-agent"
    assert after["steps"][0]["median"] == 701.5 and after["steps"][0]["outcome"] == "bad"
    # The regression page shows the bisect's progress while it runs.
    page = client.get(f"/regressions/{job.regression_id}/").content.decode()
    # Its median as every page writes a value (iowatch.figures): 701.5 KiB/s is "702 KiB/s".
    assert "running" in page and "abababababab" in page and "702 KiB/s" in page

    result = {"state": "done", "first_bad": {"commit": "ab" * 20, "subject": STEP["subject"],
                                             "author": STEP["author"]},
              "candidates": [], "probability": 0.987, "skipped": ["cd" * 20], "error": None,
              "provenance": {"nightly": str(nights[6].run_id), "good_runs": [str(nights[5].run_id)],
                             "bad_runs": [str(nights[6].run_id)]}}
    status, done = api(client, "post", f"bisects/{job.pk}/result", result, agent_token)
    assert status == 200, done
    assert done["state"] == "done" and done["result"]["first_bad"]["subject"] == STEP["subject"]
    assert done["finished_at"] is not None
    detail = client.get(f"/api/v1/regressions/{job.regression_id}").json()
    assert detail["bisect"]["result"]["skipped"] == ["cd" * 20]
    assert detail["bisect"]["result"]["probability"] == 0.987  # the culprit model's, kept
    page = client.get(f"/regressions/{job.regression_id}/").content.decode()
    assert "first bad commit" in page and "ext4: wait before each direct write" in page
    assert "Ann Dev &lt;ann@example.org&gt;" in page  # escaped, as all untrusted text
    rows = client.get("/regressions/").content.decode()
    assert "bisect done" in rows

    # The e-mail names the first bad commit, the bisect and the nightly it came from.
    text = client.get(f"/api/v1/regressions/{job.regression_id}/report?format=text").content.decode()
    # 0-day's shape: the first bad commit's subject (with its subsystem), the metric, the class.
    title = text.split("\n", 1)[0]
    assert title.startswith("[iowatch] ext4: wait before each di...: write bandwidth -")
    assert title.endswith("% on sdcard") and len(title) <= 72
    # The body is folded at 72 columns: the lines are read with their words rejoined.
    words = " ".join(text.replace(" \\\n", " ").split())
    for line in (f'first bad commit: abababababab ("{STEP["subject"]}"), probability 98.7%',
                 f"found by:  bisect #{job.pk}",
                 f"nightly run {nights[6].run_id}", "skipped (did not build or boot): cdcdcdcdcdcd",
                 "abababababab bad, median 702 KiB/s, 5 repetitions",
                 f"iowatch bisect --good {nights[5].kernel.git_commit} --bad {nights[6].kernel.git_commit} "
                 "--source https://git.example.org/linux.git --matrix nightly --reps 5",
                 "iowatch nightly --branch for-next --source https://git.example.org/linux.git "
                 "--target lab-1 --matrix nightly --reps 5",
                 "nightly:       branch for-next, night of 2024-05-07"):
        assert " ".join(line.split()) in words, line

    # A finished job takes nothing more.
    assert api(client, "post", f"bisects/{job.pk}/steps", STEP, agent_token)[0] == 409
    status, answer = api(client, "post", f"bisects/{job.pk}/result", result, agent_token)
    assert status == 409 and "done" in answer["error"]
    assert [j["id"] for j in api(client, "get", "bisects?state=done")[1]["items"]] == [job.pk]
    assert api(client, "get", "bisects?state=queued")[1]["count"] == 0
    assert api(client, "get", "bisects?state=sleeping")[0] == 400
    assert api(client, "get", f"bisects/{job.pk}")[1]["state"] == "done"


def test_the_agent_calls_need_an_agent_token(nights, client):
    job = BisectJob.objects.get()
    assert api(client, "post", "bisects/claim", {"host": "vlab"})[0] == 401
    assert api(client, "post", "bisects/claim", {"host": "vlab"}, "not-a-token")[0] == 401
    assert api(client, "post", f"bisects/{job.pk}/steps", STEP)[0] == 401
    assert api(client, "post", f"bisects/{job.pk}/result", {"state": "failed", "error": "x"})[0] == 401
    job.refresh_from_db()
    assert job.state == "queued" and job.steps == []


@pytest.mark.parametrize("change, where", [
    ({"outcome": "maybe"}, "body field outcome"),
    ({"commit": "not a sha"}, "body field commit"),
    ({"median": "fast"}, "body field median"),
    ({"repetitions": -1}, "body field repetitions"),
    ({"run_ids": "one"}, "body field run_ids"),
    ({"subject": "ext4: \x00"}, "body field subject"),  # PostgreSQL keeps no NUL
    ({"author": "\udc00"}, "body field author"),
])
def test_a_bad_step_is_refused_naming_its_field(nights, client, agent_token, change, where):
    job = BisectJob.objects.get()
    status, answer = api(client, "post", f"bisects/{job.pk}/steps", {**STEP, **change}, agent_token)
    assert status == 400 and answer["where"] == where, answer
    job.refresh_from_db()
    assert job.steps == [] and job.state == "queued"


def test_a_bad_result_is_refused_naming_its_field(nights, client, agent_token):
    job = BisectJob.objects.get()
    for body, where in [({"state": "finished"}, "body field state"),
                        ({"state": "done"}, "body field first_bad"),
                        ({"state": "failed"}, "body field error"),
                        ({"state": "done", "first_bad": {"commit": "xyz"}}, "body field commit")]:
        status, answer = api(client, "post", f"bisects/{job.pk}/result", body, agent_token)
        assert status == 400 and answer["where"] == where, (body, answer)
    assert api(client, "post", "bisects/999999/steps", STEP, agent_token)[0] == 404
    assert api(client, "post", "bisects/claim", {}, agent_token)[0] == 400
    status, answer = api(client, "post", "bisects/claim", {"host": "V\x00"}, agent_token)
    assert status == 400 and answer["where"] == "body field host"
    job.refresh_from_db()
    assert job.state == "queued" and job.result is None


def test_nothing_queued_is_a_204(client, agent_token):
    status, body = api(client, "post", "bisects/claim", {"host": "vlab"}, agent_token)
    assert (status, body) == (204, None)


# --- the maintainer's side ---------------------------------------------------------------

def test_a_maintainer_queues_a_bisect_of_any_regression(post, client):
    from bundle_maker import planted_bundle as planted

    for n, bw in enumerate([1000, 500]):
        assert post(planted({"write.bw_kib_s": [bw + e for e in NOISE]},
                            kernel={"release": "6.12.0", "git_commit": f"{n + 1:012x}"},
                            started_at=f"2024-05-01T1{n}:00:00Z"))[0] == 201
    regression = Regression.objects.get()
    assert regression.kind == "ab" and not BisectJob.objects.exists()  # not nightly: nothing by itself
    anonymous = client.post(f"/api/v1/regressions/{regression.pk}/bisect", "{}",
                            content_type="application/json")
    assert anonymous.status_code == 401 and not BisectJob.objects.exists()

    maintainer = get_user_model().objects.create_user("maintainer")
    c = Client()
    c.force_login(maintainer)
    refused = c.post(f"/api/v1/regressions/{regression.pk}/bisect",
                     json.dumps({"cell": {"key": "nope", "group": "seqw", "metric": "write.bw_kib_s"}}),
                     content_type="application/json")
    assert refused.status_code == 400 and refused.json()["where"] == "body field cell"
    assert not BisectJob.objects.exists()
    response = c.post(f"/api/v1/regressions/{regression.pk}/bisect", json.dumps({"note": "please"}),
                      content_type="application/json")
    assert response.status_code == 200, response.content
    job = BisectJob.objects.get()
    assert (job.origin, job.requested_by, job.state) == ("maintainer", maintainer, "queued")
    # "bisecting" only once an agent has the job (test_the_bisect_moves_its_regression_...).
    assert response.json()["state"] == "new" and response.json()["bisect"]["id"] == job.pk
    assert response.json()["notes"] == "please"
    # Asking again keeps the open job; the page's form does the same.
    c.post(f"/api/v1/regressions/{regression.pk}/bisect", "{}", content_type="application/json")
    c.post(f"/regressions/{regression.pk}/", {"state": "bisecting"})
    assert BisectJob.objects.count() == 1
    page = c.get(f"/regressions/{regression.pk}/").content.decode()
    assert "queued" in page and 'value="bisecting"' in page


# --- two agents at once ---------------------------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_two_concurrent_claims_never_get_the_same_job(post, agent_token):
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL (SQLite serialises writers; the claim's "
                    "conditional update is tested there by the round trip)")
    for night, bw in enumerate([1000] * 2 + [500] * 2):
        assert post(nightly_bundle(night, bw))[0] == 201
    regression = Regression.objects.get()
    # More jobs than one regression may hold open: the other regressions' jobs.
    for n in range(5):
        other = Regression.objects.create(comparison=_copy(regression.comparison, n), kind="nightly")
        BisectJob.objects.create(regression=other, origin="nightly", cell_key="k", study="s",
                                 group="seqw", metric_id="write.bw_kib_s", good_kernel="a",
                                 bad_kernel="b")
    queued = BisectJob.objects.filter(state="queued").count()
    got, barrier = [], threading.Barrier(8)

    def agent():
        c = Client()
        barrier.wait()
        try:
            while True:
                status, body = api(c, "post", "bisects/claim", {"host": "vlab"}, agent_token)
                if status == 204:
                    return
                got.append(body["id"])
        finally:
            connection.close()

    threads = [threading.Thread(target=agent) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == sorted(set(got)) and len(got) == queued == 6


def _copy(comparison, n: int):
    from iowatch_web.regressions.models import StoredComparison
    from iowatch_web.results.models import Kernel

    kernel = Kernel.objects.create(release=f"copy-{n}")
    return StoredComparison.objects.create(reason="previous-run", host=comparison.host, matrix="nightly",
                                     base_kernel=comparison.base_kernel, candidate_kernel=kernel)


def test_the_bisect_moves_its_regression_and_the_log_names_the_agent(nights, client, agent_token):
    """Claimed: "bisecting"; done: "bisected" with the commit; a failed bisect
    puts it back where it was; a state a person closed is left alone."""
    job = BisectJob.objects.get()
    regression = job.regression
    assert regression.state == "new"
    assert api(client, "post", "bisects/claim", {"host": "vlab"}, agent_token)[0] == 200
    regression.refresh_from_db()
    assert regression.state == "bisecting"
    result = {"state": "done", "first_bad": {"commit": "ab" * 20, "subject": STEP["subject"],
                                             "author": STEP["author"]},
              "candidates": [], "skipped": [], "error": None}
    assert api(client, "post", f"bisects/{job.pk}/result", result, agent_token)[0] == 200
    regression.refresh_from_db()
    assert regression.state == "bisected"
    assert f"bisect #{job.pk}: first bad commit abababababab" in regression.notes
    events = api(client, "get", f"regressions/{regression.pk}")[1]["events"]
    assert [(e["user"], e["from_state"], e["to_state"]) for e in events] == [
        ("agent lab-agent", "new", "bisecting"), ("agent lab-agent", "bisecting", "bisected")]
    page = client.get(f"/regressions/{regression.pk}/").content.decode()
    assert "agent lab-agent" in page

    # A maintainer queues another one from "acknowledged"; it fails: back to "acknowledged".
    regression.state = "acknowledged"
    regression.save()
    again = queue_bisect(regression, origin="maintainer")
    assert api(client, "post", "bisects/claim", {"host": "vlab"}, agent_token)[1]["id"] == again.pk
    failed = {"state": "failed", "error": "the good kernel did not build"}
    assert api(client, "post", f"bisects/{again.pk}/result", failed, agent_token)[0] == 200
    regression.refresh_from_db()
    assert regression.state == "acknowledged" and "did not build" in regression.notes

    # Closed by a person while a third bisect ran: the result does not reopen it.
    third = queue_bisect(regression, origin="maintainer")
    api(client, "post", "bisects/claim", {"host": "vlab"}, agent_token)
    regression.refresh_from_db()
    regression.state = "fixed"
    regression.save()
    assert api(client, "post", f"bisects/{third.pk}/result", result, agent_token)[0] == 200
    regression.refresh_from_db()
    assert regression.state == "fixed"
