"""The verdict work of a stored run, on a durable queue.

Storing a run enqueues its verdict work in the upload's own transaction
(results.signals.run_stored), so a run is never stored without it: a server
killed right after the commit leaves the queue entry, and a worker does it.
The work (regressions.verdicts.verdicts_for_run) is idempotent: it recomputes
and replaces what it stores, so doing it twice is harmless.

Why django-tasks' database backend (django_tasks_db) and not procrastinate:
procrastinate holds its queue in PostgreSQL only (PL/pgSQL functions,
LISTEN/NOTIFY), and the embedded default store is SQLite; the database
backend keeps the queue as rows of the store's own database on both, and its
API is the one Django itself adopted (django.tasks). What it lacks is written
here, small: retries with a growing wait, giving a task back when its worker
died, and the state a run's page and the API show (Run.verdict_state:
pending, running, done, failed with verdict_error).
"""
from __future__ import annotations

import logging
import os
import socket
import time
import traceback
from datetime import timedelta

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone
from django_tasks import task
from django_tasks.base import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from iowatch_web.hosts.giveback import give_back_stuck
from iowatch_web.regressions.models import BisectJob, ConfirmJob
from iowatch_web.results.models import Run

log = logging.getLogger(__name__)

QUEUE = "verdicts"
OPEN = ("pending", "running")

# What a lost database raises; whether it was lost says store_was_lost().
STORE_ERRORS = (OperationalError, InterfaceError)
# A try that loses the store this often is counted after all (a store that
# keeps dropping this one task's connection is not restarting).
MAX_STORE_LOSSES = 20
STORE_WAIT_S, STORE_WAIT_MAX_S = 0.5, 15.0


class WorkerLost(Exception):
    """The worker running a verdict task stopped (killed, or its machine went away)."""


def enqueue(run: Run, delay_s: float = 0) -> None:
    """Queue the run's verdict work. Inside the storing transaction, it commits
    or rolls back with the run."""
    queued = judge_run
    if delay_s:
        queued = judge_run.using(run_after=timezone.now() + timedelta(seconds=delay_s))
    result = queued.enqueue(run.pk)
    Run.objects.filter(pk=run.pk).update(verdict_task=result.id)


def store_was_lost() -> bool:
    """After a database error: whether the connection itself is gone (the
    store restarting, a backend killed), not the query refused. SQLite's
    connection is always usable: its errors are never a lost store."""
    return connection.connection is None or not connection.is_usable()


def wait_for_store(why: str) -> None:
    """Drop the lost connection and block until a new one answers."""
    log.warning("verdict worker: the database was lost (%s); waiting for it", why)
    wait = STORE_WAIT_S
    while True:
        try:
            connection.close()
        except STORE_ERRORS:
            pass  # closing a dead connection may fail too; it is dropped anyway
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
        except STORE_ERRORS:
            time.sleep(wait)
            wait = min(wait * 2, STORE_WAIT_MAX_S)
            continue
        log.warning("verdict worker: the database answers again")
        return


@task(queue_name=QUEUE)
def judge_run(run_pk: int) -> str:
    """Make (or remake) the run's verdicts and change points. A database lost
    on the way (a restart) is waited for and the work done again in the same
    try: it is not the run's failure, so it spends none of its tries."""
    losses = 0
    while True:
        try:
            return _judge_run(run_pk)
        except STORE_ERRORS as e:
            losses += 1
            if losses > MAX_STORE_LOSSES or not store_was_lost():
                raise
            wait_for_store(" ".join(str(e).split()) or type(e).__name__)


def _judge_run(run_pk: int) -> str:
    from iowatch_web.regressions.verdicts import verdicts_for_run

    # "running" already: this try began before the store was lost, and counted.
    if not Run.objects.filter(pk=run_pk, verdict_state="running").exists():
        started = Run.objects.filter(pk=run_pk).exclude(verdict_state="done").update(
            verdict_state="running", verdict_attempts=F("verdict_attempts") + 1)
        if not started:
            return "nothing to do: the run is gone or its verdict is done"
    run = Run.objects.select_related("host", "kernel", "kernel__series").get(pk=run_pk)
    try:
        comparisons = verdicts_for_run(run)
    except Exception as e:
        if not (isinstance(e, STORE_ERRORS) and store_was_lost()):
            _failed(run, "".join(traceback.format_exception_only(e)).strip())
        raise
    Run.objects.filter(pk=run_pk).update(verdict_state="done", verdict_error="",
                                         verdict_done_at=timezone.now())
    return f"{len(comparisons)} comparison(s)"


