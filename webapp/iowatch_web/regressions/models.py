"""What the verdicts decided, stored so pages read them instead of recomputing
(docs/verdicts.md; alert and summary triage as Perfherder has them).

A StoredComparison pairs two kernels measured on one host with one matrix (each
side pools the repetitions of every run of its kernel) and says why they were
paired. Its StoredVerdicts are the A/B outcome per cell, job group and metric.
A Regression groups the regressed cells of one comparison (one change) under
one entry that people triage; each change of its state is a TriageEvent. A
patch of a series is compared with its parent and with the series base: both
views of the one change are one Regression, the parent's, which holds the
series-base comparison among its `views` (regressions/grouping.py). A
StoredChangePoint is a step found in the history of one series key and confirmed
by the A/B test of the segments; the change points at one kernel on one host
share a comparison (reason "change-point") and so one Regression.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from iowatch.vocabulary.defaults import DEFAULT_MIN_EFFECT, FDR
from iowatch.vocabulary.outcomes import PATCH_STATES, STORED_OUTCOMES, Outcome
from iowatch.metrics import DIRECTIONS
from iowatch_web.results.models import (DEVICE_CLASSES, Agent, Device, Host, Kernel, Metric, Run,
                                        Study, at_least, one_of)

REASONS = {
    "parent": "parent in series",
    "series-base": "series base",
    "previous-run": "previous run of the same matrix on the host",
    "change-point": "nightly change point",
}
# What kind of change a regression is (the API's "kind"): a nightly's (a change
# point, or a night over night comparison of nightly runs), a series patch's
# ("check"), or any other A/B.
KINDS = ("nightly", "check", "ab")
# An agent's job (AgentJob: a bisect's or a confirmation's): queued, running
# (claimed by an agent), then done or failed; cancelled: by an administrator
# (regressions/cancel.py) before, its agent told on its next post.
JOB_STATES = ("queued", "running", "done", "failed", "cancelled")
JOB_OPEN = ("queued", "running")
BISECT_STATES, BISECT_OPEN = JOB_STATES, JOB_OPEN
STATES = {
    "new": "new",
    "acknowledged": "acknowledged",
    "invalid": "invalid",
    "fixed": "fixed",
    "bisecting": "bisecting",
    "bisected": "bisected",
    "wontfix": "won't fix",
}


class StoredComparison(models.Model):
    """Base kernel against candidate kernel on one host and matrix."""
    reason = models.CharField(max_length=20, choices=list(REASONS.items()))
    host = models.ForeignKey(Host, on_delete=models.PROTECT, related_name="comparisons")
    matrix = models.CharField(max_length=200, blank=True, default="")
    base_kernel = models.ForeignKey(Kernel, on_delete=models.PROTECT, related_name="+")
    candidate_kernel = models.ForeignKey(Kernel, on_delete=models.PROTECT,
                                         related_name="comparisons")
    base_runs = models.ManyToManyField(Run, related_name="base_of_comparisons")
    candidate_runs = models.ManyToManyField(Run, related_name="candidate_of_comparisons")
    trigger_run = models.ForeignKey(Run, on_delete=models.SET_NULL, null=True, blank=True,
                                    related_name="+", help_text="the run whose arrival "
                                                                "computed it last")
    fdr = models.FloatField(default=FDR, help_text="Benjamini–Hochberg false-discovery rate")
    # The platform canary's finding (iowatch.judging.platform_words): while it
    # drifted, no cell's regression is claimed and the comparison reads unsure.
    platform_drifted = models.BooleanField(default=False, help_text="a canary moved between "
                                           "the kernels or the rounds")
    platform_words = models.TextField(blank=True, default="", help_text="what the canaries "
                                      "measured, in words; empty without a canary")
    # The host's record that stood in for the variance between boots of a side of
    # one boot (Comparison.recorded_boots), in its words: the mail's boots line.
    recorded_boots = models.TextField(blank=True, default="", db_default="",
                                      help_text="the host's recorded variance between boots the "
                                                "verdict read, in words; empty when none did or "
                                                "when stored before it was kept")
    # What iowatch.judging decided (Comparison.decision), kept so that every
    # page, API answer, mail and exit status reads it instead of working it out
    # again from the cells: the state, whether it stands behind a regression,
    # the cells with no result on a side, and each (study, device class)'s state.
    state = models.CharField(max_length=12, choices=[(s, s) for s in PATCH_STATES],
                             default=Outcome.UNSURE.state,
                             help_text="the comparison's state (iowatch.judging.PATCH_STATES)")
    regressed = models.BooleanField(default=False, help_text="a deciding cell's regression "
                                    "the comparison stands behind (Comparison.regressions)")
    failed_cells = models.JSONField(default=list, blank=True, help_text="the cells measured on "
                                    "both sides without a passed repetition on a side "
                                    "(iowatch.judging.FailedCell's fields)")
    column_states = models.JSONField(default=list, blank=True, help_text="the state of each "
                                     "study and device class: {study, device_class, state}")
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-computed_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["reason", "host", "matrix", "base_kernel",
                                            "candidate_kernel"], name="comparison_unique_pairing"),
            one_of("reason", REASONS, "comparison_reason_known"),
            one_of("state", PATCH_STATES, "comparison_state_known"),
            models.CheckConstraint(condition=~Q(base_kernel=F("candidate_kernel")),
                                   name="comparison_two_kernels"),
            models.CheckConstraint(condition=Q(fdr__gt=0, fdr__lt=1), name="comparison_fdr_rate"),
        ]
        indexes = [models.Index(fields=["candidate_kernel", "host"], name="comparison_candidate"),
                   # The newest comparisons first (overview), and the dashboard's
                   # cache stamp: the last computed_at (dashboard/freshness.py).
                   models.Index(fields=["computed_at"], name="comparison_computed_at")]

    def __str__(self) -> str:
        return f"{self.candidate_kernel} vs {self.base_kernel} on {self.host} ({self.reason})"


class StoredVerdict(models.Model):
    """The A/B verdict of one cell, job group and metric of a comparison."""
    comparison = models.ForeignKey(StoredComparison, on_delete=models.CASCADE, related_name="cells")
    # The series key (study/host/device/filesystem/group/metric), with the bundle's cell id that pairs the sides.
    cell_key = models.CharField(max_length=300)
    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="+")
    host = models.ForeignKey(Host, on_delete=models.PROTECT, related_name="+")
    device_class = models.CharField(max_length=20, blank=True, default="",
                                    choices=[(c, c) for c in DEVICE_CLASSES])
    device = models.ForeignKey(Device, on_delete=models.PROTECT, null=True, blank=True,
                               related_name="+")
    filesystem = models.CharField(max_length=50, blank=True, default="")
    group = models.CharField(max_length=100)
    metric = models.ForeignKey(Metric, on_delete=models.PROTECT, related_name="+")
    direction = models.CharField(max_length=6, choices=[(d, d) for d in DIRECTIONS])
    min_effect_pct = models.FloatField()

    base_n = models.PositiveIntegerField()
    base_mean = models.FloatField()
    base_median = models.FloatField()
    base_sd = models.FloatField(null=True, blank=True)
    candidate_n = models.PositiveIntegerField()
    candidate_mean = models.FloatField()
    candidate_median = models.FloatField()
    candidate_sd = models.FloatField(null=True, blank=True)

    change_pct = models.FloatField(null=True, blank=True)
    ci_low = models.FloatField(null=True, blank=True)
    ci_high = models.FloatField(null=True, blank=True)
    p_value = models.FloatField(null=True, blank=True)
    p_adjusted = models.FloatField(null=True, blank=True)
    p_worse = models.FloatField(null=True, blank=True, help_text="one-sided: the candidate is worse")
    p_worse_family = models.FloatField(
        null=True, blank=True,
        help_text="p_worse with the family's variance lent (moderated t): what 'suspected' reads")
    level = models.FloatField(null=True, blank=True,
                              help_text="the share of the false-discovery rate this look used")
    hidden_pct = models.FloatField(null=True, blank=True,
                                   help_text="the slowdown, in %, not ruled out at 80% confidence")
    budget_spent = models.BooleanField(default=False, help_text="unsure at the repetition cap")
    mde_pct = models.FloatField(
        null=True, blank=True,
        help_text="minimum detectable effect at these runs: the change, in %, this cell would "
                  "confirm with 80% power at its look's level, (z(1-a/m) + z(0.8)) x SE "
                  "(iowatch.stats.detectable)")
    cliffs_delta = models.FloatField(null=True, blank=True)
    outcome = models.CharField(max_length=12, choices=[(o, o) for o in STORED_OUTCOMES])
    needs_runs = models.PositiveIntegerField(null=True, blank=True,
                                             help_text="about how many more runs per side, "
                                                       "only when within the cap")
    cap = models.PositiveIntegerField(null=True, blank=True, help_text="the most runs a side "
                                      "the cell's study allows (null: stored before it)")
    size_only = models.BooleanField(default=False, help_text="a side has one sample: "
                                                             "judged by size only")
    words = models.TextField(blank=True, default="")
    # The two numbers the words compare and what they are (iowatch.stats
    # Verdict.centre, .statistic): the mail shows these. Null for a verdict
    # stored before them (the mail then shows the medians, labelled).
    base_centre = models.FloatField(null=True, blank=True)
    candidate_centre = models.FloatField(null=True, blank=True)
    centre_statistic = models.CharField(max_length=20, blank=True, default="", db_default="",
                                        help_text='"geometric mean" or "mean"')

    class Meta:
        ordering = ["comparison", "cell_key", "group", "metric"]
        constraints = [
            models.UniqueConstraint(fields=["comparison", "cell_key", "group", "metric"],
                                    name="cellverdict_unique_in_comparison"),
            one_of("outcome", STORED_OUTCOMES, "cellverdict_outcome_known"),
            one_of("direction", DIRECTIONS, "cellverdict_direction_known"),
            at_least("base_n", 1, "cellverdict_base_sampled"),
            at_least("candidate_n", 1, "cellverdict_candidate_sampled"),
            models.CheckConstraint(condition=Q(p_value__isnull=True)
                                   | Q(p_value__gte=0, p_value__lte=1), name="cellverdict_p_value"),
            models.CheckConstraint(condition=Q(p_adjusted__isnull=True)
                                   | Q(p_adjusted__gte=0, p_adjusted__lte=1),
                                   name="cellverdict_p_adjusted"),
            models.CheckConstraint(condition=Q(cliffs_delta__isnull=True)
                                   | Q(cliffs_delta__gte=-1, cliffs_delta__lte=1),
                                   name="cellverdict_cliffs_delta"),
        ]
        indexes = [
            # The regressions list: the regressed cells of a comparison.
            models.Index(fields=["outcome", "comparison"], name="cellverdict_outcome"),
            # A series key's history of verdicts.
            models.Index(fields=["host", "cell_key", "group", "metric"],
                         name="cellverdict_series_key"),
        ]

    def __str__(self) -> str:
        return f"{self.cell_key} [{self.group}] {self.metric_id}: {self.outcome}"


class Regression(models.Model):
    """One alert: the regressed cells (or change points) of one comparison."""
    comparison = models.OneToOneField(StoredComparison, on_delete=models.CASCADE,
                                      related_name="regression")
    state = models.CharField(max_length=12, choices=list(STATES.items()), default="new")
    kind = models.CharField(max_length=8, choices=[(k, k) for k in KINDS], default="ab",
                            help_text="set when it is opened (regressions/nightly.py kind_of)")
    notes = models.TextField(blank=True, default="", help_text="the latest triage note")
    # The other comparisons of the same change shown inside it: the series-base
    # comparison of the patch whose parent comparison this is (regressions/grouping.py).
    views = models.ManyToManyField(StoredComparison, blank=True, related_name="shown_in",
                                   help_text="other comparisons of the same change")
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created", "-id"]
        constraints = [one_of("state", STATES, "regression_state_known"),
                       one_of("kind", KINDS, "regression_kind_known")]
        indexes = [models.Index(fields=["state", "created"], name="regression_state")]

    def __str__(self) -> str:
        return f"regression #{self.pk}: {self.comparison} [{self.get_state_display()}]"

    def regressed_cells(self):
        return self.comparison.cells.filter(outcome="regression")


class TriageEvent(models.Model):
    """Who moved a regression from one state to another, when, and why: a
    person (user), or the bisect agent whose job started or finished (agent)."""
    regression = models.ForeignKey(Regression, on_delete=models.CASCADE, related_name="events")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT,
                             related_name="triage_events", null=True, blank=True)
    agent = models.ForeignKey("results.Agent", on_delete=models.SET_NULL, null=True, blank=True,
                              related_name="triage_events")
    from_state = models.CharField(max_length=12, choices=list(STATES.items()))
    to_state = models.CharField(max_length=12, choices=list(STATES.items()))
    note = models.TextField(blank=True, default="")
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["regression", "at", "id"]
        constraints = [
            one_of("from_state", STATES, "triageevent_from_state_known"),
            one_of("to_state", STATES, "triageevent_to_state_known"),
        ]

    def __str__(self) -> str:
        return f"{self.who}: {self.from_state} → {self.to_state}"

    @property
    def who(self) -> str:
        """The user's name, or "agent NAME" for a state a bisect agent moved."""
        if self.user is not None:
            return self.user.get_username()
        return f"agent {self.agent.name}" if self.agent is not None else "agent (removed)"


