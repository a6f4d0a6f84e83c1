"""JSON for every error under /api/v1/, from a real `iowatch serve` (issue 42
item 7): a URL or a header past gunicorn's limits never reaches Django, and
gunicorn answered it with an HTML page; iowatch_web.site.gunicorn_conf sets
the limits and answers in the API's shape."""
from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import pytest

from live_server import running_server, scratch_database


@pytest.fixture(scope="module")
def served():
    with scratch_database() as env:
        with running_server(env, workers=1, args=("--no-migrate", "--no-worker")) as (url, _):
            yield urlsplit(url)


def _get(served, path: str, headers: dict | None = None) -> tuple[int, str, dict]:
    conn = http.client.HTTPConnection(served.hostname, served.port, timeout=30)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        raw = response.read()
        return response.status, response.getheader("Content-Type", ""), json.loads(raw)
    finally:
        conn.close()


def test_an_over_long_url_is_a_json_414(served):
    status, kind, said = _get(served, "/api/v1/runs?label=" + "x" * 9000)
    assert (status, kind) == (414, "application/json"), said
    assert said["where"] == "url" and "too long" in said["error"] and "8190" in said["error"]


def test_a_5000_character_url_reaches_the_api_and_is_answered_in_json(served):
    """The issue's URL: gunicorn's default limit (4,094) answered it in HTML."""
    status, kind, said = _get(served, "/api/v1/no-such-thing/" + "x" * 5000)
    assert (status, kind) == (404, "application/json") and said["where"] == "url", said


def test_an_over_large_header_is_a_json_431(served):
    status, kind, said = _get(served, "/api/v1/health", {"X-Padding": "y" * 10_000})
    assert (status, kind) == (431, "application/json"), said
    assert said["where"] == "headers" and "header" in said["error"]


def test_too_many_headers_is_a_json_431(served):
    status, kind, said = _get(served, "/api/v1/health", {f"X-H{i}": "1" for i in range(150)})
    assert (status, kind) == (431, "application/json") and said["where"] == "headers", said
