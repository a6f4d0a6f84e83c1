"""The chart data: JSON endpoints under /dashboard/api/ that page and filter in
the database. Strings in them are data for textContent and Chart.js labels,
never HTML."""
from __future__ import annotations

from django.http import JsonResponse
from django.shortcuts import get_object_or_404

from iowatch_web.dashboard import published as claims
from iowatch_web.dashboard import compare_page, compare_work, queries
from iowatch_web.dashboard.freshness import cached
from iowatch_web.results.models import Study


def _error(message: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def _int(request, name: str, default: int, most: int) -> int:
    try:
        value = int(request.GET.get(name, default))
    except ValueError:
        value = default
    return max(0, min(value, most))


def overview(request):
    return JsonResponse(queries.overview())


def compare(request):
    base, candidate = request.GET.get("base", ""), request.GET.get("candidate", "")
    if not base or not candidate:
        return _error("base and candidate are both needed (a run id, kernel:ID, or a release, "
                      "label or commit)")
    try:
        compare_page.check_query(request.GET)
        compare_page.two_sides(base, candidate)
        result = compare_work.answer(base, candidate)
    except compare_work.Computing as e:
        # Made once, by the verdict worker: ask again after Retry-After.
        response = JsonResponse(e.as_json(), status=202)
        response["Retry-After"] = str(compare_work.REFRESH_S)
        return response
    except compare_work.CompareFailed as e:
        return _error(str(e), 500)
    except compare_page.SeveralKernels as e:
        return JsonResponse({"error": str(e), "candidates": e.candidates}, status=400)
    except (compare_page.SameSides, compare_page.UnknownParameter) as e:
        return _error(str(e))
    except compare_page.SideNotFound as e:
        return _error(str(e), 404)
    filters = {f: request.GET.get(f, "") for f in compare_page.COMPARE_FILTERS}
    # One page of cells (page=N, from 1); state, summary and headline are every cell's.
    answer, _ = compare_page.paged(result, filters, request.GET.get("page"))
    return JsonResponse(answer)


def history(request):
    key = {k: request.GET.get(k, "") for k in queries.HISTORY_KEYS}
    missing = [k for k in ("study", "host", "group", "metric") if not key[k]]
    if missing:
        return _error(f"the series key needs {', '.join(missing)}")
    limit = _int(request, "limit", 100, queries.MAX_HISTORY_KERNELS) or 1
    offset = _int(request, "offset", 0, 10**9)
    # A regression's page marks its two kernels: good (the base) and bad (the candidate).
    marks = {role: int(request.GET[role]) for role in ("good", "bad")
             if request.GET.get(role, "").isdigit()}
    # Read again only after the store changed (a run, a verdict): see dashboard.freshness.
    # "-3": the answer has a line per series or branch and the marks (a new name, so no older answer is read).
    return JsonResponse(cached("history-3", (sorted(key.items()), limit, offset, sorted(marks.items())),
                               lambda: queries.history(key, limit=limit, offset=offset, marks=marks)))


def published(request, slug: str):
    study = get_object_or_404(Study, slug=slug)
    return JsonResponse(claims.claim_check(study))
