"""Retention in the admin: a run's state, and its keep_raw opt-out."""
from django.contrib import admin

from iowatch_web.retention.models import RetentionPass, RunRetention


@admin.register(RunRetention)
class RunRetentionAdmin(admin.ModelAdmin):
    list_display = ("run", "keep_raw", "summarised_at", "samples_removed", "bytes_freed")
    list_filter = ("keep_raw",)
    raw_id_fields = ("run",)
    readonly_fields = ("summarised_at", "samples_removed", "bytes_freed")


@admin.register(RetentionPass)
class RetentionPassAdmin(admin.ModelAdmin):
    list_display = ("started_at", "finished_at", "days", "runs", "samples_removed", "bytes_freed")
