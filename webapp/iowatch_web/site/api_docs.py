"""/api/v1/docs: the API's reference as one server-rendered page, read from
its OpenAPI description. Swagger UI, ninja's default, made this page 1.7 MB of
script (issue 44 item 19) with no lang; this one is a few kilobytes of HTML in
the dashboard's frame (its nav, skip link and styles), and tools still read
/api/v1/openapi.json."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from ninja.openapi.docs import DocsBase


def _type(schema: dict) -> str:
    """A parameter's or a field's type as a reader writes it: "integer",
    "string or null", "list of string", "Error"."""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " or ".join(_type(s) for s in schema["anyOf"])
    if schema.get("type") == "array":
        return "list of " + _type(schema.get("items", {}))
    if "enum" in schema:
        return "one of " + ", ".join(map(str, schema["enum"]))
    return schema.get("type", "any")


def _parameters(operation: dict) -> list[dict]:
    return [{"name": p["name"], "where": p["in"], "required": p.get("required", False),
             "type": _type(p.get("schema", {})), "description": p.get("description", "")}
            for p in operation.get("parameters") or []]


def _body(operation: dict) -> str:
    content = (operation.get("requestBody") or {}).get("content", {})
    return ", ".join(f"{kind}: {_type(c.get('schema', {}))}" for kind, c in content.items())


def operations(schema: dict) -> list[dict]:
    """Each operation of an OpenAPI description, in its order, as the page lists it."""
    found = []
    for path, methods in schema["paths"].items():
        for method, op in methods.items():
            found.append({
                "method": method.upper(), "path": path, "summary": op.get("summary", ""),
                "description": op.get("description", ""), "tags": op.get("tags", []),
                "anchor": op.get("operationId", f"{method}-{path}"),
                "parameters": _parameters(op), "body": _body(op),
                "responses": [{"status": status, "description": r.get("description", "")}
                              for status, r in sorted(op.get("responses", {}).items(), key=lambda x: str(x[0]))],
            })
    return found


class ReferenceDocs(DocsBase):
    """ninja's docs hook: the page above instead of Swagger UI."""

    def render_page(self, request: HttpRequest, api, **kwargs) -> HttpResponse:
        schema = api.get_openapi_schema()
        return render(request, "dashboard/api_docs.html", {
            "title": schema["info"]["title"], "description": schema["info"].get("description", ""),
            "version": schema["info"]["version"], "operations": operations(schema),
            "openapi_url": self.get_openapi_url(api, kwargs)})
