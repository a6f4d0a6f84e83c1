"""The hosts app: what each lab host is doing now (its heartbeats)."""
from django.apps import AppConfig


class HostsConfig(AppConfig):
    name = "iowatch_web.hosts"
    label = "hosts"
    verbose_name = "Hosts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from iowatch_web.hosts.api import router
        from iowatch_web.site.api import api

        api.add_router("/hosts", router)
