"""The store of results: what a bundle becomes in the database.

A run is one bundle: a kernel on a host, a matrix of cells (study × device ×
filesystem × parameters), each with repetitions, their samples, job failures
and raw artifacts. Agents are the lab runners allowed to upload.

Every rule the ingest relies on is also a constraint in the database: unique
keys, foreign keys, NOT NULL and checks on enumerations and counts.
"""
from __future__ import annotations

import sys

from django.core.validators import RegexValidator
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Coalesce

from iowatch import bundle
from iowatch import metrics as metric_table
from iowatch_web.site.bounds import HOST_NAME, HOST_NAME_RULE


def _choices(values) -> list[tuple[str, str]]:
    return [(v, v) for v in values]


# The store's check constraints, shared by every app's models.
def one_of(field: str, values, name: str) -> models.CheckConstraint:
    return models.CheckConstraint(condition=Q(**{f"{field}__in": list(values)}), name=name)


def at_least(field: str, low: int, name: str) -> models.CheckConstraint:
    return models.CheckConstraint(condition=Q(**{f"{field}__gte": low}), name=name)


# The bundle schema's host kinds, read from it so that a kind added there is one
# the store takes (lava: a board class of a LAVA lab); a new one still needs
# its migration of the check constraint (makemigrations finds it).
HOST_KINDS = tuple(bundle.schema()["properties"]["host"]["properties"]["kind"]["enum"])
DEVICE_CLASSES = ("sdcard", "emmc", "ssd", "ssd-raid0", "hdd", "nvme")
RUN_STATUSES = ("passed", "failed", "build-failed", "boot-failed", "incomplete")
# Where a run's verdict work stands: queued (or waiting to retry), on a worker,
# stored, or given up after its tries (verdict_error says why).
VERDICT_STATES = ("pending", "running", "done", "failed")
CELL_STATUSES = ("passed", "failed", "skipped")
REPETITION_STATUSES = ("passed", "failed")


class Metric(models.Model):
    """A row of iowatch.metrics.METRICS, kept in step by sync_metrics (after each migrate)."""
    name = models.CharField(primary_key=True, max_length=100)
    unit = models.CharField(max_length=20)
    direction = models.CharField(max_length=6, choices=_choices(metric_table.DIRECTIONS))
    description = models.TextField(blank=True)
    nonnegative = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]
        constraints = [one_of("direction", metric_table.DIRECTIONS, "metric_direction_known")]

    def __str__(self) -> str:
        return self.name


def sync_metrics(using: str = "default", **kwargs) -> int:
    """Make the Metric table match iowatch.metrics.METRICS: add new metrics and
    update changed ones (rows are never deleted: old samples point at them).
    Returns how many rows changed."""
    stored = {m.name: m for m in Metric.objects.using(using).all()}
    fields = ("unit", "direction", "description", "nonnegative")
    new, changed = [], []
    for m in metric_table.METRICS.values():
        row = stored.get(m.name)
        if row is None:
            new.append(Metric(name=m.name, **{f: getattr(m, f) for f in fields}))
        elif any(getattr(row, f) != getattr(m, f) for f in fields):
            for f in fields:
                setattr(row, f, getattr(m, f))
            changed.append(row)
    # ignore_conflicts: two processes migrating at once both try to add the rows.
    Metric.objects.using(using).bulk_create(new, ignore_conflicts=True)
    Metric.objects.using(using).bulk_update(changed, fields)
    return len(new) + len(changed)


class Host(models.Model):
    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=20, choices=_choices(HOST_KINDS), default="local")
    inventory = models.JSONField(default=dict, blank=True, help_text="the bundle's host entry as sent")

    class Meta:
        ordering = ["name"]
        constraints = [one_of("kind", HOST_KINDS, "host_kind_known")]

    def __str__(self) -> str:
        return self.name


