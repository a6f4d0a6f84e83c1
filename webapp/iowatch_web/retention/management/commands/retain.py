"""manage.py retain [--days N] [--dry-run]: summarise the samples of old runs
(iowatch_web.retention.retain). The verdict worker's sweep runs it once a day;
cron or a Jenkins job can run it too (`iowatch manage retain`)."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from iowatch_web.retention.retain import retain


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

    def handle(self, *args, days=None, dry_run=False, list=False, **options):
        try:
            report = retain(days, dry_run=dry_run)
        except ValueError as e:
            raise CommandError(str(e)) from None
        for line in report.lines():
            self.stdout.write(line)
        if list:
            for run_id in report.summarised:
                self.stdout.write(run_id)
