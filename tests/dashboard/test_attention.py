"""The verdict first (issue 13), in chromium on the store fixture's data: the
overview's one-line regressions worst first above the fold, the latest checks,
nightlies and hosts with their verdict; the series chips with their metric,
change and outcome; the regressions by severity with units and the triage log."""
from __future__ import annotations

import re

import pytest
from dashboard_browser import screenshot, uploader

from iowatch_web.regressions.models import StoredVerdict, StoredChangePoint, StoredComparison, Regression
from iowatch_web.results.models import Run

WIDTHS = (1400, 1000)
VIEWPORT_HEIGHT = 1000


def signed(x: float) -> str:
    """A change as every page and the mail write it (iowatch.figures)."""
    return f"{x:+.1f}"


def stored(reason: str) -> StoredVerdict:
    """The worst stored regressed cell of the comparison of that reason."""
    return min(StoredVerdict.objects.filter(comparison__reason=reason, outcome="regression"),
               key=lambda v: v.change_pct)


def fits(page, width: int, name: str) -> None:
    """No horizontal scroll at this width (the screenshot is taken first, to see why)."""
    page.set_viewport_size({"width": width, "height": VIEWPORT_HEIGHT})
    screenshot(page, f"{name}-{width}")
    overflow = page.evaluate("() => document.documentElement.scrollWidth"
                             " - document.documentElement.clientWidth")
    assert overflow <= 0, f"{page.url} scrolls {overflow} px sideways at {width} px"


def kernel(commit: int, series: str | None = None, patch: int = 0, subject: str = "") -> dict:
    """A kernel of the test's own (the store fixture's are 0x64.. and 1..10)."""
    k = {"release": "6.12.0-iowatch", "git_commit": f"{commit:012x}"}
    if series:
        k.update(series={"name": series, "patch_count": 1},
                 patch={"index": patch, "subject": subject} if patch else {"index": 0})
    return k


def upload(docs) -> None:
    """Post the docs, each new host calibrated first (bundle_maker.calibration_bundles:
    one run a side reads the host's record of its noise between boots)."""
    from bundle_maker import calibration_bundles
    post = uploader("attention-agent")
    for doc in docs:
        if not Run.objects.filter(host__name=doc["host"]["name"], trigger__kind="calibration").exists():
            for boot in calibration_bundles(doc):
                post(boot)
        post(doc)


def test_the_overview_says_which_patch_regressed_what_by_how_much_above_the_fold(
        store, watched, live_server):
    patch = stored("parent")
    nightly = stored("previous-run")
    point = StoredChangePoint.objects.get()
    assert -55 < patch.change_pct < -45 and -35 < nightly.change_pct < -25  # the planted drops
    page = watched.page
    page.goto(live_server.url + "/")
    page.wait_for_load_state("networkidle")
    lines = page.locator("ol.lines li")
    # One line a kernel on a host: patch 2 (its comparison with the series base
    # beside it), then the nightly, worst first. The nightly's change point joined
    # its night-over-night regression; the line shows the worse of the two, the step.
    assert lines.count() == 2
    assert lines.nth(0).locator(".text").text_content() == (
        "f2fs: drop the write lock (patch 2/2 of f2fs: dio write lock) — f2fs-dio-write, "
        f"sdcard (QEMU SD): seqw write.bw_kib_s {signed(patch.change_pct)}% "
        f"[{signed(patch.ci_low)}%, {signed(patch.ci_high)}%] 5 vs 5 runs")
    assert lines.nth(1).locator(".text").text_content() == (
        "6.12.0-iowatch 000000000008 (on lab-2, after 000000000007) — f2fs-dio-write, "
        f"sdcard (QEMU SD): seqw write.bw_kib_s {signed(point.change_pct)}% (a step in the "
        f"history: {point.before_mean:,.0f} → {point.after_mean:,.0f} KiB/s)")
    # Patch 2 against the series base is the same change: inside its regression
    # (issue 28), named beside the line with a link to that comparison.
    series_base = StoredComparison.objects.get(reason="series-base")
    assert Regression.objects.get(pk=store.ab_regression).views.get() == series_base
    first = lines.nth(0).locator(".meta").text_content()
    assert f"#{store.ab_regression} new" in first and "lab-1" in first and "+1 cell" in first
    assert "series base" in first and f"/regressions/{series_base.pk}" not in first
    assert lines.nth(0).locator(
        f"a[href*='candidate=kernel:{series_base.candidate_kernel_id}']").count() >= 1
    assert lines.nth(1).locator(
        f"a[href='/regressions/{store.change_point_regression}/']").count() == 1
    assert lines.nth(0).locator(".chip.regression").count() == 1

    # The newest check, nightly and each host's latest run, with their verdict.
    check = page.locator("table.checks tbody tr").first
    assert check.locator("td").nth(0).text_content() == "f2fs: dio write lock"
    assert check.locator(".chip.regression").text_content() == "regression"
    assert f"patch 2/2 on lab-1 seqw write.bw {signed(patch.change_pct)}%" in " ".join(
        check.locator("td").nth(2).text_content().split())
    nightlies = page.locator("table.nightlies tbody tr")
    assert nightlies.count() == 5
    assert "00000000000a" in nightlies.nth(0).text_content()
    assert nightlies.nth(0).locator(".chip.no-change").count() == 1
    assert nightlies.nth(2).locator(".chip.regression").count() == 1
    hosts = {row.locator("td").nth(0).text_content().split()[0]: row
             for row in page.locator("table.hosts tbody tr").all()}
    assert set(hosts) == {"lab-1", "lab-2"}  # not the published numbers' host
    assert hosts["lab-1"].locator(".chip.regression").count() == 1
    assert hosts["lab-2"].locator(".chip.no-change").count() == 1
    assert "published" not in page.locator("div.now").text_content()

    # Without scrolling: every line, and the checks, nightlies and hosts.
    for width in WIDTHS:
        fits(page, width, "attention-overview")
        for part in ("ol.lines", "table.checks", "table.nightlies", "table.hosts"):
            box = page.locator(part).bounding_box()
            assert box["y"] + box["height"] <= VIEWPORT_HEIGHT, (width, part, box)
        if width == 1400:  # a line is one line at 1,400 px
            text = lines.nth(0).locator(".text")
            height = text.evaluate("(e) => e.getBoundingClientRect().height")
            line_height = text.evaluate("(e) => parseFloat(getComputedStyle(e).lineHeight)")
            assert height < 1.5 * line_height, (height, line_height)
    lines.nth(0).locator(".text").click()
    page.wait_for_url(f"{live_server.url}/regressions/{store.ab_regression}/")
    assert page.locator("p.verdict .line").text_content().startswith(
        "f2fs: drop the write lock (patch 2/2 of f2fs: dio write lock) — ")
    assert not watched.errors and not watched.outside, (watched.errors, watched.outside)


