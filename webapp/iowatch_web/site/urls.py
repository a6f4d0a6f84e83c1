"""URL map: the dashboard's pages, the admin, the login, and the versioned API
(the ingest API)."""
from django.contrib import admin
from django.urls import include, path

from iowatch_web.site.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("iowatch_web.dashboard.urls")),
]
