"""One "before" number a cell on every page (issue 44, item 12): the list,
the regression page and the API detail the mail is written from show the
two numbers the change is computed from (the verdict's centre), never the
means on one page and the medians on another."""
from __future__ import annotations

import statistics

import pytest

from bundle_maker import planted_bundle
from iowatch import figures
from iowatch.metrics import METRICS
from iowatch_web.regressions.models import Regression, StoredVerdict

pytestmark = pytest.mark.django_db(transaction=True)

# One run a kernel: the host is calibrated first (conftest.post, issue 41 item 1).
CALIBRATE_HOSTS = True

# Skewed, so the mean, the median and the geometric mean of each side differ.
BASE = [900, 1000, 1000, 1100, 1500]
CANDIDATE = [450, 500, 500, 550, 750]


def test_the_list_the_regression_page_and_the_detail_show_the_changes_own_numbers(post, client):
    for commit, values in ((1, BASE), (2, CANDIDATE)):
        doc = planted_bundle({"write.bw_kib_s": values}, started_at=f"2024-05-0{commit}T10:00:00Z",
                             kernel={"release": "6.12.0-iowatch", "git_commit": f"{commit:012x}"})
        assert post(doc)[0] == 201
    regression = Regression.objects.get()
    v = StoredVerdict.objects.get(outcome="regression")
    assert v.centre_statistic == "geometric mean"
    unit = METRICS["write.bw_kib_s"].unit
    (b, a), shown = figures.amount((v.base_centre, v.candidate_centre), unit)
    said = f"{b} → {a} {shown} (geometric means)"
    (mb, ma), _ = figures.amount((statistics.mean(BASE), statistics.mean(CANDIDATE)), unit)
    (db, da), _ = figures.amount((statistics.median(BASE), statistics.median(CANDIDATE)), unit)
    assert len({b, mb, db}) == 3  # three statistics, three different numbers
    for url in ("/regressions/", f"/regressions/{regression.pk}/", "/"):
        page = client.get(url).content.decode()
        if url != "/":
            assert said in page, url
        assert f"{mb} → {ma}" not in page and f"{db} → {da}" not in page, url
    # The API's detail, which the mail is rendered from, gives the same two numbers.
    cell = client.get(f"/api/v1/regressions/{regression.pk}").json()["cells"][0]
    assert (cell["base"]["centre"], cell["candidate"]["centre"]) == pytest.approx(
        (v.base_centre, v.candidate_centre))


def test_a_verdict_stored_before_its_centre_shows_its_medians_as_the_mail_does(post, client):
    for commit, values in ((1, BASE), (2, CANDIDATE)):
        doc = planted_bundle({"write.bw_kib_s": values}, started_at=f"2024-05-0{commit}T10:00:00Z",
                             kernel={"release": "6.12.0-iowatch", "git_commit": f"{commit:012x}"})
        assert post(doc)[0] == 201
    StoredVerdict.objects.update(base_centre=None, candidate_centre=None, centre_statistic="")
    regression = Regression.objects.get()
    (b, a), shown = figures.amount((statistics.median(BASE), statistics.median(CANDIDATE)),
                                   METRICS["write.bw_kib_s"].unit)
    page = client.get(f"/regressions/{regression.pk}/").content.decode()
    assert f"{b} → {a} {shown} (medians)" in page
    mail = client.get(f"/api/v1/regressions/{regression.pk}/report?format=text").content.decode()
    assert f"before {b} {shown}, after {a} {shown} (medians)" in " ".join(mail.split())
