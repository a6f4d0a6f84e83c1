"""manage.py verdict_worker: the worker that makes stored runs' verdicts.

django_tasks_db's db_worker on the verdicts queue, with this machine's host
and pid as its id, plus a sweep (at start, then every --sweep seconds) that
gives back the tasks of workers that died and queues open runs that lost their
queue entry (regressions/work.py), and once a day a retention pass
(retention/retain.py). Run one or more beside the web server;
`iowatch serve` starts one by itself.

A database restart does not end the worker: a connection lost while it
looks for work is waited for and the loop goes on (db_worker's own loop
exits, and `iowatch serve` would start it again only after the task it held
was given back as a spent try); one lost while judging is judge_run's to
wait for (regressions/work.py)."""
from __future__ import annotations

import logging
import threading

from django.db import close_old_connections
from django.db.utils import DatabaseError
from django_tasks_db.management.commands import db_worker

from iowatch_web.regressions import work

log = logging.getLogger(__name__)


class ReconnectingWorker(db_worker.Worker):
    """db_worker's loop, begun again after the store came back."""

    def run(self) -> None:
        while True:
            try:
                return super().run()
            except work.STORE_ERRORS as e:
                if not work.store_was_lost():
                    raise
                work.wait_for_store(" ".join(str(e).split()) or type(e).__name__)
                self.startup_delay = False


class Command(db_worker.Command):
    help = "Make the verdicts of stored runs (the verdicts queue)."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.set_defaults(queue_name=work.QUEUE, worker_id=work.worker_id(), interval=0.5)
        parser.add_argument("--sweep", type=float, default=30.0, metavar="SECONDS",
                            help="how often to give back dead workers' tasks (default 30)")

    def handle(self, *args, sweep: float = 30.0, **options):
        stop = threading.Event()
        thread = threading.Thread(target=self._sweeping, args=(sweep, stop), daemon=True,
                                  name="verdict-sweep")
        thread.start()
        # db_worker's handle builds its Worker by this module-level name.
        db_worker.Worker = ReconnectingWorker
        try:
            super().handle(*args, **options)
        finally:
            stop.set()

    @staticmethod
    def _sweeping(every: float, stop: threading.Event) -> None:
        while True:
            try:
                if n := work.sweep():
                    log.warning("verdict sweep: %d run(s) queued again", n)
                _retention_pass()
            except DatabaseError as e:  # the store restarting: the next sweep tries again
                log.warning("verdict sweep: %s", e)
            finally:
                close_old_connections()
            if stop.wait(every):
                return


def _retention_pass() -> None:
    """Once a day (the first sweep past a day since the last pass, on any
    worker): summarise the samples of old runs (retention/retain.py)."""
    from iowatch_web.retention.retain import daily_pass

    try:
        if report := daily_pass():
            log.info("retention: %s", "; ".join(report.lines()))
    except Exception:  # the sweep goes on; the next day's pass tries again
        log.exception("retention pass failed")
