"""A stored run's verdict work is on a durable queue (regressions/work.py).

- storing a run queues its work in the same transaction; the run says
  "pending" in the API and on its page until a worker has done it;
- a try that fails is retried, then marked failed with the reason, and
  `manage.py verdicts --retry-failed` queues it again once the cause is fixed;
- a server killed (-9) right after the commit loses nothing: the verdict
  arrives when a server with its worker is back;
- a verdict worker killed (-9) in the middle of a task: its task is given back
  and done by the next worker.
The last two run real server and worker processes on a scratch database."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.core.management import call_command
from django_tasks_db.models import DBTaskResult

from bundle_maker import calibration_bundles, planted_bundle, wire
from live_server import (create_agent, free_port, get_json, manage, running_server,
                         scratch_database)
from iowatch_web.regressions.models import StoredVerdict, StoredComparison, Regression
from iowatch_web.regressions.work import drain
from iowatch_web.results.models import Run

REPO = Path(__file__).resolve().parents[2]
NOISE = [-4, 2, 4, -2, 0]


def pair() -> list[dict]:
    """Two nights of one host: the second 30% slower (a regression). One boot
    each: the host's calibration (calibrate) records its noise between boots."""
    return [planted_bundle({"write.bw_kib_s": [level + e for e in NOISE]},
                           started_at=f"2024-05-0{i + 1}T02:00:00Z",
                           kernel={"release": "6.12.0", "git_commit": f"{i + 1:012x}"})
            for i, level in enumerate((1000, 700))]


def calibrate(post, doc: dict) -> None:
    """The host's calibration boots of doc's cells, their own (empty) work done."""
    for boot in calibration_bundles(doc):
        status, body = post(boot)
        assert status == 201, body


def test_a_stored_run_is_pending_until_the_worker_makes_its_verdict(post, client):
    base, slow = pair()
    calibrate(post, base)
    for doc in (base, slow):
        status, body = post(doc, judge=False)
        assert status == 201, body
    run = Run.objects.get(run_id=slow["run_id"])
    assert run.verdict_state == "pending" and not StoredComparison.objects.exists()
    # One queue entry per run, stored with it.
    queued = DBTaskResult.objects.filter(status="READY")
    assert sorted(e.args_kwargs["args"][0] for e in queued) == sorted(
        Run.objects.filter(run_id__in=[base["run_id"], slow["run_id"]]).values_list("pk", flat=True))
    api = json.loads(client.get(f"/api/v1/runs/{slow['run_id']}").content)
    assert api["verdict"]["state"] == "pending"
    assert "pending: queued for the verdict worker" in client.get(
        f"/runs/{slow['run_id']}/").content.decode()

    assert drain() == 2
    run.refresh_from_db()
    assert run.verdict_state == "done" and run.verdict_attempts == 1
    assert Regression.objects.count() == 1
    assert StoredVerdict.objects.get().outcome == "regression"
    api = json.loads(client.get(f"/api/v1/runs/{slow['run_id']}").content)
    assert api["verdict"]["state"] == "done" and api["verdict"]["done_at"]
    health = json.loads(client.get("/api/v1/health").content)
    assert health["verdicts_open"] == 0

    # Idempotent: the work done again replaces what it stored, no duplicates.
    verdicts = sorted(StoredVerdict.objects.values_list("metric_id", "outcome", "change_pct"))
    call_command("verdicts", "--now", stdout=open(os.devnull, "w"))
    from iowatch_web.regressions.work import judge_run
    judge_run.call(run.pk)  # a done run: nothing to do
    Run.objects.filter(pk=run.pk).update(verdict_state="pending")
    judge_run.call(run.pk)
    assert sorted(StoredVerdict.objects.values_list("metric_id", "outcome", "change_pct")) == verdicts
    assert Regression.objects.count() == 1


