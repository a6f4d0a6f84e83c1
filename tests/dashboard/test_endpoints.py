"""The dashboard's chart endpoints and pages through Django's test client:
what they filter and page, what they refuse, and that untrusted text stays data."""
from __future__ import annotations

import json

import pytest
from dashboard_browser import SCRIPT
from django.test import Client

from iowatch_web.regressions.models import Regression, TriageEvent


def test_the_chart_endpoints_filter_and_page_in_the_database(store, client):
    overview = client.get("/dashboard/api/overview").json()
    assert overview["regressions_by_state"]["new"] == Regression.objects.count() >= 2
    assert {h["name"] for h in overview["hosts"]} >= {"lab-1", "lab-2"}

    key = {"study": store.study, "host": "lab-2", "device": "sd0", "filesystem": "f2fs",
           "group": "seqw", "metric": "write.bw_kib_s"}
    history = client.get("/dashboard/api/history", key).json()
    assert len(history["kernels"]) == 10 and len(history["points"]) == 50
    assert [c["x"] for c in history["change_points"]] == [7]
    assert history["kernels"][0]["median"] == pytest.approx(1000)
    newest = client.get("/dashboard/api/history", {**key, "limit": 3}).json()
    assert [k["id"] for k in newest["kernels"]] == [k["id"] for k in history["kernels"][-3:]]
    assert client.get("/dashboard/api/history", {"study": store.study}).status_code == 400

    _, patch1, patch2 = store.kernels
    compared = client.get("/dashboard/api/compare", {"base": f"kernel:{patch1}",
                                                     "candidate": f"kernel:{patch2}",
                                                     "metric": "write.bw_kib_s"}).json()
    assert {c["metric"] for c in compared["cells"]} == {"write.bw_kib_s"}
    assert {c["outcome"] for c in compared["cells"]} == {"regression"}
    assert "REGRESSION" in compared["report"]
    missing = client.get("/dashboard/api/compare", {"base": "no-such-kernel", "candidate": "x"})
    assert missing.status_code == 404 and "no-such-kernel" in missing.json()["error"]

    # The post's claims, each with the lab's numbers beside it (test_claim_check.py checks the verdicts).
    published = client.get(f"/dashboard/api/published/{store.study}").json()
    assert published["study"]["title"] and published["claims"]
    assert any(b["kind"] == "newest" for c in published["claims"] for b in c["bars"]), published


def test_untrusted_text_is_escaped_in_pages_and_plain_data_in_json(store, client):
    for path in (f"/series/{store.series_id}/", "/runs/", "/"):
        page = client.get(path).content.decode()
        assert SCRIPT not in page, path
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in client.get(f"/series/{store.series_id}/").content.decode()
    runs = client.get("/dashboard/api/overview").json()["runs"]
    assert SCRIPT in {r["label"] for r in runs}  # data, for textContent


def test_an_anonymous_post_is_refused_and_a_logged_in_one_needs_the_csrf_token(store,
                                                                              django_user_model):
    url = f"/regressions/{store.ab_regression}/"
    anonymous = Client(enforce_csrf_checks=True)
    anonymous.get("/accounts/login/")  # a page with a form sets the CSRF cookie
    token = anonymous.cookies["csrftoken"].value
    assert anonymous.post(url, {"state": "invalid", "csrfmiddlewaretoken": token}).status_code == 403
    assert b"form method=\"post\" class=\"triage\"" not in anonymous.get(url).content

    user = django_user_model.objects.create_user("maintainer", password="a-long-test-password")
    maintainer = Client(enforce_csrf_checks=True)
    maintainer.force_login(user)
    assert maintainer.post(url, {"state": "invalid"}).status_code == 403  # no CSRF token
    page = maintainer.get(url)
    assert b'class="triage"' in page.content
    token = maintainer.cookies["csrftoken"].value
    done = maintainer.post(url, {"state": "bogus", "csrfmiddlewaretoken": token})
    assert done.status_code == 302 and Regression.objects.get(pk=store.ab_regression).state == "new"
    done = maintainer.post(url, {"state": "fixed", "note": "v2 fixes it",
                                 "csrfmiddlewaretoken": token})
    assert done.status_code == 302
    regression = Regression.objects.get(pk=store.ab_regression)
    assert (regression.state, regression.notes) == ("fixed", "v2 fixes it")
    assert TriageEvent.objects.get(regression=regression).user == user
    # The API's triage is the same code.
    api = maintainer.post(f"/api/v1/regressions/{regression.pk}/triage",
                          json.dumps({"state": "acknowledged"}), content_type="application/json",
                          HTTP_X_CSRFTOKEN=token)
    assert api.status_code == 200 and api.json()["state"] == "acknowledged"
