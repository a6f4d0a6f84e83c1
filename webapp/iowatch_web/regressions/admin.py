"""Django admin for stored verdicts, regressions and their triage. Verdict rows
are many: raw id widgets and no full counts, so a page never loads a table."""
from django.contrib import admin, messages

from iowatch_web.regressions.cancel import NotOpen, cancel
from iowatch_web.regressions.models import (
    BisectJob, CompareAnswer, ConfirmJob, StoredVerdict, StoredChangePoint, StoredComparison, Regression, TriageEvent,
)


@admin.register(StoredComparison)
class ComparisonAdmin(admin.ModelAdmin):
    list_display = ("id", "reason", "host", "matrix", "base_kernel", "candidate_kernel",
                    "computed_at")
    list_filter = ("reason", "host")
    search_fields = ("matrix", "base_kernel__release", "candidate_kernel__release")
    list_select_related = ("host", "base_kernel", "candidate_kernel")
    raw_id_fields = ("host", "base_kernel", "candidate_kernel", "trigger_run", "base_runs",
                     "candidate_runs")
    readonly_fields = ("computed_at",)


@admin.register(StoredVerdict)
class CellVerdictAdmin(admin.ModelAdmin):
    list_display = ("cell_key", "group", "metric", "outcome", "change_pct", "p_adjusted",
                    "comparison")
    list_filter = ("outcome", "direction", "size_only")
    search_fields = ("=cell_key", "=metric__name")
    list_select_related = ("comparison",)
    raw_id_fields = ("comparison", "study", "host", "device", "metric")
    show_full_result_count = False


class TriageEventInline(admin.TabularInline):
    model = TriageEvent
    extra = 0
    readonly_fields = ("user", "from_state", "to_state", "note", "at")
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Regression)
class RegressionAdmin(admin.ModelAdmin):
    list_display = ("id", "state", "comparison", "created", "updated")
    list_filter = ("state", "comparison__reason", "comparison__host")
    search_fields = ("notes", "comparison__candidate_kernel__release")
    list_select_related = ("comparison__host", "comparison__base_kernel",
                           "comparison__candidate_kernel")
    raw_id_fields = ("comparison",)
    readonly_fields = ("created", "updated")
    inlines = [TriageEventInline]

    def save_model(self, request, obj, form, change):
        # A state changed here is logged like one changed through the API.
        super().save_model(request, obj, form, change)
        if change and "state" in form.changed_data:
            TriageEvent.objects.create(regression=obj, user=request.user,
                                       from_state=form.initial["state"], to_state=obj.state,
                                       note="changed in the admin")


@admin.register(TriageEvent)
class TriageEventAdmin(admin.ModelAdmin):
    list_display = ("regression", "user", "from_state", "to_state", "at")
    list_filter = ("to_state",)
    list_select_related = ("regression", "user")
    raw_id_fields = ("regression", "user")
    readonly_fields = ("at",)


@admin.register(StoredChangePoint)
class ChangePointAdmin(admin.ModelAdmin):
    list_display = ("cell_key", "group", "metric", "host", "kernel", "change_pct", "detected_at")
    list_filter = ("host",)
    search_fields = ("=cell_key", "=metric__name")
    list_select_related = ("host", "kernel")
    raw_id_fields = ("comparison", "study", "host", "device", "metric", "kernel", "run")
    show_full_result_count = False


class JobAdmin(admin.ModelAdmin):
    """A queue's jobs: read here, cancelled by the action (regressions/cancel.py)."""
    kind = ""
    list_filter = ("state",)
    list_select_related = ("agent",)
    raw_id_fields = ("regression", "agent")
    readonly_fields = ("state", "agent", "agent_host", "claimed_at", "finished_at", "error")
    actions = ["cancel_jobs"]

    @admin.action(description="Cancel the selected jobs (their agents stop at their next post)")
    def cancel_jobs(self, request, queryset):
        done, skipped = [], []
        for job in queryset:
            try:
                cancel(self.kind, job.pk, f"{request.user.get_username()} (admin)")
                done.append(f"#{job.pk}")
            except NotOpen:
                skipped.append(f"#{job.pk} ({job.state})")
        if done:
            self.message_user(request, f"cancelled {self.kind} {', '.join(done)}")
        if skipped:
            self.message_user(request, f"not open, left as they were: {', '.join(skipped)}",
                              level=messages.WARNING)


@admin.register(BisectJob)
class BisectJobAdmin(JobAdmin):
    kind = "bisect"
    list_display = ("id", "regression", "state", "agent", "agent_host", "created", "finished_at")


@admin.register(ConfirmJob)
class ConfirmJobAdmin(JobAdmin):
    kind = "confirmation"
    list_display = ("id", "regression", "host", "state", "agent", "agent_host", "created",
                    "finished_at")


@admin.register(CompareAnswer)
class CompareAnswerAdmin(admin.ModelAdmin):
    """The kept answers of /compare: a failed one shows its error; deleting one
    makes the next reader's compare computed again."""
    list_display = ("id", "base_spec", "candidate_spec", "cells", "state", "computations",
                    "seconds", "asked_at", "computed_at")
    list_filter = ("state",)
    search_fields = ("base_spec", "candidate_spec")
    exclude = ("answer",)
    readonly_fields = ("key", "cells", "state", "error", "computations", "seconds", "asked_at",
                       "started_at", "computed_at")
