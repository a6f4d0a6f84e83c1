"""The LAVA client and the follower against recorded LAVA answers served over
HTTP (tests/lava/recorded_lava.py, fixtures/README.md): submit, follow to the
end, retry an infrastructure failure on another board of the type, a job
failure as the run's failure with LAVA's log, never another board class's job."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from iowatch import inventory
from iowatch.lava import client as lava_client
from iowatch.lava import definition, follow
from recorded_lava import RecordedLava

REPO_INVENTORY = Path(__file__).resolve().parents[2] / "hardware-inventory.yml"
API = "/api/v0.2/"


@pytest.fixture
def lava():
    with RecordedLava() as server:
        yield server


@pytest.fixture
def host():
    return inventory.load(REPO_INVENTORY).host("lava-qemu")


def job_def(host):
    m = definition.Measurement("jobs/smoke.yml", "a" * 40, "good", "http://iowatch.example.org/")
    return definition.make(host, m, token="agent-token")


def answer_job_4211(lava):
    lava.answer("POST", API + "jobs/", "submit-201.json", status=201)
    lava.finished_job(4211, "job-4211-submitted.json", "job-4211-running.json", "job-4211-complete.json",
                      tests=("tests-4211-page1.json", "tests-4211-page2.json"), logs="logs-4211.yaml")


def test_a_job_is_submitted_followed_to_its_end_and_read(lava, host):
    answer_job_4211(lava)
    said = []
    c = lava_client.LavaClient(lava.url, "lava-token")
    run = follow.run_job(c, host, job_def(host), poll_s=0, sleep=lambda s: None, say=said.append)
    assert (run.state, run.board, run.exit_status) == ("done", "qemu-01", 0)
    assert run.run_id == "3f1c2a9e-7b4d-4c21-9a55-0e6f1d2c8b71"
    assert run.log_url == f"{lava.url}api/v0.2/jobs/4211/logs/" and run.job_url == f"{lava.url}scheduler/job/4211"
    assert said[1:] == ["lava: job 4211: submitted", "lava: job 4211: running on qemu-01",
                        "lava: job 4211: finished on qemu-01"]
    # the definition went to LAVA whole, token in its secrets, with LAVA's token header
    post = lava.requests[0]
    assert post["authorization"] == "Token lava-token"
    sent = json.loads(post["body"])["definition"]
    assert "IOWATCH_TOKEN: agent-token" in sent and "device_type: qemu" in sent


def test_cases_read_every_page_with_their_suites(lava):
    answer_job_4211(lava)
    cases = lava_client.LavaClient(lava.url, None).cases(4211)
    assert [(c.suite, c.name, c.result) for c in cases] == [
        ("lava", "validate", "pass"), ("lava", "auto-login-action", "pass"),
        ("0_iowatch", "iowatch-run", "pass"), ("lava", "job", "pass")]
    assert cases[2].measurement == 0.0 and cases[1].metadata["duration"] == "12.30"


def test_an_infrastructure_error_is_tried_again_on_another_board_of_the_type(lava, host):
    answer_job_4211(lava)   # the retry
    lava.submits(4212, 4211)
    lava.finished_job(4212, "job-4212-incomplete.json", tests=("tests-4212.json",))
    lava.answer("GET", API + "devices/?device_type=qemu", "devices-qemu.json")
    said = []
    run = follow.run_job(lava_client.LavaClient(lava.url, "t"), host, job_def(host), poll_s=0,
                         sleep=lambda s: None, say=said.append)
    assert run.state == "done" and run.board == "qemu-01" and run.job_id == 4211
    assert [(a.job_id, a.board, a.infrastructure is not None) for a in run.attempts] == [
        (4212, "qemu-02", True), (4211, "qemu-01", False)]
    assert any("infrastructure error on qemu-02: trying again on another qemu board (qemu-01 usable)" in s
               for s in said)


def test_an_infrastructure_error_with_no_other_usable_board_is_the_runs_failure(lava, host):
    lava.submits(4212)
    lava.finished_job(4212, "job-4212-incomplete.json", tests=("tests-4212.json",))
    lava.answer("GET", API + "devices/?device_type=qemu", "devices-qemu.json")
    c = lava_client.LavaClient(lava.url, "t")
    # qemu-01 is the only other usable board; with it failed too there is none left
    assert follow.other_boards(c, "qemu", {"qemu-02"}) == ["qemu-01"]
    assert follow.other_boards(c, "qemu", {"qemu-02", "qemu-01"}) == []
    run = follow.run_job(c, host, job_def(host), retries=0, poll_s=0, sleep=lambda s: None, say=lambda s: None)
    assert run.state == "infrastructure" and len(run.attempts) == 1
    assert "Unable to download file:///var/lib/iowatch/lava/disks/blank-2147483648.img.xz" in run.detail
    assert run.log_url.endswith("/api/v0.2/jobs/4212/logs/")


def test_a_kernel_that_never_reaches_the_test_is_boot_failed_with_lavas_reason(lava, host):
    lava.submits(4213)
    lava.finished_job(4213, "job-4213-incomplete.json", tests=("tests-4213.json",))
    run = follow.run_job(lava_client.LavaClient(lava.url, "t"), host, job_def(host), poll_s=0,
                         sleep=lambda s: None, say=lambda s: None)
    assert run.state == "boot-failed" and run.run_id is None
    assert run.detail == ("the job ended Incomplete before iowatch ran: "
                          "auto-login-action timed out after 600 seconds")
    assert "job 4213 on qemu-01: boot-failed" in run.line() and run.log_url in run.line()


def test_a_job_of_another_board_class_is_never_read_as_this_hosts(lava, host):
    lava.submits(4214)
    lava.answer("GET", API + "jobs/4214/", "job-4214-other-type.json")
    with pytest.raises(lava_client.LavaError, match="ran on device type rk3399-gru-kevin, not qemu of host "
                                                    "lava-qemu"):
        follow.run_job(lava_client.LavaClient(lava.url, "t"), host, job_def(host), poll_s=0,
                       sleep=lambda s: None, say=lambda s: None)


def test_a_refused_submission_says_lavas_message(lava):
    lava.answer("POST", API + "jobs/", "submit-400.json", status=400)
    with pytest.raises(lava_client.LavaError, match=r"\(400\): Problem with submitted job data: Invalid YAML"):
        lava_client.LavaClient(lava.url, "t").submit("job_name: x")


def test_boards_show_as_the_hosts_page_names_them(lava):
    lava.answer("GET", API + "devices/?device_type=qemu", "devices-qemu.json")
    boards = lava_client.LavaClient(lava.url, None).boards("qemu")
    assert [(b.hostname, b.label, b.usable) for b in boards] == [
        ("qemu-01", "idle", True), ("qemu-02", "running", True), ("qemu-03", "bad health", False),
        ("qemu-04", "offline", False)]


def test_logs_before_any_are_empty_and_a_dead_server_is_named(lava):
    assert lava_client.LavaClient(lava.url, None).logs(9999) == []
    with pytest.raises(lava_client.LavaError, match="LAVA at http://127.0.0.1:9/api/v0.2/jobs/1/ did not answer"):
        lava_client.LavaClient("http://127.0.0.1:9", None, timeout=2).job(1)
