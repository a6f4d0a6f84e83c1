"""A second host's confirmation of a regression (webapp/iowatch_web/regressions
confirm.py and confirm_api.py): a nightly regression on one bare-metal host
queues a confirmation on another host of the class; its agent claims it, the
runs it uploads are judged by the server; the detail and the mail say what
came of it. The agent's side, against a live server: tests/nightly/test_agent.py."""
from __future__ import annotations

import pytest
from django.urls import reverse

from bundle_maker import planted_bundle
from iowatch_web.regressions.models import ConfirmJob, Regression

pytestmark = pytest.mark.django_db

# One run a kernel: the host is calibrated first (conftest.post, issue 41 item 1).
CALIBRATE_HOSTS = True


NOISE = [-10, 4, 10, -4, 0]
GOOD, BAD = f"{5:040x}", f"{6:040x}"


def lab_bundle(host: str, commit: str, bw: float, *, night: int | None = None,
               trigger: dict | None = None) -> dict:
    doc = planted_bundle({"write.bw_kib_s": [bw + e for e in NOISE]},
                         kernel={"release": f"6.13.0-{commit[-1]}", "git_commit": commit,
                                 "config_hash": "c0ffee"},
                         started_at=f"2024-05-{1 + (night or 0):02d}T02:00:00Z", matrix="nightly",
                         host=host)
    doc["host"]["kind"] = "bare-metal"
    doc["schema_version"] = 2
    if night is not None:
        doc["trigger"] = {"kind": "nightly", "branch": "for-next", "night": f"2024-05-{1 + night:02d}"}
    if trigger is not None:
        doc["trigger"] = trigger
    return doc


@pytest.fixture
def regression(post) -> Regression:
    """lab-2 is known to have an SD card; then lab-1's nights fall from 1000 to 700 KiB/s."""
    assert post(lab_bundle("lab-2", GOOD, 1000))[0] == 201
    for night, (commit, bw) in enumerate([(GOOD, 1000), (BAD, 700)]):
        assert post(lab_bundle("lab-1", commit, bw, night=night))[0] == 201
    return Regression.objects.get()