def test_a_failing_try_is_retried_then_marked_failed_with_why(post, client, settings, tmp_path):
    base, slow = pair()
    calibrate(post, base)
    for doc in (base, slow):
        status, body = post(doc, judge=False)
        assert status == 201, body
    # The study files the verdicts read are broken after the runs were stored.
    broken = tmp_path / "studies"
    broken.mkdir()
    (broken / "f2fs-dio-write.yml").write_text("study: f2fs-dio-write\nmetrics: [oops\n")
    settings.IOWATCH_STUDIES = str(broken)
    settings.IOWATCH_VERDICT_RETRY_S = 0
    settings.IOWATCH_VERDICT_ATTEMPTS = 3
    drain()
    run = Run.objects.get(run_id=slow["run_id"])
    assert run.verdict_state == "failed" and run.verdict_attempts == 3
    assert "all 3 tries failed" in run.verdict_error and "f2fs-dio-write.yml" in run.verdict_error
    assert DBTaskResult.objects.filter(status="FAILED").count() == 6  # 3 tries × 2 runs
    api = json.loads(client.get(f"/api/v1/runs/{slow['run_id']}").content)
    assert api["verdict"]["state"] == "failed" and "f2fs-dio-write.yml" in api["verdict"]["error"]
    page = client.get(f"/runs/{slow['run_id']}/").content.decode()
    assert "failed" in page and "--retry-failed" in page

    settings.IOWATCH_STUDIES = str(REPO / "jobs" / "studies")
    call_command("verdicts", "--retry-failed", "--now", stdout=open(os.devnull, "w"))
    run.refresh_from_db()
    assert run.verdict_state == "done" and run.verdict_error == ""
    assert Regression.objects.count() == 1