def test_a_suspected_drop_is_listed_after_the_confirmed_ones_with_its_runs(
        store, watched, live_server):
    from bundle_maker import planted_bundle

    # Two runs a side and a third less: too few to confirm, too big to let go.
    upload(planted_bundle({"write.bw_kib_s": values}, kernel=kernel(0x200 + night),
                          started_at=f"2024-06-0{1 + night}T00:00:00Z", matrix="nightly",
                          host="lab-3")
           for night, values in enumerate([[1000, 1400], [600, 1000]]))
    suspected = StoredVerdict.objects.get(host__name="lab-3")
    assert suspected.outcome == "suspected"
    page = watched.page
    page.goto(live_server.url + "/")
    lines = page.locator("ol.lines li")
    assert lines.count() == 3
    assert [lines.nth(i).locator(".chip").text_content() for i in range(3)] == [
        "regression", "regression", "suspected"]
    assert lines.nth(2).locator(".text").text_content() == (
        "6.12.0-iowatch 000000000201 (on lab-3, after 000000000200) — f2fs-dio-write, "
        f"sdcard (QEMU SD): seqw write.bw_kib_s {signed(suspected.change_pct)}% "
        f"[{signed(suspected.ci_low)}%, {signed(suspected.ci_high)}%] 2 vs 2 runs")
    rerun = lines.nth(2).locator("a", has_text="rerun to decide")
    assert "candidate=kernel:" in rerun.get_attribute("href")
    hosts = {row.locator("td").nth(0).text_content().split()[0]: row
             for row in page.locator("table.hosts tbody tr").all()}
    # 2 vs 2 runs at this noise: no estimate past the cap, the cap said instead (issue 44 item 9).
    assert "not decidable within the cap (20) at this noise" in hosts["lab-3"].text_content()
    assert hosts["lab-3"].locator(".chip.suspected").count() == 1
    assert not watched.errors, watched.errors