class StoredChangePoint(models.Model):
    """A step in one series key's history, at the first kernel after it."""
    comparison = models.ForeignKey(StoredComparison, on_delete=models.CASCADE,
                                   related_name="change_points")
    cell_key = models.CharField(max_length=300)
    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="+")
    host = models.ForeignKey(Host, on_delete=models.PROTECT, related_name="+")
    device = models.ForeignKey(Device, on_delete=models.PROTECT, null=True, blank=True,
                               related_name="+")
    filesystem = models.CharField(max_length=50, blank=True, default="")
    group = models.CharField(max_length=100)
    metric = models.ForeignKey(Metric, on_delete=models.PROTECT, related_name="+")
    kernel = models.ForeignKey(Kernel, on_delete=models.PROTECT, related_name="+",
                               help_text="the first kernel after the step")
    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="change_points",
                            help_text="that kernel's first run on the host")
    before_mean = models.FloatField()
    after_mean = models.FloatField()
    change_pct = models.FloatField(null=True, blank=True)
    p_value = models.FloatField(null=True, blank=True)
    # The study file's minimum effect when the step was judged (as StoredVerdict
    # keeps its own): the store keeps no copy of a study's policy.
    min_effect_pct = models.FloatField(default=DEFAULT_MIN_EFFECT)
    detected_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["host", "cell_key", "group", "metric", "detected_at"]
        constraints = [
            models.UniqueConstraint(fields=["host", "cell_key", "group", "metric", "kernel"],
                                    name="changepoint_unique_in_series"),
            models.CheckConstraint(condition=Q(p_value__isnull=True)
                                   | Q(p_value__gte=0, p_value__lte=1), name="changepoint_p_value"),
        ]

    def __str__(self) -> str:
        return f"{self.cell_key} [{self.group}] {self.metric_id} at {self.kernel}"


