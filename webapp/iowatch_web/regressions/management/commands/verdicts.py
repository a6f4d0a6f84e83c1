"""manage.py verdicts: where the stored runs' verdict work stands, and what to do.

Without options, counts of runs by verdict state (pending, running, done,
failed) and the failed ones with their reason. --retry-failed queues the
failed ones again (after fixing the cause); --now does every ready task in
this process, for a store served without a worker."""
from __future__ import annotations

from django.core.management.base import BaseCommand
from django.db.models import Count

from iowatch_web.regressions import work
from iowatch_web.results.models import VERDICT_STATES, Run


class Command(BaseCommand):
    help = "Show the verdict queue's state; retry failed verdicts; do the ready ones now."

    def add_arguments(self, parser):
        parser.add_argument("--retry-failed", action="store_true",
                            help="queue again the runs whose verdict work gave up")
        parser.add_argument("--now", action="store_true",
                            help="do every ready verdict task here, then exit")

    def handle(self, *args, retry_failed=False, now=False, **options):
        if retry_failed:
            self.stdout.write(f"queued again: {work.retry_failed()} run(s)")
        if now:
            requeued = work.sweep()
            self.stdout.write(f"done now: {work.drain()} task(s)"
                              + (f" ({requeued} given back by dead workers)" if requeued else ""))
        counts = dict(Run.objects.values_list("verdict_state").annotate(n=Count("id")))
        self.stdout.write("verdicts: " + ", ".join(f"{counts.get(s, 0)} {s}"
                                                   for s in VERDICT_STATES))
        for run in Run.objects.filter(verdict_state="failed").order_by("-received_at")[:20]:
            self.stdout.write(f"  {run.run_id}: {run.verdict_error}")
