"""A host's current state (HostState, one row a host), its recent phase changes
(PhaseChange) and the jobs given back when it went silent (GiveBack).

A host is named as the agent names it (the inventory's name, which is also the
name its runs carry); it needs no run to have a state."""
from __future__ import annotations

from django.db import models
from django.db.models import Q

from iowatch.heartbeat import JOB_KINDS, PHASES
from iowatch.lava.labels import BOARD_LABELS as LAVA_BOARD_LABELS
from iowatch_web.results.models import Agent, one_of

# Phase changes kept a host: the hosts page shows the last 20.
KEPT_CHANGES = 50


def _job_known(prefix: str) -> models.CheckConstraint:
    """A job is a kind and an id, both or neither."""
    return models.CheckConstraint(
        condition=(Q(job_kind="", job_id__isnull=True)
                   | Q(job_kind__in=list(JOB_KINDS), job_id__isnull=False)),
        name=f"{prefix}_job_kind_and_id")


class Beat(models.Model):
    """What a beat says: the fields a state and a phase change share."""
    phase = models.CharField(max_length=20, choices=[(p, p) for p in PHASES])
    cell = models.CharField(max_length=300, blank=True, default="")
    job_kind = models.CharField(max_length=20, blank=True, default="")
    job_id = models.BigIntegerField(null=True, blank=True)
    commit = models.CharField(max_length=64, blank=True, default="")
    detail = models.TextField(blank=True, default="")

    class Meta:
        abstract = True

    @property
    def job(self) -> dict | None:
        return {"kind": self.job_kind, "id": self.job_id} if self.job_kind else None


class HostState(Beat):
    """What the host said last: `since` is when its phase began, `last_seen`
    its last beat."""
    name = models.CharField(max_length=200, unique=True)
    agent = models.ForeignKey(Agent, on_delete=models.SET_NULL, null=True, blank=True,
                              related_name="+", help_text="the agent whose token beat last")
    since = models.DateTimeField()
    last_seen = models.DateTimeField()

    class Meta:
        ordering = ["name"]
        constraints = [one_of("phase", PHASES, "hoststate_phase_known"), _job_known("hoststate")]

    def __str__(self) -> str:
        return f"{self.name} [{self.phase}]"


class PhaseChange(Beat):
    """A host's move to a new phase or a new job, at `at`."""
    host = models.ForeignKey(HostState, on_delete=models.CASCADE, related_name="changes")
    at = models.DateTimeField()

    class Meta:
        ordering = ["-at", "-id"]
        constraints = [one_of("phase", PHASES, "phasechange_phase_known"), _job_known("phasechange")]
        # The hosts page's read: a host's newest changes.
        indexes = [models.Index(fields=["host", "-at"], name="phasechange_newest")]


class GiveBack(models.Model):
    """A running job put back on its queue because its host stopped beating:
    the job's page says why, and the agent that lost it is refused (409)."""
    job_kind = models.CharField(max_length=20, choices=[(k, k) for k in JOB_KINDS])
    job_id = models.BigIntegerField()
    host = models.CharField(max_length=200)
    agent = models.ForeignKey(Agent, on_delete=models.SET_NULL, null=True, blank=True,
                              related_name="+", help_text="the agent that had claimed it")
    claimed_at = models.DateTimeField(null=True, blank=True)
    reason = models.TextField()
    at = models.DateTimeField()
    # The steps the lost claim had posted (a bisect's): measured on that host,
    # so kept here, not pooled with the next claim's host.
    steps = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        constraints = [one_of("job_kind", JOB_KINDS, "giveback_job_kind_known")]
        indexes = [models.Index(fields=["job_kind", "job_id"], name="giveback_of_job")]

    def __str__(self) -> str:
        return f"{self.job_kind} #{self.job_id} given back from {self.host}"


class LavaLabRefresh(models.Model):
    """The last time the board states of a LAVA lab (an inventory group with
    iowatch_lava) were asked of its server (`iowatch manage refresh_lava_boards`):
    when, and the error when it was not reached. A page read never asks LAVA;
    it reads this and the boards below, and says how old they are."""
    lab = models.CharField(max_length=200, unique=True, help_text="the inventory group")
    server = models.CharField(max_length=500)
    tried_at = models.DateTimeField(help_text="the last refresh, reached or not")
    reached_at = models.DateTimeField(null=True, blank=True, help_text="the last one LAVA answered")
    error = models.TextField(blank=True, default="", help_text="why the last refresh failed; "
                             "empty when it was reached")

    class Meta:
        ordering = ["lab"]


class LavaBoardState(models.Model):
    """One board of a LAVA lab as its server last said: LAVA's own state and
    health, and the word the hosts page shows (iowatch.lava.client.Board.label)."""
    lab = models.ForeignKey(LavaLabRefresh, on_delete=models.CASCADE, related_name="boards")
    hostname = models.CharField(max_length=200)
    device_type = models.CharField(max_length=200)
    state = models.CharField(max_length=20, help_text="LAVA's: Idle, Reserved, Running")
    health = models.CharField(max_length=20, help_text="LAVA's: Unknown, Maintenance, Good, Bad, "
                              "Looping, Retired")
    label = models.CharField(max_length=20, choices=[(w, w) for w in LAVA_BOARD_LABELS])
    worker = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        ordering = ["lab", "device_type", "hostname"]
        constraints = [
            models.UniqueConstraint(fields=["lab", "hostname"], name="lavaboard_one_row_a_board"),
            one_of("label", LAVA_BOARD_LABELS, "lavaboard_label_known"),
        ]
