"""The health server's WSGI app (iowatch serve --health-port) answers
/api/v1/health as the web port does, and nothing else: a page read can never
be sent to the process that must stay free for health."""
from __future__ import annotations

import json
from wsgiref.util import setup_testing_defaults

import pytest

from iowatch_web.site import health_wsgi


def _get(path: str, method: str = "GET") -> tuple[str, dict]:
    environ = {"PATH_INFO": path, "REQUEST_METHOD": method, "HTTP_HOST": "127.0.0.1"}
    setup_testing_defaults(environ)
    said = {}

    def start_response(status, headers, exc_info=None):
        said["status"] = status

    body = b"".join(health_wsgi.application(environ, start_response))
    return said["status"], json.loads(body)


@pytest.mark.django_db(transaction=True)
def test_the_health_port_answers_health():
    status, body = _get("/api/v1/health")
    assert status.startswith("200") and body["status"] == "ok"


@pytest.mark.parametrize("path,method", [("/compare", "GET"), ("/api/v1/runs", "GET"),
                                         ("/api/v1/health", "POST"), ("/api/v1/health/", "GET")])
def test_the_health_port_answers_nothing_else(path, method):
    status, body = _get(path, method)
    assert status.startswith("404") and "/api/v1/health only" in body["error"]