def _claim(client, token, host):
    return client.post("/api/v1/confirmations/claim", {"host": host}, content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {token}")


def _result(client, token, job_id, body):
    return client.post(f"/api/v1/confirmations/{job_id}/result", body, content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {token}")


def _confirm_runs(post, job_id: int, regression_id: int, bad_bw: float) -> dict:
    runs = {"good_runs": [], "bad_runs": []}
    for side, commit, bw in (("good", GOOD, 1000), ("bad", BAD, bad_bw)) * 2:
        doc = lab_bundle("lab-2", commit, bw, trigger={"kind": "confirm", "regression": regression_id,
                                                       "job": job_id, "side": side})
        assert post(doc)[0] == 201
        runs[f"{side}_runs"].append(doc["run_id"])
    return runs


def test_a_lab_regression_waits_for_the_second_host_and_is_confirmed(regression, client, agent_token, post):
    (job,) = ConfirmJob.objects.all()
    assert (job.host, job.device_class, job.state, job.rounds) == ("lab-2", "sdcard", "queued", 2)
    assert job.cells == [{"study": "f2fs-dio-write", "device_class": "sdcard", "filesystem": "f2fs",
                          "group": "seqw", "metric": "write.bw_kib_s"}]
    detail = client.get(f"/api/v1/regressions/{regression.pk}").json()
    assert detail["confirmation"]["state"] == "pending"
    page = client.get(reverse("dashboard:regression", args=[regression.pk])).content.decode()
    assert "Awaiting confirmation on lab-2 (queued)." in page
    mail = client.get(f"/api/v1/regressions/{regression.pk}/report?format=email")
    assert mail.status_code == 409 and "awaiting confirmation on lab-2" in mail.json()["error"]
    assert client.get(f"/api/v1/regressions/{regression.pk}/report?format=email&unconfirmed=true"
                      ).status_code == 200
    assert _claim(client, agent_token, "lab-1").status_code == 204  # not lab-1's to confirm
    claimed = _claim(client, agent_token, "lab-2")
    assert claimed.status_code == 200 and claimed.json()["state"] == "running"
    assert claimed.json()["good"] == {"kernel": "6.13.0-5", "commit": GOOD}
    assert _claim(client, agent_token, "lab-2").status_code == 204  # one agent holds it

    not_a_run = _result(client, agent_token, job.pk, {"state": "done", "good_runs": ["nope"],
                                                      "bad_runs": ["nope2"]})
    assert not_a_run.status_code == 400 and "good_runs" in not_a_run.json()["where"]
    unknown = "00000000-0000-4000-8000-000000000001"
    refused = _result(client, agent_token, job.pk, {"state": "done", "good_runs": [unknown],
                                                    "bad_runs": [unknown]})
    assert refused.status_code == 400 and "upload them first" in refused.json()["error"]
    assert _result(client, agent_token, job.pk, {"state": "done"}).status_code == 400
    assert _result(client, agent_token, job.pk, {"state": "failed"}).json()["where"] == "body field error"

    runs = _confirm_runs(post, job.pk, regression.pk, bad_bw=700)
    # The confirmation's runs are no side of an ordinary verdict: still one regression.
    assert Regression.objects.count() == 1
    done = _result(client, agent_token, job.pk, {"state": "done", **runs})
    assert done.status_code == 200, done.content
    body = done.json()
    assert (body["state"], body["outcome"]) == ("done", "confirmed")
    (row,) = body["verdicts"]
    assert row["outcome"] == "regression" and row["change_pct"] == pytest.approx(-30, abs=1)
    assert (row["base_n"], row["candidate_n"]) == (10, 10)
    conf = client.get(f"/api/v1/regressions/{regression.pk}").json()["confirmation"]
    assert conf["words"] == "confirmed on 2 of 2 hosts (lab-1, lab-2)"
    mail = client.get(f"/api/v1/regressions/{regression.pk}/report?format=email")
    assert mail.status_code == 200
    assert "second host: confirmed on 2 of 2 hosts (lab-1, lab-2)" in mail.content.decode()
    page = client.get(reverse("dashboard:regression", args=[regression.pk])).content.decode()
    assert "Confirmed on 2 of 2 hosts (lab-1, lab-2)." in page
    assert '<td>lab-2</td><td><span class="chip regression">regression</span>' in page
    again = _result(client, agent_token, job.pk, {"state": "done", **runs})
    assert again.status_code == 409 and again.json()["where"] == "confirmation state"


def test_a_change_the_second_host_does_not_show_is_only_on_the_first(regression, client, agent_token, post):
    (job,) = ConfirmJob.objects.all()
    assert _claim(client, agent_token, "lab-2").status_code == 200
    runs = _confirm_runs(post, job.pk, regression.pk, bad_bw=1000)
    assert _result(client, agent_token, job.pk, {"state": "done", **runs}).json()["outcome"] == "not-confirmed"
    conf = client.get(f"/api/v1/regressions/{regression.pk}").json()["confirmation"]
    assert conf["state"] == "only-here"
    assert conf["words"].startswith("only on lab-1: not reproduced on lab-2: write.bw_kib_s ")


def test_a_failed_confirmation_says_why(regression, client, agent_token):
    (job,) = ConfirmJob.objects.all()
    _claim(client, agent_token, "lab-2")
    r = _result(client, agent_token, job.pk, {"state": "failed", "error": "the bad kernel did not boot"})
    assert r.status_code == 200
    conf = client.get(f"/api/v1/regressions/{regression.pk}").json()["confirmation"]
    assert conf["state"] == "failed" and "the bad kernel did not boot" in conf["words"]


def test_without_a_second_host_the_mail_says_why_it_is_unconfirmed(post, client):
    for night, (commit, bw) in enumerate([(GOOD, 1000), (BAD, 700)]):
        assert post(lab_bundle("lab-1", commit, bw, night=night))[0] == 201
    regression = Regression.objects.get()
    assert not ConfirmJob.objects.exists()
    conf = client.get(f"/api/v1/regressions/{regression.pk}").json()["confirmation"]
    assert conf == {"state": "unconfirmable", "jobs": [],
                    "words": "not confirmed on a second host: the lab has no other host with a "
                             "sdcard device"}
    mail = client.get(f"/api/v1/regressions/{regression.pk}/report?format=email")
    assert mail.status_code == 200 and "second host: not confirmed on a second host" in mail.content.decode()


def test_a_lab_agent_claims_only_its_own_hosts_bisects_of_its_classes(regression, client, agent_token):
    def claim(**body):
        return client.post("/api/v1/bisects/claim", body, content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {agent_token}")
    bad = claim(host="lab-2", device_classes=["floppy"])
    assert bad.status_code == 400 and "unknown device class floppy" in bad.content.decode()
    assert claim(host="lab-2", device_classes=["sdcard"], own_only=True).status_code == 204
    assert claim(host="lab-1", device_classes=["hdd"]).status_code == 204
    taken = claim(host="lab-1", device_classes=["sdcard"], own_only=True)
    assert taken.status_code == 200 and taken.json()["regression"] == regression.pk


def test_the_list_refuses_an_unknown_state_and_its_description_names_the_states(regression, client):
    (job,) = ConfirmJob.objects.all()
    assert [j["id"] for j in client.get("/api/v1/confirmations?state=queued").json()["items"]] == [job.pk]
    refused = client.get("/api/v1/confirmations?state=sleeping")
    assert refused.status_code == 400
    assert refused.json() == {"error": "state 'sleeping' is not one of queued, running, done, failed, cancelled",
                              "where": "query field state"}
    operation = client.get("/api/v1/openapi.json").json()["paths"]["/api/v1/confirmations"]["get"]
    (state,) = [p for p in operation["parameters"] if p["name"] == "state"]
    assert ["queued", "running", "done", "failed", "cancelled"] in [s.get("enum") for s in
                                                       [state["schema"], *state["schema"].get("anyOf", [])]]
