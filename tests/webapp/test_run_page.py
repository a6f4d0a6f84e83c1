"""A run page shows its cells a page at a time (issue 28: one 100,000-cell
run made an 82 MB page that held a web worker for a minute): the measured
numbers, the cells table and the raw artifacts are the page's cells', with
links to the others. bench/dashboard measures the big run's pages."""
from __future__ import annotations

import re

import pytest

from bundle_maker import make_bundle
from iowatch_web.dashboard.views import CELLS_PER_PAGE

pytestmark = pytest.mark.django_db(transaction=True)


def _cells_table(page: str) -> list[str]:
    """The keys the page's "Cells" table lists, in its order."""
    table = page[page.index('<table class="run-cells">'):]
    table = table[:table.index("</table>")]
    return re.findall(r"<tr><td>([^<]+)</td>", table)


def test_a_run_of_many_cells_is_shown_a_page_of_cells_at_a_time(post, client):
    cells = 2 * CELLS_PER_PAGE + 20
    doc = make_bundle(cells=cells, samples=2)
    assert post(doc)[0] == 201
    keys = sorted(c["id"] for c in doc["cells"])
    url = f"/runs/{doc['run_id']}/"

    first = client.get(url).content.decode()
    assert _cells_table(first) == keys[:CELLS_PER_PAGE]
    assert f"cells 1–{CELLS_PER_PAGE} of {cells}" in first and 'href="?page=2"' in first
    # The measured numbers and the artifacts are those of the page's cells only.
    assert first.count('class="cell-title"') == CELLS_PER_PAGE
    assert first.count('href="/api/v1/artifacts/') == CELLS_PER_PAGE

    last = client.get(url, {"page": 3}).content.decode()
    assert _cells_table(last) == keys[2 * CELLS_PER_PAGE:]
    assert f"cells {2 * CELLS_PER_PAGE + 1}–{cells} of {cells}" in last
    assert 'href="?page=2"' in last and 'href="?page=4"' not in last
    assert last.count('href="/api/v1/artifacts/') == 20
    # A page past the end or not a number shows the nearest page, never an error.
    assert _cells_table(client.get(url, {"page": 99}).content.decode()) == keys[2 * CELLS_PER_PAGE:]
    assert _cells_table(client.get(url, {"page": "x"}).content.decode()) == keys[:CELLS_PER_PAGE]


def test_a_run_of_few_cells_has_no_pager(post, client):
    doc = make_bundle(cells=3, samples=2)
    assert post(doc)[0] == 201
    page = client.get(f"/runs/{doc['run_id']}/").content.decode()
    assert _cells_table(page) == sorted(c["id"] for c in doc["cells"])
    assert "cell-pager" not in page


def test_a_runs_values_page_by_page_are_its_values_in_one_page(post, client):
    # /runs/{id}/values reads only the cells of the page asked (a 100,000-cell
    # run's million values are not read for each page): the pages join up.
    doc = make_bundle(cells=30, samples=4, repetitions=2)
    assert post(doc)[0] == 201
    url = f"/api/v1/runs/{doc['run_id']}/values"
    whole = client.get(url, {"limit": 1000}).json()
    assert whole["count"] == 30 * 2 * 4 == len(whole["items"])
    pages, offset = [], 0
    while offset < whole["count"]:
        page = client.get(url, {"limit": 7, "offset": offset}).json()
        assert page["count"] == whole["count"] and len(page["items"]) <= 7
        pages += page["items"]
        offset += 7
    assert pages == whole["items"]
    assert client.get(url, {"limit": 7, "offset": 1000}).json()["items"] == []


def test_a_run_from_a_lava_job_links_the_job_and_lavas_log_and_no_other_scheme(post, client):
    doc = make_bundle(cells=2, samples=2)
    doc["status"] = "failed"
    doc["environment"]["lava"] = {
        "job": 25, "board": "lava-qemu-02", "device_type": "qemu",
        "job_url": "http://lava.example.org/scheduler/job/25",
        "log_url": "http://lava.example.org/api/v0.2/jobs/25/logs/",
        "attempts": [{"job": 24, "board": "lava-qemu-01", "health": "Incomplete", "infrastructure": "no emulator"},
                     {"job": 25, "board": "lava-qemu-02", "health": "Complete"}]}
    assert post(doc)[0] == 201
    page = client.get(f"/runs/{doc['run_id']}/").content.decode()
    row = re.search(r'<td id="lava-job">(.*?)</td>', page).group(1)
    assert row == ('<a href="http://lava.example.org/scheduler/job/25">25</a> on board lava-qemu-02 (qemu), '
                   'after 2 attempts: <a href="http://lava.example.org/api/v0.2/jobs/25/logs/">LAVA\'s log</a>')
    # a stored URL of another scheme is shown as nothing to click
    doc = make_bundle(cells=2, samples=2)
    doc["environment"]["lava"] = {"job": 7, "board": "b", "device_type": "qemu", "log_url": "javascript:alert(1)"}
    assert post(doc)[0] == 201
    row = re.search(r'<td id="lava-job">(.*?)</td>', client.get(f"/runs/{doc['run_id']}/").content.decode()).group(1)
    assert row == "7 on board b (qemu)"
