"""The versioned HTTP API at /api/v1/: the one NinjaAPI object, its agent
token, its answers for what goes wrong, and its paging. The apps add their
operations as routers (results: ingest and reads; regressions: regressions,
bisects, confirmations; hosts: heartbeats) from their AppConfig.ready, and
site/urls.py mounts the API. This module imports no app (it looks the agent
model up by the app registry), and no app's API imports another's
(tests/webapp/test_api_seams.py; tests/test_import_layers.py holds the site
below the apps).

Every malformed input is a 4xx naming the field ({"error", "where"}) and
stores nothing: a parameter that does not parse is a 400 here, not ninja's
422. A database that cannot be reached is a 503 with Retry-After
(site/middleware.py). The OpenAPI description at /api/v1/openapi.json lists
these answers for every operation.
"""
from __future__ import annotations

import hashlib

import pydantic_core
from django.apps import apps
from django.core.exceptions import ObjectDoesNotExist
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, JsonResponse, UnreadablePostError
from django.utils import timezone
from ninja import NinjaAPI, Schema
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.security import HttpBearer
from pydantic import field_validator

from iowatch_web.site.bounds import MAX_OFFSET, NO_NUL, STORE_MAX, STORE_MIN
from iowatch_web.site.api_docs import ReferenceDocs
from iowatch_web.site.middleware import client_went_away, out_of_range, store_unavailable