def _failed(run: Run, why: str) -> None:
    """After a failed try: another one after a growing wait, or none left."""
    attempts = settings.IOWATCH_VERDICT_ATTEMPTS
    if run.verdict_attempts < attempts:
        delay = settings.IOWATCH_VERDICT_RETRY_S * 2 ** (run.verdict_attempts - 1)
        with transaction.atomic():
            Run.objects.filter(pk=run.pk).update(
                verdict_state="pending",
                verdict_error=f"try {run.verdict_attempts} of {attempts} failed, "
                              f"retrying in {delay:.0f} s: {why}")
            enqueue(run, delay_s=delay)
        log.warning("verdicts of run %s: try %d failed, retrying in %.0f s: %s",
                    run.run_id, run.verdict_attempts, delay, why)
    else:
        Run.objects.filter(pk=run.pk).update(
            verdict_state="failed",
            verdict_error=f"all {attempts} tries failed; the last: {why} "
                          "(fix the cause, then: manage.py verdicts --retry-failed)")
        log.error("verdicts of run %s failed %d times, giving up: %s", run.run_id, attempts, why)


def worker_id() -> str:
    """host:pid, so a worker on the same machine can tell a dead one's tasks."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{timezone.now():%H%M%S}"


def _dead_here(worker: str) -> bool:
    """A worker of this machine whose process is gone."""
    host, _, rest = worker.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname()[:40] or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def sweep() -> int:
    """Give back the work a dead or stalled worker held, and queue any open run
    that has no live queue entry; returns how many runs were queued again.

    A task is given back when its worker was on this machine and its process is
    gone, or when it has run for IOWATCH_VERDICT_STALL_S (a worker on another
    machine that stopped answering). The same pass gives back the bisect jobs
    whose host stopped beating (iowatch_web.hosts.giveback)."""
    give_back_stuck(BisectJob, "bisect")
    give_back_stuck(ConfirmJob, "confirmation")
    stalled_before = timezone.now() - timedelta(seconds=settings.IOWATCH_VERDICT_STALL_S)
    requeued = 0
    running = DBTaskResult.objects.filter(status=TaskResultStatus.RUNNING,
                                          task_path=judge_run.module_path)
    for entry in running:
        last = entry.worker_ids[-1] if entry.worker_ids else ""
        if not (_dead_here(last) or (entry.started_at and entry.started_at < stalled_before)):
            continue
        with transaction.atomic():
            # Only if still running: a worker that finished meanwhile keeps its result.
            if not DBTaskResult.objects.filter(pk=entry.pk, status=TaskResultStatus.RUNNING) \
                    .select_for_update().exists():
                continue
            entry.set_failed(WorkerLost(f"worker {last} stopped during the task"))
            run = Run.objects.filter(pk=entry.args_kwargs["args"][0]).first()
            if run is not None and run.verdict_state in OPEN:
                _lost(run, f"the worker {last} stopped during try {run.verdict_attempts}")
                requeued += 1
    live = DBTaskResult.objects.filter(
        status__in=[TaskResultStatus.READY, TaskResultStatus.RUNNING]).values("id")
    orphans = Run.objects.filter(Q(verdict_task__isnull=True) | ~Q(verdict_task__in=live),
                                 verdict_state__in=OPEN)
    for run in orphans:
        with transaction.atomic():
            _lost(run, "its queue entry was lost")
        requeued += 1
    return requeued


def _lost(run: Run, why: str) -> None:
    if run.verdict_attempts >= settings.IOWATCH_VERDICT_ATTEMPTS:
        Run.objects.filter(pk=run.pk).update(
            verdict_state="failed",
            verdict_error=f"all {run.verdict_attempts} tries ended without a verdict; the last: "
                          f"{why} (manage.py verdicts --retry-failed tries again)")
        return
    Run.objects.filter(pk=run.pk).update(verdict_state="pending", verdict_error=why)
    enqueue(run)
    log.warning("verdicts of run %s queued again: %s", run.run_id, why)


def retry_failed() -> int:
    """Queue again every run whose verdict work gave up (after fixing the cause)."""
    n = 0
    for run in Run.objects.filter(verdict_state="failed"):
        with transaction.atomic():
            Run.objects.filter(pk=run.pk).update(verdict_state="pending", verdict_attempts=0)
            enqueue(run)
        n += 1
    return n


def drain() -> int:
    """Do every ready verdict task in this process with the queue's own task
    runner (the tests, and `manage.py verdicts --now`); returns how many ran.
    Unlike the worker's loop it leaves the database connection open, so it
    runs inside a test's transaction too."""
    from django_tasks_db.management.commands.db_worker import Worker
    from django_tasks_db.utils import exclusive_transaction

    me = worker_id()
    worker = Worker(queue_names=[QUEUE], interval=0, batch=True, backend_name="default",
                    startup_delay=False, max_tasks=None, worker_id=me, excluded_queue_names=[])
    ran = 0
    while True:
        with exclusive_transaction():
            entry = DBTaskResult.objects.ready().filter(queue_name=QUEUE).get_locked()
            if entry is None:
                return ran
            entry.claim(me)
        worker.run_task(entry)
        ran += 1
