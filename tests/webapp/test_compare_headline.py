"""The compare page's headline says what the comparison can carry (issue 28):
no deciding cell in common is "nothing to compare", one sample a side is
"size only, not confirmed", and a name that matches several kernels of a
series is refused with the kernels named, never pooled into one side."""
from __future__ import annotations

import re

import pytest

from bundle_maker import planted_bundle
from iowatch_web.results.models import Kernel

NOISE = [-4, 2, 4, -2, 0]


def _kernel(commit: int, patch: int | None = None, release: str = "6.12.0-iowatch") -> dict:
    k = {"release": release, "git_commit": f"{commit:012x}", "config_hash": "c0ffee"}
    if patch is not None:
        k["series"] = {"name": "f2fs: dio write lock", "base": "v6.12", "patch_count": 2}
        k["patch"] = {"index": patch, "subject": f"f2fs: step {patch}"} if patch else {"index": 0}
    return k


def _headline(client, base: str, candidate: str):
    response = client.get("/compare", {"base": base, "candidate": candidate})
    text = response.content.decode()
    m = re.search(r'class="compare-verdict"><strong>Verdict:</strong>\s*(.*?)</p>', text, re.S)
    return response, (m[1].strip() if m else None), text


@pytest.mark.django_db(transaction=True)
def test_sides_with_no_deciding_cell_in_common_say_nothing_to_compare(post, client):
    a = planted_bundle({"write.bw_kib_s": [1000 + e for e in NOISE]}, kernel=_kernel(1))
    b = planted_bundle({"write.bw_kib_s": [1000 + e for e in NOISE]}, kernel=_kernel(2),
                       study="odirect-vs-readers", group="writer")
    for doc in (a, b):
        assert post(doc)[0] == 201
    response, headline, _ = _headline(client, a["run_id"], b["run_id"])
    assert response.status_code == 200
    assert headline.lower().startswith("nothing to compare"), headline
    assert "rerun" not in headline and "UNSURE" not in headline


@pytest.mark.django_db(transaction=True)
def test_one_sample_a_side_says_size_only_never_confirmed(post, client):
    a = planted_bundle({"write.bw_kib_s": [1000]}, kernel=_kernel(1), published=True)
    b = planted_bundle({"write.bw_kib_s": [500]}, kernel=_kernel(2), published=True)
    for doc in (a, b):
        assert post(doc)[0] == 201
    response, headline, text = _headline(client, a["run_id"], b["run_id"])
    assert response.status_code == 200
    assert "size only" in headline.lower() and "not confirmed" in headline.lower(), headline
    summary = text[text.index('id="compare-summary"'):text.index("</section>")]
    assert "confirmed slower" not in summary and "state-regression" not in text


@pytest.mark.django_db(transaction=True)
def test_a_release_shared_by_a_series_kernels_is_refused_naming_them(post, client):
    for patch, level in ((0, 1000), (1, 1000), (2, 500)):
        assert post(planted_bundle({"write.bw_kib_s": [level + e for e in NOISE]},
                                   kernel=_kernel(patch + 1, patch)))[0] == 201
    other = planted_bundle({"write.bw_kib_s": [1000 + e for e in NOISE]},
                           kernel=_kernel(9, release="6.11.0"))
    assert post(other)[0] == 201
    response, headline, text = _headline(client, "6.11.0", "6.12.0-iowatch")
    assert response.status_code == 400 and headline is None
    assert "matches 3 kernels" in text
    for k in Kernel.objects.filter(release="6.12.0-iowatch"):
        assert f"kernel:{k.pk}" in text  # each one named, to pick
    data = client.get("/dashboard/api/compare", {"base": "6.11.0", "candidate": "6.12.0-iowatch"})
    assert data.status_code == 400 and "matches 3 kernels" in data.json()["error"]
    # One kernel by its id still compares.
    patch2 = Kernel.objects.get(patch_index=2)
    response, headline, _ = _headline(client, "6.11.0", f"kernel:{patch2.pk}")
    assert response.status_code == 200 and headline


@pytest.mark.django_db(transaction=True)
def test_a_compare_pages_its_cells_and_every_page_says_the_same_decision(post, client, monkeypatch,
                                                                         calibrated):
    from iowatch_web.dashboard import compare_page
    monkeypatch.setattr(compare_page, "CELLS_PER_PAGE", 2)
    a = planted_bundle({"write.bw_kib_s": [1000 + e for e in NOISE]}, kernel=_kernel(1), cells=5)
    b = planted_bundle({"write.bw_kib_s": [500 + e for e in NOISE]}, kernel=_kernel(2), cells=5)
    for doc in (calibrated(a), b):
        assert post(doc)[0] == 201
    sides = {"base": a["run_id"], "candidate": b["run_id"]}
    pages = [client.get("/dashboard/api/compare", {**sides, "page": n}).json() for n in (1, 2, 3)]
    assert [len(p["cells"]) for p in pages] == [2, 2, 1]
    assert {p["cell_count"] for p in pages} == {5} and {p["pages"] for p in pages} == {3}
    assert len({c["device"] + c["filesystem"] + c["group"] + str(c["base"]) for p in pages
                for c in p["cells"]}) == 5  # every cell once
    # The decision is every cell's, on each page.
    assert {p["state"] for p in pages} == {"regression"}
    assert {p["headline"] for p in pages} == {pages[0]["headline"]}
    assert {tuple((s["outcome"], s["n"]) for s in p["summary"]) for p in pages} == {
        tuple((s["outcome"], s["n"]) for s in pages[0]["summary"])}
    assert ("regression", 5) in {(s["outcome"], s["n"]) for s in pages[0]["summary"]}
    headlines = set()
    for n in (1, 3):
        page = client.get("/compare", {**sides, "page": n}).content.decode()
        table = page[page.index('class="cells compare-table"'):]
        table = table[:table.index("</table>")]
        assert table.count('<tr class="outcome-') == (2 if n == 1 else 1)
        assert f"cells {2 * n - 1}–{min(2 * n, 5)} of 5" in page
        headlines.add(re.search(r'class="compare-verdict"><strong>Verdict:</strong>\s*(.*?)</p>', page, re.S)[1])
    assert len(headlines) == 1


@pytest.mark.django_db(transaction=True)
def test_the_compare_page_says_no_change_within_x_and_each_cells_minimum_detectable_effect(
        post, client):
    """Issue 41 items 2 and 8: a cell whose 95% CI holds zero but reaches past the
    minimum effect reads "no change within X%" on the page, never a bare "no
    change", and every deciding cell shows its minimum detectable effect."""
    a = planted_bundle({"write.bw_kib_s": [1000 + 10 * e for e in NOISE]}, kernel=_kernel(1))
    b = planted_bundle({"write.bw_kib_s": [1030 + 10 * e for e in NOISE]}, kernel=_kernel(2))
    for doc in (a, b):
        assert post(doc)[0] == 201
    sides = {"base": a["run_id"], "candidate": b["run_id"]}
    (cell,) = client.get("/dashboard/api/compare", sides).json()["cells"]
    assert cell["outcome"] == "no-change" and cell["ci_low"] < 0 < cell["ci_high"]
    x = -(-max(-cell["ci_low"], cell["ci_high"]) // 1)
    assert x > 5 and cell["label"] == f"no change within {x:g}%"
    page = client.get("/compare", sides).content.decode()
    table = page[page.index('class="cells compare-table"'):]
    table = table[:table.index("</table>")]
    assert f">no change within {x:g}%</span>" in table and ">no change</span>" not in table
    mde = f"minimum detectable effect {cell['mde_pct']:g}% at 5 vs 5 runs"
    assert mde in table
