"""The regressions app: stored verdicts, change points and their triage."""
from django.apps import AppConfig


class RegressionsConfig(AppConfig):
    name = "iowatch_web.regressions"
    label = "regressions"
    verbose_name = "Regressions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from iowatch_web.results.signals import run_stored

        from iowatch_web.regressions.receivers import verdicts_for_stored_run

        run_stored.connect(verdicts_for_stored_run, dispatch_uid="regressions.verdicts")

        from iowatch_web.regressions import api as regressions, bisect_api, confirm_api
        from iowatch_web.site.api import api

        api.add_router("/regressions", regressions.router)
        api.add_router("/bisects", bisect_api.router)
        api.add_router("/confirmations", confirm_api.router)
