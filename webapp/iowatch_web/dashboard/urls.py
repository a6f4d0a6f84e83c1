"""The dashboard's pages and their chart data (/dashboard/api/…)."""
from django.urls import path

from iowatch_web.dashboard import endpoints, views

app_name = "dashboard"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("series/", views.series_index, name="series-index"),
    path("series/<int:series_id>/", views.series_check, name="series"),
    path("compare", views.compare, name="compare"),
    path("history", views.history, name="history"),
    path("regressions/", views.regressions, name="regressions"),
    path("regressions/<int:regression_id>/", views.regression_detail, name="regression"),
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
