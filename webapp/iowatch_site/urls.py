"""URL map: the admin and the versioned API (DESIGN.md §3: the ingest API)."""
from django.contrib import admin
from django.urls import path

from results.api import api
from results.views import index

urlpatterns = [
    path("", index, name="index"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
]
