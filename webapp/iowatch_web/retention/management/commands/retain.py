"""manage.py retain [--days N] [--dry-run]: summarise the samples of old runs
(iowatch_web.retention.retain). The verdict worker's sweep runs it once a day;
cron or a Jenkins job can run it too (`iowatch manage retain`)."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from iowatch_web.results.models import Run
from iowatch_web.retention.models import RunRetention
from iowatch_web.retention.retain import retain


def keep_raw(run_id: str) -> str:
    try:
        run = Run.objects.get(run_id=run_id)
    except (Run.DoesNotExist, ValueError, ValidationError):
        raise CommandError(f"--keep {run_id}: no stored run has this id") from None
    state, _ = RunRetention.objects.get_or_create(run=run)
    if state.summarised_at:
        raise CommandError(f"--keep {run_id}: summarised on {state.summarised_at:%Y-%m-%d}; its "
                           "raw tool outputs are kept, so parsing them again can rebuild its samples")
    RunRetention.objects.filter(pk=state.pk).update(keep_raw=True)
    return f"run {run_id} stays raw"


class Command(BaseCommand):
    help = ("Summarise the samples of runs older than --days (default IOWATCH_RETENTION_DAYS, 90) "
            "per cell, job group and metric, and remove their rows; raw artifacts stay. "
            "Published runs, a regression's good and bad sides and bisect steps stay raw.")

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=None,
                            help="the window: runs older than this many days (default "
                                 "IOWATCH_RETENTION_DAYS)")
        parser.add_argument("--dry-run", action="store_true",
                            help="say what would be summarised and freed; change nothing")
        parser.add_argument("--list", action="store_true", help="print each summarised run's id")
        parser.add_argument("--keep", metavar="RUN_ID", action="append", default=[],
                            help="mark a run to stay raw however old (repeatable), then retain")

    def handle(self, *args, days=None, dry_run=False, list=False, keep=(), **options):
        if keep and dry_run:
            raise CommandError("--keep marks runs in the store; it does not go with --dry-run")
        for run_id in keep:
            self.stdout.write(keep_raw(run_id))
        try:
            report = retain(days, dry_run=dry_run)
        except ValueError as e:
            raise CommandError(str(e)) from None
        for line in report.lines():
            self.stdout.write(line)
        if list:
            for run_id in report.summarised:
                self.stdout.write(run_id)
