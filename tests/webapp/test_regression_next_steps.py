"""What a maintainer does next on a regression (issue 44, items 7 and 16): a
bisected regression still needs attention, "bisected" is the bisect's word
and never a hand-set state, and a patch compared with its parent is already
the first bad commit, so no bisect is offered."""
from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction
from django.test import Client
from django.utils import timezone

from bundle_maker import planted_bundle
from iowatch_web.regressions.models import BisectJob, Regression

pytestmark = pytest.mark.django_db(transaction=True)

# One run a kernel: the host is calibrated first (conftest.post, issue 41 item 1).
CALIBRATE_HOSTS = True

NOISE = [-10, 4, 10, -4, 0]


def _kernel(commit: int, patch: int | None = None) -> dict:
    k = {"release": "6.12.0-iowatch", "git_commit": f"{commit:012x}", "config_hash": "c0ffee"}
    if patch is not None:
        k["series"] = {"name": "f2fs: dio write lock", "base": "v6.12", "patch_count": 1}
        k["patch"] = {"index": patch, "subject": "f2fs: drop the write lock"} if patch else {"index": 0}
    return k


def _regression(post, patches: bool = False) -> Regression:
    for commit, level in ((1, 1000), (2, 500)):
        kernel = _kernel(commit, commit - 1 if patches else None)
        doc = planted_bundle({"write.bw_kib_s": [level + e for e in NOISE]}, kernel=kernel,
                             started_at=f"2024-05-0{commit}T10:00:00Z")
        assert post(doc)[0] == 201
    return Regression.objects.get()


@pytest.fixture
def maintainer_client():
    c = Client()
    c.force_login(get_user_model().objects.create_user("maintainer", password="not-used-here"))
    return c


def _finish_bisect(regression: Regression) -> None:
    from iowatch_web.regressions.triage import bisect_finished
    c = regression.comparison
    job = BisectJob.objects.create(
        regression=regression, origin="maintainer", cell_key="k", study="f2fs-dio-write",
        group="seqw", metric_id="write.bw_kib_s", good_kernel=c.base_kernel.release,
        bad_kernel=c.candidate_kernel.release, state="done", claimed_at=timezone.now(),
        result={"first_bad": {"commit": "ab" * 20, "subject": "f2fs: a change"}})
    with transaction.atomic():
        bisect_finished(job)


def test_a_bisected_regression_stays_in_needs_attention(post, client):
    regression = _regression(post)
    _finish_bisect(regression)
    regression.refresh_from_db()
    assert regression.state == "bisected"
    page = client.get("/").content.decode()
    attention = page[page.index('<ol class="lines">'):page.index("</ol>")]
    assert f"#{regression.pk} bisected" in attention, attention
    assert "1 open regression" in page


def test_bisected_cannot_be_set_by_hand_without_a_bisect(post, maintainer_client):
    regression = _regression(post)
    page = maintainer_client.get(f"/regressions/{regression.pk}/").content.decode()
    form = page[page.index('<form method="post" class="triage">'):]
    assert 'value="bisected"' not in form[:form.index("</form>")]
    response = maintainer_client.post(f"/api/v1/regressions/{regression.pk}/triage",
                                      json.dumps({"state": "bisected"}),
                                      content_type="application/json")
    assert response.status_code == 400, response.content
    assert "no finished bisect" in response.json()["error"]
    regression.refresh_from_db()
    assert regression.state == "new" and not regression.events.exists()
    # With a bisect behind it, the state is the bisect's and a person may set it back.
    _finish_bisect(regression)
    maintainer_client.post(f"/api/v1/regressions/{regression.pk}/triage",
                           json.dumps({"state": "acknowledged"}), content_type="application/json")
    response = maintainer_client.post(f"/api/v1/regressions/{regression.pk}/triage",
                                      json.dumps({"state": "bisected"}),
                                      content_type="application/json")
    assert response.status_code == 200, response.content


def test_a_patch_against_its_parent_is_not_offered_a_bisect(post, maintainer_client):
    regression = _regression(post, patches=True)
    assert regression.comparison.reason == "parent"
    page = maintainer_client.get(f"/regressions/{regression.pk}/").content.decode()
    section = page[page.index('id="bisect"'):page.index('id="report"')]
    assert 'name="action" value="bisect"' not in section
    assert "already the first bad commit" in section and "patch 1" in section, section
    assert "Not bisected" not in section
    # Neither the button's POST, the API nor the "bisecting" triage queues one.
    response = maintainer_client.post(f"/regressions/{regression.pk}/", {"action": "bisect"},
                                      follow=True)
    assert "already the first bad commit" in response.content.decode()
    response = maintainer_client.post(f"/api/v1/regressions/{regression.pk}/bisect", "{}",
                                      content_type="application/json")
    assert response.status_code == 400 and "first bad commit" in response.json()["error"]
    response = maintainer_client.post(f"/api/v1/regressions/{regression.pk}/triage",
                                      json.dumps({"state": "bisecting"}),
                                      content_type="application/json")
    assert response.status_code == 400 and "first bad commit" in response.json()["error"]
    assert not BisectJob.objects.exists()
    regression.refresh_from_db()
    assert regression.state == "new"


def test_a_pair_of_kernels_with_commits_between_still_offers_the_bisect(post, maintainer_client):
    regression = _regression(post)
    page = maintainer_client.get(f"/regressions/{regression.pk}/").content.decode()
    assert 'name="action" value="bisect"' in page and "already the first bad commit" not in page
