"""The results app's configuration; keeps the Metric table in step with the code."""
from django.apps import AppConfig
from django.db.models.signals import post_migrate


def sync_metrics(using: str = "default", **kwargs) -> int:
    """Make the Metric table match iowatch.metrics.METRICS: add new metrics and
    update changed ones (rows are never deleted: old samples point at them).
    Returns how many rows changed."""
    from iowatch.metrics import METRICS

    from iowatch_web.results.models import Metric

    stored = {m.name: m for m in Metric.objects.using(using).all()}
    fields = ("unit", "direction", "description", "nonnegative")
    new, changed = [], []
    for m in METRICS.values():
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


def _sync_after_migrate(sender, using="default", **kwargs) -> None:
    sync_metrics(using=using)


class ResultsConfig(AppConfig):
    name = "iowatch_web.results"
    label = "results"
    verbose_name = "Results"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(_sync_after_migrate, sender=self,
                             dispatch_uid="results.sync_metrics")
        from iowatch_web.results.api import router
        from iowatch_web.site.api import api

        # Ingest and the reads, at the API's root (site/api.py).
        api.add_router("", router)
