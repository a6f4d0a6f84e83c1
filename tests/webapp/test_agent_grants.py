"""Agents act only for the hosts granted to them (issue 42 item 1;
iowatch_web.hosts.grants): a second agent is refused (403, naming the host)
for another host's claims, heartbeats, steps, results and give-back; a
result from an agent that did not claim the job is refused; an admin
cancels a job and its agent is told 409 cancelled on its next post."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from iowatch_web.hosts.models import GiveBack, HostState
from iowatch_web.regressions.models import BisectJob, ConfirmJob
from test_confirmations import _result, regression  # noqa: F401 (regression: a fixture)
from test_heartbeat import BEAT, RESULT, STEP, call, job, token_of  # noqa: F401 (job: a fixture)
from test_nightly_bisect import nightly_bundle

pytestmark = pytest.mark.django_db
# test_confirmations' regression is one boot a side: the hosts keep a record (conftest.post).
CALIBRATE_HOSTS = True


def test_a_second_agent_is_refused_for_a_host_not_its_own(client, job):
    a, b = token_of("agent-a", "host-a"), token_of("agent-b", "host-b")
    assert call(client, "post", "hosts/host-a/heartbeat", {"phase": "claiming"}, a)[0] == 200
    assert call(client, "post", "bisects/claim", {"host": "host-a"}, a)[1]["id"] == job.pk
    assert call(client, "post", f"bisects/{job.pk}/steps", {**STEP, "host": "host-a"}, a)[0] == 200

    # B claims as host A, saying it holds nothing: refused, and A keeps its job.
    for path in ("bisects/claim", "confirmations/claim"):
        status, said = call(client, "post", path, {"host": "host-a", "holds_none": True}, b)
        assert status == 403 and said["where"] == "body field host", said
        assert "agent agent-b may not act for host host-a: it acts for host-b" in said["error"]
    job.refresh_from_db()
    assert (job.state, job.agent.name, job.agent_host) == ("running", "agent-a", "host-a")
    assert not GiveBack.objects.exists() and len(job.steps) == 1

    # B beats as host A: refused; A's host still says A's state.
    status, said = call(client, "post", "hosts/host-a/heartbeat", BEAT, b)
    assert status == 403 and said["where"] == "path field name" and "host host-a" in said["error"]
    state = HostState.objects.get(name="host-a")
    assert (state.phase, state.agent.name) == ("claiming", "agent-a")

    # B's step and result naming host A: refused, nothing stored.
    for path, body in ((f"bisects/{job.pk}/steps", STEP), (f"bisects/{job.pk}/result", RESULT)):
        status, said = call(client, "post", path, {**body, "host": "host-a"}, b)
        assert status == 403 and "host host-a" in said["error"], said
    # ... and without a host: the job is A's claim (409 names who holds it).
    status, said = call(client, "post", f"bisects/{job.pk}/result", RESULT, b)
    assert status == 409 and "held by agent agent-a on host host-a" in said["error"], said

    # B's own give-back (its host, holding none) leaves A's job alone.
    assert call(client, "post", "bisects/claim", {"host": "host-b", "holds_none": True}, b)[0] == 204
    job.refresh_from_db()
    assert job.state == "running" and job.agent.name == "agent-a" and len(job.steps) == 1
    # A's own give-back frees it.
    assert call(client, "post", "bisects/claim", {"host": "host-a", "holds_none": True}, a)[0] == 200
    assert GiveBack.objects.get().agent.name == "agent-a"


def test_a_result_from_an_agent_that_did_not_claim_the_job_is_refused(client, regression):
    (job,) = ConfirmJob.objects.all()
    assert (job.host, job.state) == ("lab-2", "queued")
    failed = {"state": "failed", "error": "a lie"}
    # An agent of another host: 403 naming the job's host.
    response = _result(client, token_of("agent-x", "lab-9"), job.pk, failed)
    assert response.status_code == 403 and "host lab-2" in response.json()["error"], response.json()
    # An agent of the job's host that did not claim it: 409, claim it first.
    y, z = token_of("agent-y", "lab-2"), token_of("agent-z", "lab-2")
    response = _result(client, y, job.pk, failed)
    assert response.status_code == 409 and "claim it first" in response.json()["error"]
    job.refresh_from_db()
    assert job.state == "queued" and job.error is None
    # Claimed by Y: Z's result is refused, Y's is taken.
    assert call(client, "post", "confirmations/claim", {"host": "lab-2"}, y)[1]["id"] == job.pk
    response = _result(client, z, job.pk, failed)
    assert response.status_code == 409 and "held by agent agent-y" in response.json()["error"]
    assert _result(client, y, job.pk, {**failed, "error": "did not boot"}).status_code == 200
    job.refresh_from_db()
    assert (job.state, job.error) == ("failed", "did not boot")


def test_an_agent_with_no_host_granted_may_upload_and_nothing_more(client, post):
    """An agent made before hosts were recorded (the migration grants none)."""
    old = token_of("old-agent")
    status, said = call(client, "post", "hosts/lab-1/heartbeat", BEAT, old)
    assert status == 403 and said["error"].startswith("agent old-agent may act for no host yet"), said
    assert "iowatch manage grant_hosts old-agent HOST" in said["error"]
    assert call(client, "post", "bisects/claim", {"host": "lab-1"}, old)[0] == 403
    assert post(nightly_bundle(0, 1000), token=old)[0] == 201
    out = StringIO()
    call_command("grant_hosts", "old-agent", "lab-1", stdout=out)
    assert out.getvalue().strip() == "old-agent acts for: lab-1"
    assert call(client, "post", "hosts/lab-1/heartbeat", BEAT, old)[0] == 200


def test_create_agent_records_its_hosts_and_the_admin_and_the_list_show_them(admin_client):
    out = StringIO()
    call_command("create_agent", "lab-9", "--host", "lab-b", "lab-a", stdout=out)
    call_command("list_agents", stdout=out)
    assert "\thosts lab-a,lab-b" in out.getvalue()
    page = admin_client.get("/admin/results/agent/").content.decode()
    assert "lab-a, lab-b" in page
    with pytest.raises(CommandError, match="not a host name: 'lab 1'"):
        call_command("create_agent", "lab-10", "--host", "lab 1", stdout=out)
    with pytest.raises(CommandError, match=r"not a host name: 'lab-1\\n'"):
        call_command("grant_hosts", "lab-9", "lab-1\n", stdout=out)


def test_an_admin_cancels_a_bisect_and_its_agent_is_told_409_cancelled(client, job, agent_token):
    status, claimed = call(client, "post", "bisects/claim", {"host": "lab-1"}, agent_token)
    assert status == 200 and claimed["id"] == job.pk
    assert call(client, "post", f"bisects/{job.pk}/steps", {**STEP, "host": "lab-1"}, agent_token)[0] == 200
    assert job.regression.__class__.objects.get(pk=job.regression_id).state == "bisecting"
    out = StringIO()
    call_command("cancel_job", "bisect", str(job.pk), "--reason", "marked invalid", stdout=out)
    assert "cancelled by" in out.getvalue() and "marked invalid" in out.getvalue()
    for path, body in ((f"bisects/{job.pk}/steps", STEP), (f"bisects/{job.pk}/result", RESULT)):
        status, said = call(client, "post", path, {**body, "host": "lab-1"}, agent_token)
        assert status == 409 and said["where"] == "cancelled" and "marked invalid" in said["error"], said
    job.refresh_from_db()
    assert job.state == "cancelled" and len(job.steps) == 1 and job.result is None
    # The regression is no longer being bisected; a finished job is not cancelled again.
    assert job.regression.__class__.objects.get(pk=job.regression_id).state != "bisecting"
    with pytest.raises(CommandError, match="is cancelled"):
        call_command("cancel_job", "bisect", str(job.pk), stdout=out)


def test_the_admin_action_cancels_a_confirmation(admin_client, client, regression):
    (job,) = ConfirmJob.objects.all()
    token = token_of("agent-2", "lab-2")
    assert call(client, "post", "confirmations/claim", {"host": "lab-2"}, token)[1]["id"] == job.pk
    response = admin_client.post("/admin/regressions/confirmjob/",
                                 {"action": "cancel_jobs", "_selected_action": [job.pk]})
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.state == "cancelled" and "(admin)" in job.error
    response = _result(client, token, job.pk, {"state": "failed", "error": "x"})
    assert response.status_code == 409 and response.json()["where"] == "cancelled"
    assert BisectJob.objects.filter(state="cancelled").count() == 0
