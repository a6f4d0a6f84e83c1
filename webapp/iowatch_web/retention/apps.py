from django.apps import AppConfig


class RetentionConfig(AppConfig):
    name = "iowatch_web.retention"
    label = "retention"
    verbose_name = "Retention"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from iowatch_web.retention.api import router
        from iowatch_web.site.api import api

        # /runs/{run_id}/values, beside the results app's reads (site/api.py).
        api.add_router("", router)
