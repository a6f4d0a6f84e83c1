"""The per-device-class roll-up (issue 44): each device class and study with
its latest stored state, its trend and its open regressions, for a branch, a
series or the whole lab; read from the stored decisions (column_states), never
judged again. Through the test client on the dashboard's store: a series whose
patch 2 halves the SD card's write bandwidth, and nightlies of master on
lab-2 with a step down."""
from __future__ import annotations

import html as markup
import re

from iowatch.vocabulary.outcomes import Outcome
from iowatch_web.regressions.models import Regression, StoredComparison


def _rows(html: str, device_class: str) -> dict[str, str]:
    """The class's section: each study's row, as text."""
    section = html.split(f"<h2>{device_class}</h2>", 1)[1].split("</section>", 1)[0]
    rows = {}
    for row in re.findall(r"<tr><td><a href=\"/studies/[^\"]+/\">([^<]+)</a></td>(.*?)</tr>", section, re.S):
        rows[row[0]] = row[1]
    return rows


def _latest(scope) -> StoredComparison:
    return scope.order_by("computed_at", "id").last()


def test_the_whole_lab_by_device_class_with_its_latest_state_and_open_regressions(store, client):
    response = client.get("/device-classes/")
    assert response.status_code == 200
    html = response.content.decode()
    rows = _rows(html, "sdcard")
    row = rows[store.study]
    latest = _latest(StoredComparison.objects.filter(reason__in=("parent", "previous-run")))
    [column] = [c for c in latest.column_states if c["study"] == store.study]
    assert f'class="chip {column["state"]}"' in row and Outcome(column["state"]).short in row
    # Both open regressions of the class and study are named, linked.
    for regression in (store.ab_regression, store.change_point_regression):
        assert f'href="/regressions/{regression}/">#{regression}</a>' in row, row
    assert 'href="/device-classes/"' in html  # the nav names the page


def test_a_series_shows_its_patches_against_their_parents(store, client):
    html = client.get("/device-classes/", {"series": store.series_id}).content.decode()
    row = _rows(html, "sdcard")[store.study]
    parents = StoredComparison.objects.filter(reason="parent",
                                              candidate_kernel__series_id=store.series_id)
    assert row.count("chip dot ") == parents.count() == 2
    # Patch 2 halves the bandwidth: the latest is a regression; what patch 1 was is said beside it.
    first = parents.order_by("computed_at", "id").first()
    [was] = [c["state"] for c in first.column_states if c["study"] == store.study]
    assert 'class="chip regression"' in row
    assert f'changed: was <span class="chip {was}">{Outcome(was).short}</span>' in row
    assert f"#{store.ab_regression}</a>" in row and f"#{store.change_point_regression}</a>" not in row


def test_a_branch_shows_its_nightlies_over_time(store, client):
    html = client.get("/device-classes/", {"branch": "master", "days": "365"}).content.decode()
    row = _rows(html, "sdcard")[store.study]
    nightly = StoredComparison.objects.filter(reason="previous-run",
                                              candidate_runs__trigger__branch="master").distinct()
    assert row.count("chip dot ") == min(nightly.count(), 8) and nightly.count() >= 2
    assert f"#{store.change_point_regression}</a>" in row and f"#{store.ab_regression}</a>" not in row


def test_it_reads_the_stored_decision_and_never_judges_again(store, client):
    """A stored state changed by hand is what the page shows: nothing recomputes it."""
    latest = _latest(StoredComparison.objects.filter(reason="parent",
                                                     candidate_kernel__series_id=store.series_id))
    latest.column_states = [{**c, "state": Outcome.IMPROVEMENT.state} for c in latest.column_states]
    latest.save()
    row = _rows(client.get("/device-classes/", {"series": store.series_id}).content.decode(),
                "sdcard")[store.study]
    assert 'class="chip improvement"' in row.split("</td>", 1)[0]


def test_an_unknown_branch_or_series_or_window_is_a_400_that_says_what_to_pick(store, client):
    for query, said in (({"branch": "for-next"}, "no nightly runs of a branch named 'for-next'"),
                        ({"series": "999999"}, "no series '999999'"),
                        ({"days": "3"}, "days='3': pick one of 7, 30, 90, 365")):
        response = client.get("/device-classes/", query)
        assert response.status_code == 400 and said in markup.unescape(response.content.decode()), query
    assert Regression.objects.exists()