class AgentJob(models.Model):
    """What a job an agent claims and hands back has, whatever it does (a bisect
    of a regression, a confirmation on another host, more runs of a comparison):
    its state, the good and bad kernels it boots, the agent that claimed it and
    on which host, its error, and when it was made, claimed and finished."""
    state = models.CharField(max_length=12, choices=[(s, s) for s in JOB_STATES], default="queued")
    good_kernel = models.CharField(max_length=200)
    good_commit = models.CharField(max_length=64, null=True, blank=True)
    bad_kernel = models.CharField(max_length=200)
    bad_commit = models.CharField(max_length=64, null=True, blank=True)
    agent = models.ForeignKey(Agent, on_delete=models.SET_NULL, null=True, blank=True,
                              related_name="+")
    agent_host = models.CharField(max_length=200, blank=True, default="")
    error = models.TextField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        ordering = ["created", "id"]

    @property
    def open(self) -> bool:
        return self.state in JOB_OPEN


class BisectJob(AgentJob):
    """A bisect of one regression between its good and bad commits, on the
    queue agents claim from (POST /api/v1/bisects/claim): queued, running
    (claimed by an agent, steps arriving), then done or failed, or cancelled
    by an administrator at any point before. One open job
    per regression; a finished one stays as the record of what was found."""
    regression = models.ForeignKey(Regression, on_delete=models.CASCADE, related_name="bisects")
    state = models.CharField(max_length=12, choices=[(s, s) for s in BISECT_STATES],
                             default="queued")
    origin = models.CharField(max_length=12, choices=[("nightly", "nightly"),
                                                      ("maintainer", "maintainer")])
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL,
                                     null=True, blank=True, related_name="+")
    # The cell followed: the regression's worst deciding cell unless a maintainer picked one.
    cell_key = models.CharField(max_length=300)
    study = models.CharField(max_length=100)
    device_class = models.CharField(max_length=20, blank=True, default="")
    filesystem = models.CharField(max_length=50, blank=True, default="")
    group = models.CharField(max_length=100)
    metric = models.ForeignKey(Metric, on_delete=models.PROTECT, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.SET_NULL, null=True, blank=True,
                              related_name="bisects", help_text="the agent that claimed it")
    agent_host = models.CharField(max_length=200, blank=True, default="",
                                  help_text="the host the agent said it measures on")
    steps = models.JSONField(default=list, blank=True)
    result = models.JSONField(null=True, blank=True)

    class Meta(AgentJob.Meta):
        constraints = [
            one_of("state", BISECT_STATES, "bisectjob_state_known"),
            one_of("origin", ("nightly", "maintainer"), "bisectjob_origin_known"),
            models.UniqueConstraint(fields=["regression"], condition=Q(state__in=BISECT_OPEN),
                                    name="bisectjob_one_open_per_regression"),
            # A queued job may be cancelled before anyone claimed it.
            models.CheckConstraint(condition=Q(state__in=("queued", "cancelled"))
                                   | Q(claimed_at__isnull=False),
                                   name="bisectjob_claimed_when_started"),
        ]
        # The claim's read: the oldest queued job.
        indexes = [models.Index(fields=["state", "created"], name="bisectjob_queue")]

    def __str__(self) -> str:
        return f"bisect #{self.pk} of regression #{self.regression_id} [{self.state}]"


