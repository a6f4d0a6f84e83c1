"""The dashboard app: the pages people read and their chart data."""
from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "iowatch_web.dashboard"
    label = "dashboard"
    verbose_name = "Dashboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from django.db.models.signals import post_migrate

        from iowatch_web.dashboard.freshness import forget

        # A store made anew (tests, a new database) is migrated: its ids start over,
        # so the cached answers of the old one must go (dashboard/freshness.py).
        post_migrate.connect(forget, sender=self)
