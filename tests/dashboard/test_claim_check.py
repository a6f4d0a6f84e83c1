"""Published results as a claim check, on data uploaded through the ingest API:
each study's title, seed post, source and question; every claim of a post (a
metric between two of its result sets) beside what the lab measured per host
and device, with the outcome iowatch.claims.seeds' claim judge gives it (reproduced,
opposite, not reproduced, not reproducible here, not comparable and why); a log axis where the numbers differ more than tenfold;
and the published run's own values."""
from __future__ import annotations

import re

import pytest
from dashboard_browser import screenshot
from django.template import Context, Template

from iowatch_web.results.models import Run



def _claim(check: dict, metric: str, device_class: str, before: str) -> dict:
    found = [c for c in check["claims"] if (c["metric"], c["device_class"], c["before"]["label"])
             == (metric, device_class, before)]
    assert len(found) == 1, [(c["metric"], c["device_class"], c["before"]["label"])
                             for c in check["claims"]]
    return found[0]


def test_each_claim_has_the_labs_verdict_and_says_why(claims, client):
    f2fs = client.get("/dashboard/api/published/f2fs-dio-write").json()
    assert f2fs["study"]["title"] == "f2fs multi-thread direct-I/O write"
    assert f2fs["study"]["seed"] == "000_6a601ae0651ac377.txt"

    sd = _claim(f2fs, "write.bw_kib_s", "sdcard", "before")
    assert sd["after"]["label"] == "patched" and sd["change"] == "\u00d72.03"  # 5,125 -> 10,424: a ratio (iowatch.figures)
    assert sd["verdict"] == "reproduced", sd["why"]
    [lab] = [r for r in sd["lab"] if r["verdict"] != "not-comparable"]
    assert (lab["host"], lab["device"], lab["device_class"]) == ("lab-3", "sd0", "sdcard")
    assert lab["change_pct"] == pytest.approx(100, abs=1) and lab["outcome"] == "improvement"
    assert lab["compare_url"] == "/compare?base=before&candidate=patched"
    # The post's eMMC numbers: the lab's runs of those labels are on an SD card.
    emmc = _claim(f2fs, "write.bw_kib_s", "emmc", "before")
    assert emmc["verdict"] == "not-comparable" and not emmc["lab"]
    assert ("lab-3: the lab's runs of both sides have no write.bw_kib_s sample in group seqw on "
            "a device of class emmc with f2fs") in emmc["why"]
    # A metric that does not decide in the study is shown, never judged.
    spread = _claim(f2fs, "write.bw_min_kib_s", "sdcard", "before")
    assert not spread["deciding"] and spread["verdict"] == "not-comparable"

    odirect = client.get("/dashboard/api/published/odirect-vs-readers").json()
    writer = _claim(odirect, "write.bw_kib_s", "hdd", "2.6.32-rc7")
    assert writer["change"] == "-99.4%"  # 2,968 -> 19
    assert writer["verdict"] == "not-reproduced"
    # One run a side: the interval holds local-1's recorded noise between boots
    # (its calibration, conftest.claims), not only the runs' own spread of 0.1%.
    assert writer["why"].startswith("not reproduced on local-1 loop0 (the post -99.4%, the lab "
                                    "+0.0% (95% CI [-3.8%, +3.9%]): under the study's 5% minimum "
                                    "effect; "), writer["why"]
    assert writer["lab"][0]["outcome"] == "no-change"
    # 19 KiB/s beside 17,480: still bars from zero, no log axis (a bar's length means nothing on one).
    assert "log_scale" not in writer
    assert {round(b["value"]) for b in writer["bars"]} == {2968, 19, 17480}
    # The fix's claim: the lab never ran for-2.6.33+fix. What it measures now is
    # shown per host and device: the loop device and QEMU's disk apart.
    fix = _claim(odirect, "write.bw_kib_s", "hdd", "for-2.6.33")
    assert fix["verdict"] == "not-comparable"
    assert "none labelled 'for-2.6.33+fix' or of kernel 'for-2.6.33 + fix'" in fix["why"]
    labels = [b["label"] for b in fix["bars"]]
    assert ["local-1 loop0 (hdd)", "now: 6.12.0-iowatch"] in labels
    assert ["vlab vhdd (hdd)", "now: 6.12.117+"] in labels

    nat = client.get("/dashboard/api/published/f2fs-nat-flush").json()
    assert {c["verdict"] for c in nat["claims"]} == {"not-comparable"}
    assert all("no lab run labelled 'Before change'" in c["why"] for c in nat["claims"])