class Device(models.Model):
    host = models.ForeignKey(Host, on_delete=models.PROTECT, related_name="devices")
    name = models.CharField(max_length=200)
    device_class = models.CharField(max_length=20, choices=_choices(DEVICE_CLASSES))
    path = models.CharField(max_length=1000, blank=True, default="")
    model = models.CharField(max_length=300, blank=True, default="")
    size_bytes = models.BigIntegerField(null=True, blank=True)
    rotational = models.BooleanField(null=True, blank=True)
    inventory = models.JSONField(default=dict, blank=True, help_text="the bundle's device entry as sent")

    class Meta:
        ordering = ["host__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["host", "name"], name="device_unique_per_host"),
            one_of("device_class", DEVICE_CLASSES, "device_class_known"),
            at_least("size_bytes", 0, "device_size_nonnegative"),
        ]

    def __str__(self) -> str:
        return f"{self.host.name}:{self.name} ({self.device_class})"


class PatchSeries(models.Model):
    name = models.CharField(max_length=300)
    message_id = models.CharField(max_length=500, null=True, blank=True)
    base = models.CharField(max_length=200, null=True, blank=True)
    patch_count = models.PositiveIntegerField(null=True, blank=True)
    mail = models.JSONField(default=dict, blank=True,
                            help_text="as the series came by mail: the cover letter's subject, "
                                      "to, cc, and the archive it was fetched from")

    class Meta:
        verbose_name_plural = "patch series"
        ordering = ["name"]
        constraints = [
            # A series is its name on a base; a missing base counts as one value.
            models.UniqueConstraint("name", Coalesce("base", models.Value("")),
                                    name="series_unique_name_base"),
        ]

    def __str__(self) -> str:
        return f"{self.name} on {self.base}" if self.base else self.name


class Patch(models.Model):
    series = models.ForeignKey(PatchSeries, on_delete=models.CASCADE, related_name="patches")
    index = models.PositiveIntegerField()
    subject = models.CharField(max_length=1000, blank=True, default="")
    commit = models.CharField(max_length=64, null=True, blank=True)
    # The patch as it came by mail (iowatch.kernel.series.Series.record): a
    # report on it replies in its thread; KCIDB names a patchset by the hashes.
    message_id = models.CharField(max_length=500, null=True, blank=True)
    author = models.CharField(max_length=500, blank=True, default="")
    sha256 = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        verbose_name_plural = "patches"
        ordering = ["series", "index"]
        constraints = [
            models.UniqueConstraint(fields=["series", "index"], name="patch_unique_index_in_series"),
            at_least("index", 1, "patch_index_from_one"),
        ]

    def __str__(self) -> str:
        return f"[{self.index}] {self.subject}"


class Kernel(models.Model):
    """A built kernel variant: a release, a commit, a config, and where it sits
    in a series (patch_index 0 is the base, k the base plus patches 1..k)."""
    release = models.CharField(max_length=200)
    git_commit = models.CharField(max_length=64, null=True, blank=True)
    config_hash = models.CharField(max_length=128, null=True, blank=True)
    config = models.JSONField(default=dict, blank=True)
    series = models.ForeignKey(PatchSeries, on_delete=models.PROTECT, null=True, blank=True,
                               related_name="kernels")
    patch_index = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["release"]
        constraints = [
            # NULLs compare equal here (an expression index works on SQLite and
            # PostgreSQL alike, where nulls_distinct=False is PostgreSQL-only).
            models.UniqueConstraint(
                "release", Coalesce("git_commit", models.Value("")),
                Coalesce("config_hash", models.Value("")),
                Coalesce("series", models.Value(0)), Coalesce("patch_index", models.Value(-1)),
                name="kernel_unique_variant"),
            at_least("patch_index", 0, "kernel_patch_index_nonnegative"),
        ]

    def __str__(self) -> str:
        commit = f" {self.git_commit[:12]}" if self.git_commit else ""
        return f"{self.release}{commit}"


class Study(models.Model):
    """A study by its slug only: the study file is the policy (its title, seed
    and minimum effect are read from the file, iowatch.studies), so the store
    never holds a stale copy of them."""
    slug = models.SlugField(max_length=100, unique=True)

    class Meta:
        verbose_name_plural = "studies"
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Agent(models.Model):
    """A lab runner allowed to upload bundles; only its token's sha256 is kept."""
    name = models.CharField(max_length=100, unique=True)
    token_sha256 = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField(null=True, blank=True)
    active = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def host_names(self) -> list[str]:
        return sorted(h.name for h in self.hosts.all())