def _post(url: str, token: str, doc: dict) -> int:
    req = urllib.request.Request(f"{url}/api/v1/bundles", data=wire(doc), method="POST",
                                 headers={"Content-Type": "application/json",
                                          "Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.status


def _wait_done(url: str, run_id: str, timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        run = get_json(f"{url}/api/v1/runs/{run_id}")
        if run["verdict"]["state"] in ("done", "failed") or time.monotonic() > deadline:
            return run
        time.sleep(0.5)


@pytest.fixture
def scratch_store():
    """(environment, agent token) of a migrated scratch database for real
    processes, its host calibrated (pair's cells), the calibration's work done."""
    with scratch_database() as env:
        token = create_agent(env, "lab")
        with running_server(env, args=("--no-worker",)) as (url, _):
            for boot in calibration_bundles(pair()[0]):
                assert _post(url, token, boot) == 201
        manage(env, "verdicts", "--now")
        yield env, token


@pytest.mark.slow
def test_a_server_killed_right_after_the_commit_loses_no_verdict(scratch_store):
    base, slow = pair()
    env, token = scratch_store
    port = free_port()
    with running_server(env, port=port, args=("--no-worker",)) as (url, proc):
        assert _post(url, token, base) == 201
        assert _post(url, token, slow) == 201
        os.killpg(proc.pid, signal.SIGKILL)  # the whole server, at once
        proc.wait()
    # What the dead server left: both runs stored, their work queued.
    states = manage(env, "verdicts")
    assert "2 pending" in states, states
    with running_server(env, port=port) as (url, _):
        run = _wait_done(url, slow["run_id"])
        assert run["verdict"]["state"] == "done", run
        regressions = get_json(f"{url}/api/v1/regressions")
        assert regressions["count"] == 1, regressions


HANG = """
import time
import iowatch_web.regressions.verdicts as v
from iowatch_web.regressions import work
def hang(run):
    print("working", flush=True)
    time.sleep(600)
v.verdicts_for_run = hang  # judge_run imports it at call time
work.drain()
"""


@pytest.mark.slow
def test_a_worker_killed_in_the_middle_of_a_task_gives_it_back(scratch_store):
    base, slow = pair()
    env, token = scratch_store
    with running_server(env, args=("--no-worker",)) as (url, _):
        assert _post(url, token, base) == 201
        manage(env, "verdicts", "--now")  # the base's own work, done
        assert _post(url, token, slow) == 201
    denv = {**env, "DJANGO_SETTINGS_MODULE": "iowatch_web.site.settings"}
    worker = subprocess.Popen([sys.executable, "-m", "django", "shell", "-c", HANG],
                              env=denv, stdout=subprocess.PIPE, text=True)
    try:
        lines = iter(worker.stdout.readline, "")  # the shell prints its own lines first
        assert "working" in (line.strip() for line in lines)
        assert "1 running" in manage(env, "verdicts")
    finally:
        worker.kill()  # SIGKILL: no chance to clean up
        worker.wait()
    out = manage(env, "verdicts", "--now")
    assert "given back by dead workers" in out and "0 pending, 0 running" in out, out
    assert "1 failed" not in out
    with running_server(env, args=("--no-worker",)) as (url, _):
        run = get_json(f"{url}/api/v1/runs/{slow['run_id']}")
        assert run["verdict"]["state"] == "done" and run["verdict"]["attempts"] == 2, run
        assert get_json(f"{url}/api/v1/regressions")["count"] == 1


@pytest.mark.parametrize("window, steps", [(6, 0), (60, 1)])
def test_change_points_read_a_bounded_window_of_the_history(post, monkeypatch, window, steps):
    """Ten nightly kernels, a step down at the fourth; only the last night is
    judged. Its window of 6 kernels is all after the step (nothing to find);
    a window of 60 holds the whole history and finds the step."""
    import iowatch_web.regressions.verdicts as verdicts
    monkeypatch.setattr(verdicts, "CHANGE_POINT_WINDOW", window)
    for night in range(10):
        level = 1000 if night < 3 else 700
        doc = planted_bundle({"write.bw_kib_s": [level + e for e in NOISE]},
                             started_at=f"2024-05-{night + 1:02d}T02:00:00Z", matrix="nightly",
                             kernel={"release": "6.12.0", "git_commit": f"{night + 1:012x}"})
        status, body = post(doc, judge=False)
        assert status == 201, body
    last = Run.objects.get(run_id=doc["run_id"])
    Run.objects.exclude(pk=last.pk).update(verdict_state="done")
    DBTaskResult.objects.exclude(args_kwargs__args=[last.pk]).delete()
    assert drain() == 1
    assert StoredComparison.objects.filter(reason="change-point").count() == steps


PAUSE_IN_JUDGING = """
import os, time
from django.core.management import call_command
import iowatch_web.regressions.verdicts as v
judged = v.verdicts_for_run
def paused(run):
    if not os.path.exists({go!r}):
        print("judging", flush=True)
        while not os.path.exists({go!r}):
            time.sleep(0.1)
    return judged(run)
v.verdicts_for_run = paused  # judge_run imports it at call time
call_command("verdict_worker", "--no-startup-delay", "--interval", "0.2")
"""


def _restart_database(env: dict, down_s: float = 3.0, then=None) -> None:
    """What a PostgreSQL restart does to the store's clients: every connection
    of the scratch database killed (pg_terminate_backend), and none taken for
    down_s seconds. The shared cluster itself keeps running."""
    import psycopg
    from urllib.parse import urlsplit

    parts = urlsplit(env["DATABASE_URL"])
    dbname = parts.path.lstrip("/")
    with psycopg.connect(parts._replace(path="/postgres").geturl(), autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{dbname}" ALLOW_CONNECTIONS false')
        try:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                         "WHERE datname = %s AND pid <> pg_backend_pid()", (dbname,))
            if then:
                then()
            time.sleep(down_s)
        finally:
            conn.execute(f'ALTER DATABASE "{dbname}" ALLOW_CONNECTIONS true')


def _post_until_stored(url: str, token: str, doc: dict, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            assert _post(url, token, doc) == 201
            return
        except urllib.error.HTTPError as e:  # a server worker's first request after the restart
            if e.code != 503 or time.monotonic() > deadline:
                raise


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("DATABASE_URL"), reason="a restart of PostgreSQL")
def test_a_database_restart_neither_ends_the_worker_nor_spends_a_try(scratch_store, tmp_path):
    import queue
    import threading

    base, slow = pair()
    env, token = scratch_store
    go = tmp_path / "go"
    denv = {**env, "DJANGO_SETTINGS_MODULE": "iowatch_web.site.settings"}
    with running_server(env, args=("--no-worker",)) as (url, _):
        assert _post(url, token, base) == 201
        manage(env, "verdicts", "--now")  # the base's own work, done
        worker = subprocess.Popen(
            [sys.executable, "-m", "django", "shell", "-c", PAUSE_IN_JUDGING.format(go=str(go))],
            env=denv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in iter(worker.stdout.readline, "")],
                         daemon=True).start()
        output = []

        def wait_for(word: str, timeout: float = 60) -> None:
            deadline = time.monotonic() + timeout
            while word not in " ".join(output):
                try:
                    output.append(lines.get(timeout=max(0.1, deadline - time.monotonic())))
                except queue.Empty:
                    raise AssertionError(f"no {word!r} from the worker: {output}") from None

        try:
            wait_for("Starting worker")
            # 1. The restart while the worker looks for work.
            _restart_database(env)
            time.sleep(2)  # a few of its polls against the store that came back
            assert worker.poll() is None, output
            # 2. The restart in the middle of judging a run.
            _post_until_stored(url, token, slow)
            wait_for("judging")
            _restart_database(env, then=go.touch)
            run = _wait_done(url, slow["run_id"])
            assert run["verdict"]["state"] == "done", (run, output)
            assert run["verdict"]["attempts"] == 1, (run, output)  # no try spent on the restart
            assert get_json(f"{url}/api/v1/regressions")["count"] == 1
            assert worker.poll() is None, output
            wait_for("the database answers again", timeout=5)
        finally:
            worker.kill()
            worker.wait()
