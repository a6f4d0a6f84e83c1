"""manage.py recompute_verdicts [--run RUN_ID]: (re)compute stored runs' verdicts.

Each comparison a run makes is recomputed in place (its verdicts replaced, its
Regression and triage kept); change points already stored are not raised again.
Without --run, every measured run in the order the runs were made, so the
history each one sees is the one it saw when it arrived."""
from __future__ import annotations

import uuid

from django.core.management.base import BaseCommand, CommandError
from django.db.models.functions import Coalesce

from iowatch_web.regressions.verdicts import verdicts_for_run
from iowatch_web.results.models import Run


class Command(BaseCommand):
    help = "Recompute the stored verdicts, regressions and change points of runs."

    def add_arguments(self, parser):
        parser.add_argument("--run", metavar="RUN_ID", help="only this run (its run id)")

    def handle(self, *args, run=None, **options):
        runs = Run.objects.select_related("host", "kernel")
        if run is not None:
            try:
                runs = runs.filter(run_id=uuid.UUID(run))
            except ValueError:
                raise CommandError(f"{run!r} is not a run id (a UUID)") from None
            if not runs.exists():
                raise CommandError(f"no stored run {run}")
        else:
            runs = runs.filter(published=False).order_by(
                Coalesce("started_at", "received_at"), "id")
        for r in runs.iterator():
            comparisons = verdicts_for_run(r)
            regressed = sum(hasattr(c, "regression") for c in comparisons)
            self.stdout.write(f"{r.run_id}: {len(comparisons)} comparisons, "
                              f"{regressed} with a regression")
