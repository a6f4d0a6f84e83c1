"""Django admin for the store. Big tables (samples, artifacts, cells) use raw
id widgets and skip full counts, so a page never loads a whole table."""
from django.contrib import admin

from iowatch_web.results.models import (
    Agent, AgentHost, Artifact, Cell, Device, Host, JobFailure, Kernel, Metric, Patch, PatchSeries,
    Repetition, Run, Sample, Study,
)


@admin.register(Metric)
class MetricAdmin(admin.ModelAdmin):
    list_display = ("name", "unit", "direction", "nonnegative", "description")
    list_filter = ("direction", "unit")
    search_fields = ("name", "description")


@admin.register(Host)
class HostAdmin(admin.ModelAdmin):
    list_display = ("name", "kind")
    list_filter = ("kind",)
    search_fields = ("name",)


@admin.register(Device)
class DeviceAdmin(admin.ModelAdmin):
    list_display = ("name", "host", "device_class", "model", "path", "size_bytes", "rotational")
    list_filter = ("device_class", "rotational", "host")
    search_fields = ("name", "model", "path", "host__name")
    list_select_related = ("host",)


class PatchInline(admin.TabularInline):
    model = Patch
    extra = 0


@admin.register(PatchSeries)
class PatchSeriesAdmin(admin.ModelAdmin):
    list_display = ("name", "base", "patch_count", "message_id")
    search_fields = ("name", "message_id", "base")
    inlines = [PatchInline]


@admin.register(Patch)
class PatchAdmin(admin.ModelAdmin):
    list_display = ("series", "index", "subject", "commit")
    search_fields = ("subject", "commit", "series__name")
    list_select_related = ("series",)
    raw_id_fields = ("series",)


@admin.register(Kernel)
class KernelAdmin(admin.ModelAdmin):
    list_display = ("release", "git_commit", "config_hash", "series", "patch_index")
    search_fields = ("release", "git_commit", "config_hash", "series__name")
    list_select_related = ("series",)
    raw_id_fields = ("series",)


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ("slug",)
    search_fields = ("slug",)


class AgentHostInline(admin.TabularInline):
    """The hosts the agent may act for (claims, heartbeats, steps, results)."""
    model = AgentHost
    extra = 1
    verbose_name = "host it may act for"
    verbose_name_plural = "hosts it may act for (none: it may only upload bundles)"


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ("name", "active", "hosts_held", "created", "last_seen")
    list_filter = ("active",)
    search_fields = ("name", "hosts__name")
    inlines = [AgentHostInline]
    # Tokens are made by manage.py create_agent; the admin only revokes.
    readonly_fields = ("token_sha256", "created", "last_seen")

    def has_add_permission(self, request):
        return False

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("hosts")

    @admin.display(description="hosts it acts for")
    def hosts_held(self, agent: Agent) -> str:
        return ", ".join(agent.host_names()) or "none (uploads only)"


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("run_id", "status", "host", "kernel", "label", "published", "agent",
                    "received_at")
    list_filter = ("status", "published", "host")
    search_fields = ("run_id", "label", "kernel__release", "host__name", "matrix")
    list_select_related = ("host", "kernel", "agent")
    raw_id_fields = ("host", "kernel", "agent")
    filter_horizontal = ("devices",)
    date_hierarchy = "received_at"
    readonly_fields = ("received_at", "bundle_sha256")


@admin.register(Cell)
class CellAdmin(admin.ModelAdmin):
    list_display = ("key", "run", "study", "device", "filesystem", "status")
    list_filter = ("status", "study", "filesystem")
    search_fields = ("key", "run__run_id")
    list_select_related = ("run", "study", "device")
    raw_id_fields = ("run", "device")
    show_full_result_count = False


@admin.register(Repetition)
class RepetitionAdmin(admin.ModelAdmin):
    list_display = ("cell", "index", "status", "error")
    list_filter = ("status",)
    list_select_related = ("cell",)
    raw_id_fields = ("cell",)
    show_full_result_count = False


@admin.register(Sample)
class SampleAdmin(admin.ModelAdmin):
    list_display = ("id", "cell", "repetition", "metric", "value", "group", "job")
    list_filter = ("metric__direction",)
    search_fields = ("=metric__name", "=cell__key")
    list_select_related = ("cell",)
    raw_id_fields = ("cell", "metric")
    show_full_result_count = False
    list_per_page = 100


@admin.register(JobFailure)
class JobFailureAdmin(admin.ModelAdmin):
    list_display = ("cell", "repetition", "group", "job", "error", "message")
    list_select_related = ("cell",)
    raw_id_fields = ("cell",)
    show_full_result_count = False


@admin.register(Artifact)
class ArtifactAdmin(admin.ModelAdmin):
    list_display = ("name", "cell", "repetition", "size", "sha256")
    search_fields = ("=name", "=sha256")
    list_select_related = ("cell",)
    raw_id_fields = ("cell",)
    exclude = ("content",)
    readonly_fields = ("sha256", "size")
    show_full_result_count = False

    def get_queryset(self, request):
        # The raw bytes are downloaded through the API, never loaded into a list.
        return super().get_queryset(request).defer("content")
