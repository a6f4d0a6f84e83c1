"""The API and the pages at their edges (issue 28): values a store holds two
ways, ids past the store's integers, and errors in the API's one shape.

Each case answered a 500 (or an HTML page under /api/) before it was fixed."""
from __future__ import annotations

import json
import uuid

import pytest

from bundle_maker import make_bundle


def _again(doc: dict, **kernel) -> dict:
    """The same bundle as a new run of a new release, with the kernel fields changed."""
    doc = json.loads(json.dumps(doc))
    doc["run_id"] = str(uuid.uuid4())
    doc["kernel"].update(kernel)
    return doc


@pytest.mark.django_db(transaction=True)
def test_an_empty_config_hash_and_a_null_one_are_the_same_kernel(post):
    # The reproduction: "" first, then null for the same release.
    first = _again(make_bundle(), release="6.13.0-edge", config_hash="")
    second = _again(first, config_hash=None)
    status, body = post(first)
    assert status == 201, body
    status, body = post(second)
    assert status == 201, body
    from iowatch_web.results.models import Kernel, Run
    assert Kernel.objects.filter(release="6.13.0-edge").count() == 1
    assert Run.objects.filter(kernel__release="6.13.0-edge").count() == 2


@pytest.mark.django_db(transaction=True)
def test_an_empty_series_base_and_a_null_one_are_the_same_series(post):
    first = make_bundle()
    first["kernel"]["series"]["base"] = ""
    second = _again(first)
    second["kernel"]["series"]["base"] = None
    for doc in (first, second):
        status, body = post(doc)
        assert status == 201, body
    from iowatch_web.results.models import PatchSeries
    assert PatchSeries.objects.count() == 1


HUGE = 99999999999999999999999  # the id: past 2**63 - 1


@pytest.mark.django_db
@pytest.mark.parametrize("path", [
    f"/compare?base=kernel:{HUGE}&candidate=kernel:1",
    f"/compare?base=kernel:1&candidate=kernel:{2 ** 63}",
    f"/dashboard/api/compare?base=kernel:{HUGE}&candidate=kernel:1",
    f"/series/{HUGE}/", f"/regressions/{HUGE}/",
    f"/api/v1/regressions/{HUGE}", f"/api/v1/regressions/{HUGE}/report",
])
def test_an_id_past_the_stores_integers_is_a_400_or_404_on_pages_too(client, path):
    response = client.get(path)
    assert response.status_code in (400, 404), (response.status_code, response.content[:300])
    if path.startswith("/api/"):
        assert set(response.json()) == {"error", "where"}


def _error_shape(response, status: int) -> dict:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json"), response.content[:300]
    body = response.json()
    assert set(body) == {"error", "where"} and body["error"], body
    return body


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/", "/api/v1/nothing-here", "/api/v2/runs"])
def test_an_unknown_url_under_api_is_a_json_404(client, path):
    assert "url" in _error_shape(client.get(path), 404)["where"]


@pytest.mark.django_db
def test_a_session_post_without_its_csrf_token_is_a_json_403(client):
    from django.contrib.auth import get_user_model
    from django.test import Client
    c = Client(enforce_csrf_checks=True)
    c.force_login(get_user_model().objects.create_user("maintainer"))
    response = c.post("/api/v1/regressions/1/triage", {"state": "invalid"},
                      content_type="application/json")
    assert "csrf" in _error_shape(response, 403)["where"].lower()


@pytest.mark.django_db
def test_an_anonymous_triage_is_a_json_401(client):
    response = client.post("/api/v1/regressions/1/triage", {"state": "invalid"},
                           content_type="application/json")
    _error_shape(response, 401)


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/bisects/claim", "/api/v1/bisects/1/steps",
                                  "/api/v1/bisects/1/result"])
def test_a_body_that_does_not_parse_on_the_bisect_endpoints_is_a_json_400(client, agent_token, path):
    response = client.post(path, b"{not json", content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {agent_token}")
    assert _error_shape(response, 400)["where"] == "body"


@pytest.mark.django_db
def test_a_wrong_method_under_api_is_a_json_405(client):
    _error_shape(client.delete("/api/v1/runs"), 405)


PAGES = ["/", "/series/", "/compare", "/history", "/regressions/", "/runs/", "/studies/",
         "/accounts/login/", "/admin/login/", "/api/v1/docs", "/api/v1/runs", "/no-such-page/"]


@pytest.mark.django_db
@pytest.mark.parametrize("path", PAGES)
def test_every_answer_carries_a_strict_content_security_policy(client, path):
    policy = client.get(path).get("Content-Security-Policy", "")
    directives = dict((d.split(" ", 1) + [""])[:2] for d in policy.split("; "))
    assert directives.get("default-src") == "'self'", policy
    for name in ("script-src", "style-src"):
        assert directives.get(name) == "'self'", policy  # no 'unsafe-inline', nothing outside
    assert directives.get("object-src") == "'none'" and directives.get("frame-ancestors") == "'none'"


def test_the_dashboard_templates_hold_no_inline_script_or_style():
    # What the policy would block: the browser tests (tests/dashboard) load the pages.
    from pathlib import Path
    import re
    import iowatch_web.dashboard
    templates = Path(iowatch_web.dashboard.__file__).parent / "templates"
    for template in templates.rglob("*.html"):
        text = template.read_text()
        assert not re.search(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)", text), template
        assert not re.search(r"<style\b|\sstyle=|\son[a-z]+=", text), template
