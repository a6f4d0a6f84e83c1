"""Summarise the samples of runs older than the retention window.

A pass (retain) takes the runs whose time (started, else received) is older
than `days`, leaves alone the runs that stay raw (held_runs), and summarises
each of the others in a transaction of its own: the summaries are written,
the sample rows removed and the run marked summarised together, so a pass
stopped halfway leaves whole runs either way and the next pass goes on where
it stopped. A summarised run is never taken again: a rerun is a no-op.
"""
from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.apps import apps
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q, Sum
from django.db.models.functions import Coalesce, Length
from django.utils import timezone

from iowatch.stats import side_stats
from iowatch_web.regressions.models import (CompareAnswer, Regression, StoredChangePoint,
                                            StoredComparison)
from iowatch_web.results.models import Run, Sample
from iowatch_web.retention.models import RetentionPass, RunRetention, SampleSummary

log = logging.getLogger(__name__)

# How often the verdict worker's sweep starts a pass.
PASS_EVERY = timedelta(days=1)


@dataclass
class Report:
    days: int
    cutoff: datetime
    dry_run: bool
    runs: int = 0
    samples_removed: int = 0
    summaries: int = 0
    bytes_freed: int = 0
    held: int = 0
    summarised: list[str] = field(default_factory=list)
    answers_days: int = 0
    answers: int = 0  # kept compare answers pruned
    answer_bytes: int = 0

    def lines(self) -> list[str]:
        verb = "would summarise" if self.dry_run else "summarised"
        pruned = "would remove" if self.dry_run else "removed"
        return [f"retention: samples before {self.cutoff:%Y-%m-%d %H:%M} UTC ({self.days} days)",
                f"{verb} {self.runs} run(s): {self.samples_removed} sample rows "
                f"{'to remove' if self.dry_run else 'removed'}, {self.summaries} summaries, "
                f"{self.bytes_freed} bytes {'to free' if self.dry_run else 'freed'}",
                f"kept raw: {self.held} old run(s) (published, a regression's side, "
                "a bisect step, or marked keep_raw)",
                f"compare answers: {pruned} {self.answers} kept over {self.answers_days} days "
                f"({self.answer_bytes} bytes); asked again, they are computed again"]


def held_runs() -> Q:
    """The runs that stay raw however old: published numbers, a regression's
    good and bad sides and the runs its change points stand on, a bisect's
    steps, and runs marked keep_raw."""
    regressed = Regression.objects.values("comparison")
    sides = [m.through.objects.filter(storedcomparison__in=regressed).values("run")
             for m in (StoredComparison.base_runs, StoredComparison.candidate_runs)]
    return (Q(published=True) | Q(pk__in=sides[0]) | Q(pk__in=sides[1])
            | Q(pk__in=StoredChangePoint.objects.values("run"))
            | Q(run_id__in=bisect_step_runs()) | Q(retention__keep_raw=True))


def bisect_step_runs() -> set[uuid.UUID]:
    """The run ids a bisect's steps name (regressions' BisectJob.steps[].run_ids);
    bisect jobs are few, so their JSON is read here rather than queried."""
    try:
        jobs = apps.get_model("regressions", "BisectJob")
    except LookupError:  # a store without the bisect queue
        return set()
    found = set()
    for steps in jobs.objects.values_list("steps", flat=True):
        for step in steps or []:
            for run_id in step.get("run_ids") or []:
                try:
                    found.add(uuid.UUID(str(run_id)))
                except ValueError:  # not a run id: names no run to keep
                    continue
    return found


def old_runs(cutoff: datetime):
    """The runs older than the cutoff that still have their sample rows."""
    return (Run.objects.annotate(at=Coalesce("started_at", "received_at"))
            .filter(at__lt=cutoff).exclude(retention__summarised_at__isnull=False))


def retain(days: int | None = None, *, dry_run: bool = False, now: datetime | None = None) -> Report:
    days = settings.IOWATCH_RETENTION_DAYS if days is None else days
    if days < 0:
        raise ValueError(f"retention: --days {days}: give 0 or more days")
    cutoff = (now or timezone.now()) - timedelta(days=days)
    report = Report(days=days, cutoff=cutoff, dry_run=dry_run)
    old = old_runs(cutoff)
    held = set(old.filter(held_runs()).values_list("pk", flat=True))
    report.held = len(held)
    for pk in old.order_by("at", "id").values_list("pk", flat=True):
        if pk in held:
            continue
        done = summarise_run(pk, dry_run=dry_run)
        if done is None:
            continue
        run_id, removed, summaries, freed = done
        report.runs += 1
        report.samples_removed += removed
        report.summaries += summaries
        report.bytes_freed += freed
        report.summarised.append(run_id)
    prune_answers(report, now or timezone.now())
    return report


