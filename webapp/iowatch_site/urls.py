"""URL map: the admin and the versioned API (DESIGN.md §3: the ingest API)."""
from django.contrib import admin
from django.urls import path

from results.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
]
