"""The results app's configuration; keeps the Metric table in step with the code
(results.models.sync_metrics after each migrate) and adds its API router."""
from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _sync_after_migrate(sender, using="default", **kwargs) -> None:
    from iowatch_web.results.models import sync_metrics  # the models load after the configs
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