def prune_answers(report: Report, now: datetime) -> None:
    """Remove the compare answers kept longer than IOWATCH_COMPARE_ANSWER_DAYS
    (a cache: computed again when asked), leaving one whose computation is
    under way (started within the window)."""
    days = report.answers_days = settings.IOWATCH_COMPARE_ANSWER_DAYS
    cutoff = now - timedelta(days=days)
    old = (CompareAnswer.objects
           .filter(Q(computed_at__lt=cutoff) | Q(computed_at__isnull=True, asked_at__lt=cutoff))
           .exclude(state="running", started_at__gte=cutoff))
    report.answers = old.count()
    report.answer_bytes = old.aggregate(n=Sum(Length("answer")))["n"] or 0
    if not report.dry_run:
        old.delete()


def summarise_run(pk: int, *, dry_run: bool = False) -> tuple[str, int, int, int] | None:
    """Summarise one run in one transaction: (run id, sample rows removed,
    summaries written, bytes freed), or None when it is summarised already or
    kept raw."""
    with transaction.atomic():
        # The run's row locked: two passes at once summarise it once.
        run = Run.objects.select_for_update().filter(pk=pk).first()
        # Summarised by another pass, or marked to stay raw since this one began.
        if run is None or RunRetention.objects.filter(
                Q(summarised_at__isnull=False) | Q(keep_raw=True), run=run).exists():
            return None
        samples = Sample.objects.filter(cell__run=run)
        summaries = summaries_of(samples)
        removed = samples.count()
        before = _stored_bytes(samples)
        if dry_run:
            return str(run.run_id), removed, len(summaries), before - _summary_bytes(summaries)
        SampleSummary.objects.bulk_create(summaries)
        samples.delete()  # one DELETE: nothing refers to a sample
        Run.objects.filter(pk=run.pk).update(sample_count=0)
        freed = before - _stored_bytes(SampleSummary.objects.filter(cell__run=run))
        RunRetention.objects.update_or_create(
            run=run, defaults={"summarised_at": timezone.now(), "samples_removed": removed,
                               "bytes_freed": freed})
    log.info("retention: run %s summarised: %d sample rows removed, %d summaries", run.run_id,
             removed, len(summaries))
    return str(run.run_id), removed, len(summaries), freed


def summaries_of(samples) -> list[SampleSummary]:
    """A summary per (cell, group, metric) of the group-level samples, the
    values per repetition in the order the rows were stored."""
    values: dict[tuple, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for cell_id, group, metric, rep, value in (
            samples.filter(job__isnull=True).order_by("cell_id", "group", "metric_id", "repetition", "id")
            .values_list("cell_id", "group", "metric_id", "repetition", "value")):
        values[cell_id, group, metric][rep].append(value)
    out = []
    for (cell_id, group, metric), per_rep in values.items():
        s = side_stats([v for vs in per_rep.values() for v in vs])
        out.append(SampleSummary(cell_id=cell_id, group=group, metric_id=metric, n=s.n, mean=s.mean,
                                 median=s.median, sd=s.sd, min=s.min, max=s.max,
                                 repetitions=[[rep, vs] for rep, vs in sorted(per_rep.items())]))
    return out


def _stored_bytes(rows) -> int:
    """The stored size of some rows: PostgreSQL's own count of each row
    (pg_column_size); on SQLite, which has no such function, the sum of the
    rows' column lengths as SQLite stores them (8 bytes a number)."""
    model = rows.model
    table = connection.ops.quote_name(model._meta.db_table)
    ids = list(rows.order_by().values_list("pk", flat=True))
    if not ids:
        return 0
    if connection.vendor == "postgresql":
        with connection.cursor() as cur:
            cur.execute(f"SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM {table} t "
                        "WHERE t.id = ANY(%s)", [ids])
            return int(cur.fetchone()[0])
    texts = [f.column for f in model._meta.concrete_fields
             if f.get_internal_type() in ("CharField", "TextField", "JSONField")]
    numbers = len(model._meta.concrete_fields) - len(texts)
    total = 0
    for start in range(0, len(ids), 500):
        chunk = model.objects.filter(pk__in=ids[start:start + 500]).order_by()
        for lengths in chunk.values_list(*[Coalesce(Length(c), 0) for c in texts]):
            total += 8 * numbers + sum(lengths)
    return total


def _summary_bytes(summaries: list[SampleSummary]) -> int:
    """What the summaries would take (a dry run writes none): 8 bytes a number
    and the JSON text of the values, as SQLite stores it; close to PostgreSQL's."""
    import json
    return sum(8 * 9 + len(s.group) + len(s.metric_id) + len(json.dumps(s.repetitions))
               for s in summaries)


def due(now: datetime | None = None) -> bool:
    """Whether the sweep should start a pass: none started in the last PASS_EVERY."""
    now = now or timezone.now()
    return not RetentionPass.objects.filter(started_at__gt=now - PASS_EVERY).exists()


def daily_pass() -> Report | None:
    """The verdict worker's sweep: a pass when one is due, recorded as a RetentionPass."""
    if not due():
        return None
    record = RetentionPass.objects.create(started_at=timezone.now(),
                                          days=settings.IOWATCH_RETENTION_DAYS)
    report = retain()
    RetentionPass.objects.filter(pk=record.pk).update(
        finished_at=timezone.now(), runs=report.runs, samples_removed=report.samples_removed,
        bytes_freed=report.bytes_freed)
    return report
