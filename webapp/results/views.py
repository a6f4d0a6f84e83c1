"""The landing page: what the store holds, until the dashboard app takes over."""
from django.db.models import Count
from django.shortcuts import render

from results.models import Run


def index(request):
    runs = (Run.objects.select_related("host", "kernel")
            .annotate(n_cells=Count("cells", distinct=True)).order_by("-received_at"))
    return render(request, "results/index.html", {
        "measured": runs.filter(published=False)[:50],
        "published": runs.filter(published=True).prefetch_related("cells__study")[:50],
    })