class AgentHost(models.Model):
    """A lab host an agent may act for: claim its jobs, beat for it, post its
    steps and results (iowatch_web.hosts.grants). An agent with none may only
    upload bundles."""
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="hosts")
    name = models.CharField(max_length=200, help_text="the host as the inventory names it",
                            validators=[RegexValidator(HOST_NAME[:-1] + r"\Z", HOST_NAME_RULE)])

    class Meta:
        ordering = ["agent", "name"]
        constraints = [models.UniqueConstraint(fields=["agent", "name"], name="agenthost_once"),
                       models.CheckConstraint(condition=~Q(name=""), name="agenthost_named")]

    def __str__(self) -> str:
        return f"{self.agent.name} acts for {self.name}"


class Run(models.Model):
    """One bundle: a matrix run on one host with one kernel."""
    run_id = models.UUIDField(unique=True, help_text="the bundle's run id: the idempotency key")
    host = models.ForeignKey(Host, on_delete=models.PROTECT, related_name="runs")
    kernel = models.ForeignKey(Kernel, on_delete=models.PROTECT, related_name="runs")
    agent = models.ForeignKey(Agent, on_delete=models.SET_NULL, null=True, blank=True,
                              related_name="runs")
    devices = models.ManyToManyField(Device, blank=True, related_name="runs")
    status = models.CharField(max_length=20, choices=_choices(RUN_STATUSES))
    published = models.BooleanField(default=False)
    label = models.CharField(max_length=200, blank=True, default="")
    matrix = models.CharField(max_length=200, blank=True, default="")
    command = models.TextField(blank=True, default="")
    cmdline = models.TextField(blank=True, default="", help_text="the booted kernel's command line")
    tools = models.JSONField(default=dict, blank=True)
    environment = models.JSONField(default=dict, blank=True)
    # What started the run (the bundle's trigger): {"kind": "nightly", "branch",
    # "tree", "night"} for a nightly of a tracked branch, {"kind": "bisect", ...}
    # for a bisect's step, {"kind": "confirm", ...} for a confirmation's run
    # (schemas/bundle-v2.json); empty for a run nothing started but a person.
    trigger = models.JSONField(default=dict, blank=True)
    # A run of `iowatch check`: {"check": its id, "round": k} (the bundle's
    # check_round); the rounds are the blocks its variants are judged within.
    check_round = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    received_at = models.DateTimeField(auto_now_add=True)
    bundle_sha256 = models.CharField(
        max_length=64, help_text="sha256 of the canonical manifest: tells an identical "
                                 "re-post from a different bundle reusing the run id")
    # Counted once at ingest (and the samples again by retention): counting a
    # 100,000-cell run's rows on each GET /runs/{id} took a second (issue 28).
    # Null for a run stored before they were: counted when read.
    cell_count = models.PositiveIntegerField(null=True, blank=True)
    sample_count = models.PositiveBigIntegerField(null=True, blank=True)
    # The derived work of a stored run (its verdicts and change points) runs on
    # the queue (regressions/work.py); these say where it stands.
    verdict_state = models.CharField(max_length=10, choices=_choices(VERDICT_STATES),
                                     default="pending")
    verdict_attempts = models.PositiveSmallIntegerField(default=0)
    verdict_error = models.TextField(blank=True, default="",
                                     help_text="why the last try failed (kept after a retry)")
    verdict_done_at = models.DateTimeField(null=True, blank=True)
    verdict_task = models.UUIDField(null=True, blank=True,
                                    help_text="the queue entry (django_tasks_db) of the latest try")

    class Meta:
        ordering = ["-received_at", "-id"]
        constraints = [one_of("status", RUN_STATUSES, "run_status_known"),
                       one_of("verdict_state", VERDICT_STATES, "run_verdict_state_known")]
        indexes = [
            models.Index(fields=["received_at"], name="run_received_at"),
            # The verdicts' reads: a host's runs of a matrix in time order (the
            # pairings and the change-point window, regressions/verdicts.py).
            models.Index(F("host"), F("matrix"), Coalesce("started_at", "received_at"),
                         name="run_host_matrix_time"),
            # The worker's sweep and the overview: runs whose verdict is not done.
            models.Index(fields=["verdict_state"], name="run_verdict_open",
                         condition=~Q(verdict_state="done")),
            # The published results page: the lab's runs labelled as a post's result set.
            models.Index(fields=["label"], name="run_label"),
        ]

    def __str__(self) -> str:
        return str(self.run_id)