def _error_answer(description: str) -> dict:
    return {"description": description,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


class IowatchAPI(NinjaAPI):
    """A NinjaAPI whose OpenAPI description also names the answers any
    operation can give: 400 for a parameter or body that does not parse, 503
    when the database cannot be reached; and that a query string holds no NUL
    (site/middleware.py refuses one for every operation)."""

    def get_openapi_schema(self, *args, **kwargs):
        schema = super().get_openapi_schema(*args, **kwargs)
        for operations in schema["paths"].values():
            for operation in operations.values():
                for parameter in operation.get("parameters") or []:
                    if parameter["in"] == "query" and _a_string(parameter["schema"]):
                        parameter["schema"].setdefault("pattern", NO_NUL)
                    for integer in _integers(parameter["schema"]):
                        # The store's integers are 64-bit: a number past them is a
                        # 400 (site/middleware.py out_of_range), so the description says so.
                        integer.setdefault("minimum", STORE_MIN)
                        integer.setdefault("maximum", STORE_MAX)
                responses = operation.setdefault("responses", {})
                if operation.get("parameters") or operation.get("requestBody"):
                    responses.setdefault(400, _error_answer(
                        "a parameter or the body is malformed; where names it"))
                unavailable = responses.setdefault(503, _error_answer(
                    "the database cannot be reached; try again after Retry-After seconds"))
                unavailable["headers"] = {"Retry-After": {
                    "description": "seconds to wait before trying again",
                    "schema": {"type": "integer"}}}
        return schema


def _integers(schema: dict) -> list[dict]:
    """The integer schemas of a parameter's schema (itself, or its anyOf's)."""
    return ([schema] if schema.get("type") == "integer" else []) + [
        s for sub in schema.get("anyOf", []) for s in _integers(sub)]


def _a_string(schema: dict) -> bool:
    return schema.get("type") == "string" or any(_a_string(s) for s in schema.get("anyOf", []))


api = IowatchAPI(
    title="iowatch API", version="1", docs=ReferenceDocs(),
    description="Result bundles in (agents, with a token); runs, cells, samples, "
                "artifacts and the metric table out (anyone).")


# Each app adds its router when Django starts it (its AppConfig.ready, in
# INSTALLED_APPS order): results, then regressions, then hosts.


class Endpoint(Schema):
    path: str
    methods: list[str]
    summary: str


class Index(Schema):
    title: str
    version: str
    docs: str
    openapi: str
    endpoints: list[Endpoint]


@api.get("", response=Index, tags=["reads"], summary="What this API holds: its endpoints, "
         "with a line each, and where its documentation is")
def index(request):
    """Read from the OpenAPI description, so it lists what the apps added."""
    paths = api.get_openapi_schema()["paths"]
    endpoints = [{"path": path, "methods": sorted(m.upper() for m in operations),
                  "summary": next(iter(operations.values())).get("summary", "")}
                 for path, operations in paths.items() if path != request.path]
    return {"title": api.title, "version": api.version, "docs": request.path + "docs",
            "openapi": request.path + "openapi.json", "endpoints": endpoints}


class AgentTokenRefused(Exception):
    pass


def agent_token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class AgentToken(HttpBearer):
    """Authorization: Bearer <token> of an active agent (manage.py create_agent)."""

    def authenticate(self, request: HttpRequest, token: str):
        """The agent's row (results.Agent), looked up by the app registry: the
        site holds the API and imports no app (each app imports the site)."""
        Agent = apps.get_model("results", "Agent")
        agent = Agent.objects.filter(token_sha256=agent_token_digest(token), active=True).first()
        if agent is None:
            raise AgentTokenRefused()
        Agent.objects.filter(pk=agent.pk).update(last_seen=timezone.now())
        return agent


def error_response(status: int, message: str, where: str | None = None) -> JsonResponse:
    return JsonResponse({"error": message, "where": where}, status=status)


@api.exception_handler(AuthenticationError)
def _missing_token(request, exc):
    return error_response(401, "missing agent token: send 'Authorization: Bearer <token>' "
                       "(an administrator makes one with manage.py create_agent NAME)")


@api.exception_handler(AgentTokenRefused)
def _refused_token(request, exc):
    return error_response(401, "unknown or revoked agent token")


@api.exception_handler(HttpError)
def _refused(request, exc):
    """ninja's own refusals (a body that does not parse, a CSRF token missing,
    a login missing) in the API's one shape instead of ninja's {"detail"}."""
    if exc.status_code == 400 and exc.message.startswith("Cannot parse request body"):
        return error_response(400, "the body is not JSON", "body")
    if exc.status_code == 403 and "CSRF" in exc.message:
        return error_response(403, "the CSRF token is missing or wrong: send the csrftoken cookie's "
                           "value as the X-CSRFToken header", "csrf token")
    where = {401: "authorization", 403: "authorization"}.get(exc.status_code, "request")
    return error_response(exc.status_code, exc.message, where)


@api.exception_handler(Http404)
def _not_found(request, exc):
    return error_response(404, str(exc) or "not found", "url")


def found(rows, what: str, **lookup):
    """The one row of `rows` (a model or a queryset) that `lookup` names, or a
    404 that names it as a reader would: "no run 0d9c…", not Django's "No Run
    matches the given query"."""
    queryset = rows._default_manager.all() if isinstance(rows, type) else rows
    try:
        return queryset.get(**lookup)
    except ObjectDoesNotExist:
        raise Http404(f"no {what} {next(iter(lookup.values()))}") from None


@api.exception_handler(ValidationError)
def _malformed(request, exc):
    """A parameter or body that does not parse: 400 naming the first field
    (ninja says 422 in a shape of its own)."""
    first = exc.errors[0] if exc.errors else {}
    loc = [str(p) for p in first.get("loc", ())]
    # ninja puts the parameter group's own name between the place and the field;
    # an item of a list is named by its list: good_runs[0].
    field = f"{loc[-2]}[{loc[-1]}]" if len(loc) > 2 and loc[-1].isdigit() else loc[-1] if loc else ""
    where = f"{loc[0]} field {field}" if len(loc) > 1 else "request"
    more = f" (and {len(exc.errors) - 1} more)" if len(exc.errors) > 1 else ""
    return error_response(400, f"{first.get('msg', 'malformed')}{more}", where)


# The same answers the middleware gives, here too so they do not depend on
# ninja re-raising (it shows a traceback instead under DEBUG).
api.add_exception_handler(OperationalError, store_unavailable)
api.add_exception_handler(InterfaceError, store_unavailable)
api.add_exception_handler(UnreadablePostError, client_went_away)
api.add_exception_handler(OverflowError, out_of_range)


@api.exception_handler(pydantic_core.ValidationError)
def _answer_not_built(request, exc):
    """A query a resolver makes while the answer is built fails inside
    pydantic, which keeps only the error's name: a database lost there is a
    503 too. Anything else is a bug of ours and stays a 500."""
    lost = ("OperationalError:", "InterfaceError:")
    if all(e["type"] == "get_attribute_error" and str(e.get("ctx", {}).get("error")).startswith(lost)
           for e in exc.errors()):
        return store_unavailable(request, exc)
    raise exc


class Error(Schema):
    error: str
    where: str | None = None


def storable(value):
    """Text PostgreSQL can keep: no NUL (neither text nor jsonb takes it), no
    lone surrogate (not UTF-8)."""
    for text in (value if isinstance(value, list) else [value]):
        if isinstance(text, str):
            if "\x00" in text:
                raise ValueError("holds a NUL character, which the store cannot keep")
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError("holds a lone surrogate (not UTF-8 text)") from None
    return value


def _no_nul(schema: dict) -> None:
    """Each string of a body's schema (a field, a list's items, an anyOf's
    branch) without a pattern of its own takes NO_NUL: storable() refuses a NUL.
    (A lone surrogate is not JSON a client makes from text: left unsaid.)"""
    for sub in ([schema["items"]] if "items" in schema else []) + schema.get("anyOf", []):
        _no_nul(sub)
    if schema.get("type") == "string" and "enum" not in schema:
        schema.setdefault("pattern", NO_NUL)


class AgentInput(Schema):
    """What an agent posts: every text field storable (and the description says so)."""
    model_config = {"json_schema_extra": lambda schema, cls: [
        _no_nul(field) for field in schema.get("properties", {}).values()]}

    @field_validator("*", mode="after")
    @classmethod
    def _storable(cls, value):
        return storable(value)


# --- paging ---------------------------------------------------------------------

class Page(Schema):
    count: int
    limit: int
    offset: int


def page_problem(limit: int, offset: int, most: int,
                 names: tuple[str, str] = ("limit", "offset")) -> JsonResponse | None:
    """The 400 for a limit or an offset out of range, or None; `names` are the
    two parameters' names (a regression's verdicts page by verdicts_limit/offset)."""
    if not 1 <= limit <= most:
        return error_response(400, f"{names[0]} must be from 1 to {most}, the most this endpoint "
                              "returns", f"query field {names[0]}")
    if not 0 <= offset <= MAX_OFFSET:
        return error_response(400, f"{names[1]} must be from 0 to {MAX_OFFSET}",
                              f"query field {names[1]}")
    return None


def one_page(queryset, limit: int, offset: int, most: int):
    if problem := page_problem(limit, offset, most):
        return None, problem
    return {"count": queryset.count(), "limit": limit, "offset": offset,
            "items": list(queryset[offset:offset + limit])}, None