def test_the_pages_show_title_seed_claims_and_the_rule(claims, client):
    index = client.get("/studies/").content.decode()
    assert "f2fs multi-thread direct-I/O write" in index
    assert "001_b768a95fc8ad6eae.txt" in index  # the seed column is filled
    assert "Do many threads with many AIOs reading one file" in index  # the question
    assert "1 reproduced" in index and "not reproduced" in index
    page = client.get("/studies/odirect-vs-readers/").content.decode()
    assert "<h1>One direct writer beside two sequential readers on a rotational disk</h1>" in page
    assert "Vivek Goyal" in page and "003_19c316252e130d8a.txt" in page
    assert "How a claim is checked." in page and "minimum effect of 5%" in page
    # The lab's two numbers are those its change is computed from (issue 44 item 12).
    assert re.search(r"local-1 loop0</strong> \(hdd, ext4\): 17\.\d → 17\.\d MiB/s "
                     r"<small>\(geometric means\)</small>", page), page[page.find("local-1 loop0"):][:200]
    assert "2.6.32-rc7: 2,968 KiB/s" in page and "for-2.6.33: 19 KiB/s" in page


def test_the_published_run_shows_its_values(claims, client):
    run = Run.objects.get(published=True, label="for-2.6.33")
    page = client.get(f"/runs/{run.run_id}/").content.decode()
    assert 'id="published-values"' in page and "direct write: aggrb=19KB/s" in page
    html = Template("{% load published_values %}{% published_values run %}").render(
        Context({"run": run}))
    assert "<td class=\"num\">19 KiB/s</td>" in html and "direct write: aggrb=19KB/s" in html
    assert "137 MiB/s" in html  # the readers' 137 MB/s (140,288 KiB/s) in the pages' unit
    assert 'href="/studies/odirect-vs-readers/"' in html
    measured = Run.objects.filter(published=False).first()
    assert Template("{% load published_values %}{% published_values run %}").render(
        Context({"run": measured})).strip() == ""


def test_the_19_kib_bar_is_visible_beside_17480(claims, watched, live_server):
    page = watched.page
    page.goto(f"{live_server.url}/studies/odirect-vs-readers/")
    page.wait_for_function(
        "() => [...document.querySelectorAll('canvas[data-chart]')].every(c => c.dataset.drawn)")
    row = page.locator("tr.claim", has_text="write.bw_kib_s").filter(has_text="2.6.32-rc7").first
    claim_id = row.get_attribute("id").split("-")[1]
    lengths = page.locator(f"#claim-chart-{claim_id}").evaluate("""(c) => {
        const chart = Chart.getChart(c), meta = chart.getDatasetMeta(0);
        return chart.data.labels.map((label, i) => [label, chart.data.datasets[0].data[i],
            Math.abs(meta.data[i].x - meta.data[i].base), chart.scales.x.type]); }""")
    tiny = [bar for bar in lengths if bar[1] == pytest.approx(19)]
    big = [bar for bar in lengths if bar[1] == pytest.approx(17480)]
    assert tiny and big and {bar[3] for bar in lengths} == {"linear"}, lengths
    # Lengths in proportion to the values; the 19 KiB/s bar is still drawn.
    assert 2 <= tiny[0][2] < big[0][2] / 50, f"the 19 KiB/s bar is {tiny[0][2]:.1f} px long: {lengths}"
    assert page.locator(f"#claim-{claim_id} .verdict-cell .chip").text_content() == "not reproduced"
    screenshot(page, "study-claims-odirect")
    assert not watched.errors, watched.errors


def test_a_bisect_step_is_no_part_of_a_claims_side(claims, client):
    """The claim check pools a side by SideQuery, as every other side: a bisect's
    step that carries the after side's label (its kernel measured halfway, at
    the before's bandwidth) is the bisect's evidence, not a run of the side.
    The check took the newest runs by arrival before, and pooled it."""
    from bundle_maker import planted_bundle
    from dashboard_browser import uploader
    from dashboard_browser import NOISE, claim_kernel
    doc = planted_bundle({"write.bw_kib_s": [5000 + e for e in NOISE]}, kernel=claim_kernel(302),
                         started_at="2024-06-01T02:00:00Z", host="lab-3", matrix="claims")
    doc.update(label="patched", schema_version=2, trigger={"kind": "bisect", "regression": 1, "job": 1})
    uploader("step-agent")(doc)
    assert Run.objects.filter(trigger__kind="bisect", label="patched").count() == 1
    sd = _claim(client.get("/dashboard/api/published/f2fs-dio-write").json(),
                "write.bw_kib_s", "sdcard", "before")
    assert sd["verdict"] == "reproduced", sd["why"]
    [lab] = [r for r in sd["lab"] if r["verdict"] != "not-comparable"]
    assert lab["runs"] == [1, 1] and lab["change_pct"] == pytest.approx(100, abs=1)