class Cell(models.Model):
    """One point of the matrix: study × device × filesystem × parameters."""
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="cells")
    key = models.CharField(max_length=300, help_text="the bundle's cell id")
    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="cells")
    device = models.ForeignKey(Device, on_delete=models.PROTECT, null=True, blank=True,
                               related_name="cells")
    filesystem = models.CharField(max_length=50, blank=True, default="")
    mkfs_options = models.CharField(max_length=1000, blank=True, default="")
    mount_options = models.CharField(max_length=1000, blank=True, default="")
    params = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=_choices(CELL_STATUSES))
    reason = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["run", "key"]
        constraints = [
            models.UniqueConstraint(fields=["run", "key"], name="cell_unique_key_in_run"),
            one_of("status", CELL_STATUSES, "cell_status_known"),
        ]

    def __str__(self) -> str:
        return self.key


class Repetition(models.Model):
    cell = models.ForeignKey(Cell, on_delete=models.CASCADE, related_name="repetitions")
    index = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=_choices(REPETITION_STATUSES))
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["cell", "index"]
        constraints = [
            models.UniqueConstraint(fields=["cell", "index"], name="repetition_unique_in_cell"),
            at_least("index", 1, "repetition_index_from_one"),
            one_of("status", REPETITION_STATUSES, "repetition_status_known"),
        ]

    def __str__(self) -> str:
        return f"{self.cell.key} rep {self.index}"


# The largest finite double: a value between -MAX and MAX is neither infinite
# nor NaN (PostgreSQL orders NaN above every number; SQLite stores NaN as NULL).
_DOUBLE_MAX = sys.float_info.max


class Sample(models.Model):
    """One number from one repetition of one cell, for one job group (and job)."""
    cell = models.ForeignKey(Cell, on_delete=models.CASCADE, related_name="samples")
    repetition = models.PositiveIntegerField()
    # The metric table is small and its key is the name: ingest sets metric_id
    # directly, and the (metric, cell) index below serves lookups by metric.
    metric = models.ForeignKey(Metric, on_delete=models.PROTECT, db_index=False,
                               related_name="samples")
    value = models.FloatField()
    group = models.CharField(max_length=100)
    job = models.CharField(max_length=200, null=True, blank=True)

    class Meta:
        ordering = ["cell", "repetition", "id"]
        indexes = [models.Index(fields=["metric", "cell"], name="sample_metric_cell")]
        constraints = [
            at_least("repetition", 1, "sample_repetition_from_one"),
            models.CheckConstraint(condition=Q(value__gte=-_DOUBLE_MAX, value__lte=_DOUBLE_MAX),
                                   name="sample_value_finite"),
        ]

    def __str__(self) -> str:
        return f"{self.metric_id}={self.value}"


class JobFailure(models.Model):
    """A job the tool reported as failed: recorded, never turned into samples."""
    cell = models.ForeignKey(Cell, on_delete=models.CASCADE, related_name="failures")
    repetition = models.PositiveIntegerField()
    group = models.CharField(max_length=100)
    job = models.CharField(max_length=200)
    error = models.IntegerField()
    message = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["cell", "repetition", "id"]
        constraints = [at_least("repetition", 1, "jobfailure_repetition_from_one")]

    def __str__(self) -> str:
        return f"{self.group}/{self.job}: error {self.error}"


class Artifact(models.Model):
    """A raw file of a repetition (fio JSON, fs_mark output, diskstats), kept so
    a better parser can re-read history."""
    cell = models.ForeignKey(Cell, on_delete=models.CASCADE, related_name="artifacts")
    repetition = models.PositiveIntegerField()
    name = models.CharField(max_length=200)
    sha256 = models.CharField(max_length=64)
    size = models.BigIntegerField()
    content = models.BinaryField()

    class Meta:
        ordering = ["cell", "repetition", "name"]
        constraints = [
            models.UniqueConstraint(fields=["cell", "repetition", "name"],
                                    name="artifact_unique_name_in_repetition"),
            at_least("repetition", 1, "artifact_repetition_from_one"),
            at_least("size", 0, "artifact_size_nonnegative"),
        ]

    def __str__(self) -> str:
        return self.name
