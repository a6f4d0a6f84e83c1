"""The API read as a stranger reads it (issue 44 item 15): /api/v1/ says what
it holds, every list is paged, every operation's summary is a sentence, and a
404 names the thing and the id that were not found."""
from __future__ import annotations

import pytest
from django.test import Client

from iowatch_web.site.api import api


def test_the_api_root_lists_its_endpoints_and_its_docs(client):
    response = client.get("/api/v1/")
    assert response.status_code == 200, response.content
    index = response.json()
    assert index["docs"] == "/api/v1/docs" and index["openapi"] == "/api/v1/openapi.json"
    paths = {e["path"]: e for e in index["endpoints"]}
    for path in ("/api/v1/bundles", "/api/v1/runs", "/api/v1/regressions", "/api/v1/bisects",
                 "/api/v1/confirmations", "/api/v1/hosts", "/api/v1/health"):
        assert path in paths, sorted(paths)
    assert paths["/api/v1/bundles"]["methods"] == ["POST"]
    assert all(e["summary"] for e in index["endpoints"])


def _ninja_default(operation_id: str) -> str:
    # ninja's summary when none is given: the view's name, title-cased ("Get Run").
    return operation_id.rsplit("_", 1)[-1].title()


def test_every_operation_is_summed_up_in_words_not_its_function_name():
    schema = api.get_openapi_schema()
    said = {}
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            view = operation["operationId"].split("_api_")[-1]
            said[f"{method.upper()} {path}"] = (operation.get("summary", ""), view)
    ninja_words = {k: s for k, (s, view) in said.items()
                   if s.lower() == view.replace("_", " ").lower() or len(s.split()) < 4}
    assert not ninja_words, ninja_words


@pytest.mark.django_db
@pytest.mark.parametrize("endpoint", ["bisects", "confirmations"])
def test_bisects_and_confirmations_are_paged_like_the_other_lists(client, endpoint):
    page = client.get(f"/api/v1/{endpoint}", {"limit": 5, "offset": 0}).json()
    assert (page["count"], page["limit"], page["offset"], page["items"]) == (0, 5, 0, [])
    refused = client.get(f"/api/v1/{endpoint}", {"limit": 5000})
    assert refused.status_code == 400 and refused.json()["where"] == "query field limit"
    operation = client.get("/api/v1/openapi.json").json()["paths"][f"/api/v1/{endpoint}"]["get"]
    assert {"limit", "offset"} <= {p["name"] for p in operation["parameters"]}


@pytest.mark.django_db
@pytest.mark.parametrize("path, said", [
    ("runs/00000000-0000-4000-8000-000000000000", "no run 00000000-0000-4000-8000-000000000000"),
    ("runs/00000000-0000-4000-8000-000000000000/cells", "no run 00000000-0000-4000-8000-000000000000"),
    ("cells/123", "no cell 123"),
    ("cells/123/samples", "no cell 123"),
    ("artifacts/123", "no artifact 123"),
    ("regressions/123", "no regression 123"),
    ("regressions/123/report", "no regression 123"),
    ("regressions/123/report?format=text", "no regression 123"),
    ("bisects/123", "no bisect job 123"),
    ("confirmations/123", "no confirmation job 123"),
    ("hosts/lab-9", "no host lab-9"),
])
def test_a_404_names_what_was_not_found(client, path, said):
    response = client.get(f"/api/v1/{path}")
    assert response.status_code == 404
    assert response.json() == {"error": said, "where": "url"}


@pytest.mark.django_db
def test_triage_of_an_unknown_regression_names_it(client, django_user_model):
    """A logged-in triage of a regression that is not there is a 404 in the
    API's words, not Django's "No Regression matches the given query"."""
    user = django_user_model.objects.create_user("triager", password="x")
    csrf = Client(enforce_csrf_checks=False)
    csrf.force_login(user)
    response = csrf.post("/api/v1/regressions/123/triage", {"state": "acknowledged"},
                         content_type="application/json")
    assert response.status_code == 404, response.content[:300]
    assert response.json() == {"error": "no regression 123", "where": "url"}
