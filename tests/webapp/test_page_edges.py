"""The pages at their edges (issue 28): what a new user saw wrong on a fresh
install, each held here through the Django test client."""
from __future__ import annotations

import re

import pytest

from bundle_maker import planted_bundle

pytestmark = pytest.mark.django_db(transaction=True)
NOISE = [-4, 2, 4, -2, 0]


def _kernel(commit: int, patch: int | None = None, series: dict | None = None) -> dict:
    k = {"release": "6.12.0-iowatch", "git_commit": f"{commit:012x}", "config_hash": "c0ffee"}
    if patch is not None:
        k["series"] = series or {"name": "ext4: a range", "base": "v6.12"}
        k["patch"] = {"index": patch, "subject": f"ext4: step {patch}"} if patch else {"index": 0}
    return k


def test_the_series_index_counts_the_patches_of_a_series_that_came_without_a_count(post, client):
    # A series checked from a git range records no patch count; its patches are still known.
    for patch in (0, 1, 2):
        doc = planted_bundle({"write.bw_kib_s": [1000 + e for e in NOISE]}, kernel=_kernel(10 + patch, patch))
        assert post(doc)[0] == 201
    page = client.get("/series/").content.decode()
    row = re.search(r"<tr><td class=\"wrap\"><a [^>]*>ext4: a range</a></td><td>v6.12</td>"
                    r"<td class=\"num\">([^<]*)</td>", page)
    assert row and row[1] == "2", page[page.index("<tbody>"):][:600]


def test_the_history_page_starts_from_a_series_key_with_a_history(post, client):
    # Two kernels on lab-1, then the newest run: one kernel on lab-2, a one-point "history".
    for commit, host in ((1, "lab-1"), (2, "lab-1"), (3, "lab-2")):
        doc = planted_bundle({"write.bw_kib_s": [1000 + e for e in NOISE]}, kernel=_kernel(commit),
                             host=host, started_at=f"2024-05-0{commit}T10:00:00Z")
        assert post(doc)[0] == 201
    page = client.get("/history").content.decode()
    src = re.search(r'data-src="([^"]+)"', page)[1]
    assert "host=lab-1" in src and "metric=write.bw_kib_s" in src, src
    # A key that names the one-kernel host is kept as asked.
    page = client.get("/history", {"host": "lab-2"}).content.decode()
    assert "host=lab-2" in re.search(r'data-src="([^"]+)"', page)[1]


@pytest.mark.parametrize("path", ["/runs/00000000-0000-4000-8000-000000000000/", "/no/such/page/",
                                  "/regressions/999999/"])
def test_a_page_that_is_not_there_is_a_dashboard_page_saying_so(client, path):
    response = client.get(path)
    page = response.content.decode()
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")
    assert "dashboard/dashboard.css" in page and 'class="brand"' in page  # styled, with the menu
    assert "<h1>Not found</h1>" in page and f"<code>{path}</code>" in page


def test_the_compare_form_offers_the_kernels_to_pick_from(post, client):
    series = {"name": "ext4: yield", "base": "v6.12", "patch_count": 1}
    for commit, patch in ((20, 0), (21, 1)):
        doc = planted_bundle({"write.bw_kib_s": [1000 + e for e in NOISE]},
                             kernel=_kernel(commit, patch, series))
        assert post(doc)[0] == 201
    from iowatch_web.results.models import Kernel
    base, patch = (Kernel.objects.get(git_commit=f"{c:012x}") for c in (20, 21))
    page = client.get("/compare").content.decode()
    assert 'list="kernel-choices"' in page
    options = dict(re.findall(r'<option value="(kernel:\d+)" label="([^"]*)">', page))
    assert options[f"kernel:{patch.pk}"] == "6.12.0-iowatch 000000000015, patch 1 of the series &#x27;ext4: yield&#x27;"
    assert options[f"kernel:{base.pk}"].endswith("base of the series &#x27;ext4: yield&#x27;")
    assert list(options)[0] == f"kernel:{patch.pk}"  # the newest run's kernel first


def test_a_smoke_run_is_not_listed_as_a_nightly(post, client):
    nightly = planted_bundle({"write.bw_kib_s": [1000 + e for e in NOISE]}, kernel=_kernel(30),
                             matrix="nightly", started_at="2024-05-01T02:00:00Z")
    nightly.update(schema_version=2, trigger={"kind": "nightly", "branch": "master"})
    smoke = planted_bundle({"write.bw_kib_s": [1000 + e for e in NOISE]}, kernel=_kernel(31),
                           matrix="smoke", started_at="2024-05-01T10:00:00Z")
    for doc in (nightly, smoke):
        assert post(doc)[0] == 201
    page = client.get("/").content.decode()
    table = page[page.index('<table class="nightlies">'):]
    table = table[:table.index("</table>")]
    assert "00000000001e" in table and "00000000001f" not in table, table