CONFIRM_STATES, CONFIRM_OPEN = JOB_STATES, JOB_OPEN
CONFIRM_OUTCOMES = ("confirmed", "not-confirmed")
CONFIRM_PURPOSES = ("confirm", "add-runs")


class ConfirmJob(AgentJob):
    """A regression found on one host, re-run on another host of the same device
    class (regressions/confirm.py): the good and the bad kernel booted in turn
    (ABAB) by that host's agent, which uploads each run with the job in its
    trigger and hands the job back; the server judges those runs with the
    verdict policy and records whether the regression holds there."""
    regression = models.ForeignKey(Regression, on_delete=models.CASCADE, related_name="confirmations",
                                   null=True, blank=True, help_text="the regression confirmed "
                                   "(null for an add-runs job)")
    # "add-runs": Perfherder's retrigger: an unsure cell's comparison asks its
    # host for more repetitions of both kernels (confirm.queue_runs), within the cap.
    purpose = models.CharField(max_length=12, default="confirm",
                               choices=[(p, p) for p in CONFIRM_PURPOSES])
    comparison = models.ForeignKey(StoredComparison, on_delete=models.CASCADE, null=True,
                                   blank=True, related_name="add_runs",
                                   help_text="the comparison whose unsure cell asks for runs")
    repetitions = models.PositiveIntegerField(null=True, blank=True, help_text="the runs a "
                                              "side an add-runs job asks for")
    host = models.CharField(max_length=200, help_text="the host asked to confirm it")
    device_class = models.CharField(max_length=20, choices=[(c, c) for c in DEVICE_CLASSES])
    cells = models.JSONField(default=list, help_text="[{study, device_class, filesystem, group, metric}]")
    rounds = models.PositiveIntegerField(default=2, help_text="ABAB rounds: boots of each kernel")
    good_runs = models.JSONField(default=list, blank=True)
    bad_runs = models.JSONField(default=list, blank=True)
    outcome = models.CharField(max_length=14, blank=True, default="",
                               choices=[(o, o) for o in CONFIRM_OUTCOMES])
    verdicts = models.JSONField(default=list, blank=True, help_text="the regressed cells as judged there")

    class Meta(AgentJob.Meta):
        constraints = [
            one_of("state", CONFIRM_STATES, "confirmjob_state_known"),
            models.UniqueConstraint(fields=["regression", "host"], condition=Q(state__in=CONFIRM_OPEN),
                                    name="confirmjob_one_open_per_host"),
            one_of("purpose", CONFIRM_PURPOSES, "confirmjob_purpose_known"),
            # A confirmation names its regression; an add-runs job its comparison.
            models.CheckConstraint(condition=Q(purpose="confirm", regression__isnull=False)
                                   | Q(purpose="add-runs", comparison__isnull=False),
                                   name="confirmjob_names_what_it_serves"),
        ]