def test_series_chips_show_the_deciding_metric_its_change_and_outcome(store, watched,
                                                                      live_server):
    patch = stored("parent")
    page = watched.page
    page.goto(f"{live_server.url}/series/{store.series_id}/")
    rows = page.locator("table.series tbody tr")
    assert [rows.nth(i).locator("td").first.text_content() for i in range(3)] == [
        "base", "1/2", "2/2"]
    assert rows.nth(0).locator("a.chip").count() == 0  # the base has no parent
    calm = rows.nth(1).locator("a.chip")
    assert calm.get_attribute("class") == "chip no-change"
    assert re.fullmatch(r"seqw write\.bw [+\u2212]\d+%", calm.text_content())
    chip = rows.nth(2).locator("a.chip")
    assert chip.get_attribute("class") == "chip regression"
    assert chip.text_content() == f"seqw write.bw -{abs(round(patch.change_pct))}%"
    assert "fell" in chip.get_attribute("title")  # the verdict's words
    colours = {c: page.locator(f"table.series .chip.{c}").first.evaluate(
        "(e) => getComputedStyle(e).backgroundColor") for c in ("regression", "no-change")}
    assert colours["regression"] != colours["no-change"]
    for width in WIDTHS:
        fits(page, width, "attention-series")
    chip.click()
    page.wait_for_url(re.compile(r"/compare\?"))
    _, patch1, patch2 = store.kernels
    assert page.url.endswith(f"?base=kernel:{patch1}&candidate=kernel:{patch2}")

    page.goto(f"{live_server.url}/series/")
    row = page.locator("table.checks tbody tr").first
    assert row.locator(".chip.regression").count() == 1
    assert f"seqw write.bw {signed(patch.change_pct)}%" in row.text_content()
    assert not watched.errors, watched.errors


def test_regressions_are_worst_first_with_units_and_the_triage_log(store, watched, live_server,
                                                                   django_user_model):
    from iowatch_web.regressions.triage import triage

    patch, base = stored("parent"), stored("series-base")
    nightly = stored("previous-run")
    point = StoredChangePoint.objects.get()
    page = watched.page
    page.goto(f"{live_server.url}/regressions/")
    rows = page.locator("table.regression-list tbody tr")
    assert rows.count() == 2  # patch 2 (with its series-base view inside) and the nightly
    changes = [rows.nth(i).locator("td.change").text_content() for i in range(2)]
    # By the change against the minimum effect (5%): -50.5% (the series base's -50.0%
    # is in the same regression), then the nightly's -29.9% (night over night) with
    # its change point inside the same regression.
    assert changes[0] == f"{signed(patch.change_pct)}% [{signed(patch.ci_low)}%, {signed(patch.ci_high)}%]"
    assert base.change_pct > patch.change_pct
    assert changes[1] in (f"{signed(point.change_pct)}%", (
        f"{signed(nightly.change_pct)}% [{signed(nightly.ci_low)}%, {signed(nightly.ci_high)}%]"))
    first = rows.nth(0).text_content()
    assert "f2fs: drop the write lock (patch 2/2 of f2fs: dio write lock)" in first
    assert f"{patch.base_centre:,.0f} → {patch.candidate_centre:,.0f} KiB/s (geometric means)" in first
    assert "5 vs 5" in first
    for width in WIDTHS:
        fits(page, width, "attention-regressions")

    user = django_user_model.objects.create_user("maintainer")
    triage(store.ab_regression, user, "acknowledged", "bisecting tonight <b>x</b>")
    page.goto(f"{live_server.url}/regressions/{store.ab_regression}/")
    log = page.locator("table.triage-log tbody tr")
    assert log.count() == 1
    cells = log.first.locator("td").all_text_contents()
    assert cells[1:] == ["maintainer", "new → acknowledged", "bisecting tonight <b>x</b>"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", cells[0])
    regressed = page.locator("table.cells").first.locator("tbody tr")
    assert regressed.count() == 2
    assert f"{patch.base_centre:,.0f} → {patch.candidate_centre:,.0f} KiB/s (geometric means)" in regressed.first.text_content()
    for width in WIDTHS:
        fits(page, width, "attention-regression")
    page.goto(f"{live_server.url}/regressions/{store.change_point_regression}/")
    assert f"{point.before_mean:,.0f} → {point.after_mean:,.0f} KiB/s" in page.locator(
        "table.points").text_content()
    assert not watched.errors, watched.errors


@pytest.mark.parametrize("path", ["/", "/regressions/"])
def test_a_script_tag_in_a_subject_stays_text_on_the_verdict_pages(store, watched, live_server,
                                                                   path):
    from bundle_maker import planted_bundle
    from dashboard_browser import SCRIPT

    # A series whose one patch, with a script tag for a subject, halves the bandwidth.
    upload(planted_bundle({"write.bw_kib_s": [bw - 10, bw + 4, bw + 10, bw - 4, bw]},
                          kernel=kernel(0x300 + k, "hostile", k, SCRIPT if k else ""),
                          started_at=f"2024-06-1{k}T00:00:00Z", matrix="series", host="lab-4")
           for k, bw in enumerate([1000, 500]))
    page = watched.page
    page.goto(live_server.url + path)
    page.wait_for_load_state("networkidle")
    assert page.get_by_text(f"{SCRIPT} (patch 1/1 of hostile)").first.is_visible()
    assert page.locator("script:not([src])").count() == 0
    assert not watched.dialogs and not watched.errors, (watched.dialogs, watched.errors)
