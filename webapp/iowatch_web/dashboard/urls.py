"""The dashboard's pages and their chart data (/dashboard/api/…)."""
from django.urls import path, register_converter

from iowatch.judging.sides import STORE_ID_MAX
from iowatch_web.dashboard import endpoints, views


class StoreIdConverter:
    """An id the store can hold: past its 64-bit integers no row has it, so the
    page is a 404 before any query (SQLite's driver cannot even bind one)."""
    regex = "[0-9]{1,19}"

    def to_python(self, value: str) -> int:
        if int(value) > STORE_ID_MAX:
            raise ValueError(value)  # no match: the 404
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(StoreIdConverter, "storeid")

app_name = "dashboard"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("series/", views.series_index, name="series-index"),
    path("series/<storeid:series_id>/", views.series_check, name="series"),
    path("compare", views.compare, name="compare"),
    path("history", views.history, name="history"),
    path("regressions/", views.regressions, name="regressions"),
    path("regressions/<storeid:regression_id>/", views.regression_detail, name="regression"),
    path("cells/<storeid:verdict_id>/add-runs", views.add_runs, name="add-runs"),
    path("runs/", views.runs, name="runs"),
    path("hosts/", views.hosts, name="hosts"),
    path("device-classes/", views.device_classes, name="device-classes"),
    path("runs/<uuid:run_id>/", views.run_detail, name="run"),
    path("studies/", views.studies, name="studies"),
    path("studies/<slug:slug>/", views.study_published, name="study"),
    path("dashboard/api/overview", endpoints.overview, name="api-overview"),
    path("dashboard/api/compare", endpoints.compare, name="api-compare"),
    path("dashboard/api/history", endpoints.history, name="api-history"),
    path("dashboard/api/published/<slug:slug>", endpoints.published, name="api-published"),
]