# Where the answer of a compare of two sides stands (dashboard/compare_work.py).
COMPARE_STATES = ("queued", "running", "done", "failed")


class CompareAnswer(models.Model):
    """The answer of /compare for two sides, made once. Any two kernels can be
    compared, so this is computed when first asked for (by the asking request
    when the sides are small, else by the verdict worker) and kept, keyed on
    the sides and the runs they pool: a new run makes a new key. The unique key
    is what makes concurrent first readers share one computation."""
    key = models.CharField(max_length=64, unique=True,
                           help_text="sha256 of the two sides' specs and their run ids")
    base_spec = models.CharField(max_length=300)
    candidate_spec = models.CharField(max_length=300)
    cells = models.PositiveIntegerField(default=0, help_text="both sides' stored cells")
    state = models.CharField(max_length=8, choices=[(s, s) for s in COMPARE_STATES],
                             default="queued")
    # The answer as zlib-compressed JSON (100,000 cells are about 10 MB so).
    answer = models.BinaryField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    computations = models.PositiveIntegerField(default=0, help_text="how often it was computed")
    seconds = models.FloatField(null=True, blank=True, help_text="the last computation's time")
    asked_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True, help_text="when its computation began")
    computed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-asked_at", "-id"]
        constraints = [one_of("state", COMPARE_STATES, "compareanswer_state_known")]

    def __str__(self) -> str:
        return f"compare {self.base_spec} vs {self.candidate_spec} ({self.state})"
