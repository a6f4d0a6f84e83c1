"""What retention keeps of a run whose sample rows it removed, and where each run stands.

A SampleSummary is one (cell, job group, metric) of a summarised run: n, mean,
median, sd, min and max of its group-level values, and those values per
repetition, in the order the sample rows had. Judging pools repetition-level
values and the history reads them one by one, so the summary keeps them all:
it drops only the per-job samples and the one-row-per-value layout.
"""
from __future__ import annotations

from django.db import models
from django.db.models import Q

from iowatch_web.results.models import Cell, Metric, Run


class RunRetention(models.Model):
    """A run's retention state: kept raw on purpose (keep_raw), or summarised."""
    run = models.OneToOneField(Run, on_delete=models.CASCADE, primary_key=True,
                               related_name="retention")
    keep_raw = models.BooleanField(default=False, help_text="never summarise this run's samples")
    summarised_at = models.DateTimeField(null=True, blank=True)
    samples_removed = models.BigIntegerField(default=0)
    bytes_freed = models.BigIntegerField(default=0,
                                         help_text="the removed rows' stored size less the summaries'")

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(samples_removed__gte=0), name="retention_removed_nonnegative"),
            # A run kept raw is never summarised.
            models.CheckConstraint(condition=Q(keep_raw=False) | Q(summarised_at__isnull=True),
                                   name="retention_kept_raw_not_summarised"),
        ]

    def __str__(self) -> str:
        state = "kept raw" if self.keep_raw else "summarised" if self.summarised_at else "raw"
        return f"{self.run_id}: {state}"


class SampleSummary(models.Model):
    cell = models.ForeignKey(Cell, on_delete=models.CASCADE, related_name="sample_summaries")
    group = models.CharField(max_length=100)
    metric = models.ForeignKey(Metric, on_delete=models.PROTECT, db_index=False, related_name="+")
    n = models.PositiveIntegerField()
    mean = models.FloatField()
    median = models.FloatField()
    sd = models.FloatField(help_text="sample standard deviation (n - 1); 0 for one value")
    min = models.FloatField()
    max = models.FloatField()
    repetitions = models.JSONField(help_text="[[repetition, [values in row order]], ...] "
                                             "in repetition order")

    class Meta:
        verbose_name_plural = "sample summaries"
        ordering = ["cell", "group", "metric"]
        constraints = [
            models.UniqueConstraint(fields=["cell", "group", "metric"],
                                    name="summary_unique_per_cell_group_metric"),
            models.CheckConstraint(condition=Q(n__gte=1), name="summary_n_positive"),
        ]
        # The history reads one metric of many cells, as the sample_metric_cell index serves it.
        indexes = [models.Index(fields=["metric", "cell"], name="summary_metric_cell")]

    def __str__(self) -> str:
        return f"{self.group}/{self.metric_id}: n={self.n} median={self.median}"


class RetentionPass(models.Model):
    """One pass of `manage.py retain`; the verdict worker's sweep starts one a day."""
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    days = models.PositiveIntegerField()
    runs = models.PositiveIntegerField(default=0)
    samples_removed = models.BigIntegerField(default=0)
    bytes_freed = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["-started_at"]
