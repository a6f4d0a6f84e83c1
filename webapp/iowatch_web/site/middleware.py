"""Answers for a store that cannot be reached, for a client that went away,
and for a query string the store cannot search with.

A PostgreSQL that is down or restarting makes whatever view touches it raise
OperationalError or InterfaceError. The API then answers JSON 503 in its error
shape ({"error", "where"}) with Retry-After, so an uploader waits and retries;
a page answers a plain 503 page. A client that disconnects in the middle of
its body (UnreadablePostError) gets a 400 and one log line, not a 500 with a
traceback. A NUL in a query parameter (PostgreSQL refuses it in any text it
is given) is a 400 naming the parameter, before any view runs. An id past the
store's integers (SQLite cannot bind it) is a 400, on a page as in the API. The API's own
exception handlers (site/api.py) answer with the
same functions, so the answer does not depend on DEBUG.
"""
from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse, UnreadablePostError

log = logging.getLogger(__name__)

# A restart of PostgreSQL takes seconds; an uploader's spool retries later anyway.
RETRY_AFTER_S = 30

UNAVAILABLE_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>iowatch: unavailable</title></head>
<body><h1>iowatch is unavailable</h1>
<p>The results database cannot be reached. Try again in a minute.</p></body></html>
"""


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def _one_line(exc: Exception) -> str:
    # psycopg's messages run over several lines; a log line is one.
    return " ".join(str(exc).split()) or type(exc).__name__


def _logged(response: HttpResponse) -> HttpResponse:
    # The line logged here is the record: Django would add its own
    # "Service Unavailable"/"Bad Request" warning otherwise.
    response._has_been_logged = True
    return response


def _timed_out(exc: Exception) -> bool:
    """PostgreSQL cancelled the statement: it ran past the statement timeout
    (settings.STATEMENT_TIMEOUT_S). psycopg's QueryCanceled, by name: SQLite
    setups need not import psycopg."""
    return type(exc.__cause__).__name__ == "QueryCanceled"


def store_unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
    log.warning("%s %s: database unavailable: %s", request.method, request.path, _one_line(exc))
    if _is_api(request):
        said = ("the request's query ran past the database's statement timeout "
                "(IOWATCH_STATEMENT_TIMEOUT_S); try again later" if _timed_out(exc)
                else "the database is unavailable; try again later")
        response = JsonResponse({"error": said, "where": "database"}, status=503)
    else:
        response = HttpResponse(UNAVAILABLE_PAGE, status=503, content_type="text/html; charset=utf-8")
    response["Retry-After"] = str(RETRY_AFTER_S)
    return _logged(response)


def client_went_away(request: HttpRequest, exc: Exception) -> HttpResponse:
    detail = _one_line(exc) if str(exc) else "the connection closed"
    log.info("%s %s: request body unreadable, the client went away: %s",
             request.method, request.path, detail)
    message = f"the request body could not be read whole ({detail})"
    if _is_api(request):
        response = JsonResponse({"error": message, "where": "request"}, status=400)
    else:
        response = HttpResponse(message + "\n", status=400, content_type="text/plain; charset=utf-8")
    return _logged(response)


def out_of_range(request: HttpRequest, exc: Exception) -> HttpResponse:
    """An id or number past what the database stores (SQLite's driver cannot
    even bind an integer past 2**63): no row can have it, so the request is
    wrong, not the server."""
    # Never the driver's own words ("Python int too large to convert to SQLite INTEGER").
    message = (f"a number in the request is past the store's 64-bit integers "
               f"({-2 ** 63} to {2 ** 63 - 1}): no row has it")
    if _is_api(request):
        return JsonResponse({"error": message, "where": "request"}, status=400)
    return HttpResponse(message + "\n", status=400, content_type="text/plain; charset=utf-8")


def bad_query(request: HttpRequest) -> HttpResponse | None:
    """The 400 for a query parameter holding a NUL, or None. (Django decodes
    the query string with replacement, so no lone surrogate gets this far.)"""
    for name, values in request.GET.lists():
        if "\x00" in name or any("\x00" in v for v in values):
            message = "a query parameter holds a NUL character (%00), which the store cannot search for"
            if _is_api(request):
                where = "query field " + name.replace("\x00", "%00")[:60]
                return JsonResponse({"error": message, "where": where},
                                    status=400)
            return HttpResponse(message + "\n", status=400, content_type="text/plain; charset=utf-8")
    return None


# What a status means when nothing said more (an unknown URL, a wrong method).
WHERE_BY_STATUS = {404: "url", 405: "method", 403: "csrf token", 500: "server"}


class ApiErrorShapeMiddleware:
    """Every error under /api/ in the API's one shape, {"error", "where"}:
    what ninja does not answer itself (an unknown URL, a wrong method,
    Django's CSRF refusal, a 500 page) comes out as HTML or text, which an
    uploader cannot read."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (response.status_code < 400 or not _is_api(request)
                or response.get("Content-Type", "").startswith("application/json")):
            return response
        status = response.status_code
        message = {404: f"no API operation at {request.path}: the operations are listed "
                        "at /api/v1/docs",
                   403: "refused: the CSRF token is missing or wrong (Django's check)",
                   405: f"{request.method} is not allowed on {request.path}",
                   500: "the server failed; the error is in its log"}.get(
                       status, getattr(response, "reason_phrase", "refused"))
        shaped = JsonResponse({"error": message, "where": WHERE_BY_STATUS.get(status, "request")},
                              status=status)
        for header in ("Allow", "Retry-After"):
            if header in response:
                shaped[header] = response[header]
        return _logged(shaped) if getattr(response, "_has_been_logged", False) else shaped


class StoreGuardMiddleware:
    """Turns a database that cannot be reached into 503, an unreadable body
    and a query the store cannot take into 400."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return bad_query(request) or self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, (OperationalError, InterfaceError)):
            return store_unavailable(request, exception)
        if isinstance(exception, UnreadablePostError):
            return client_went_away(request, exception)
        if isinstance(exception, OverflowError):
            return out_of_range(request, exception)
        return None


# Everything a page loads comes from this server: its scripts and styles are
# static files (no inline code, no style attributes), its icons data: URLs.
CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:",
    "font-src 'self'", "connect-src 'self'", "object-src 'none'", "base-uri 'none'",
    "form-action 'self'", "frame-ancestors 'none'",
])


class ContentSecurityPolicyMiddleware:
    """A strict Content-Security-Policy on every answer: an injected script
    or style (were any text to escape its escaping) does not run."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response
