"""The dashboard in a real browser (Debian's chromium through Playwright):
every page loads without a console error, every chart draws, triage needs a
login, and untrusted text stays text. Screenshots go to test-artifacts/screenshots/."""
from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest
from dashboard_browser import SCRIPT, screenshot

from iowatch_web.regressions.models import Regression, TriageEvent

# How a canvas proves it drew: some pixels that are not transparent.
COUNT_INKED_PIXELS = """(canvas) => {
    const ctx = canvas.getContext("2d");
    const data = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
    let inked = 0;
    for (let i = 3; i < data.length; i += 4) if (data[i] !== 0) inked++;
    return inked;
}"""


def pages(store) -> dict[str, str]:
    base, patch1, patch2 = store.kernels
    history = {"study": store.study, "host": "lab-2", "device": "sd0", "filesystem": "f2fs",
               "group": "seqw", "metric": "write.bw_kib_s"}
    return {
        "overview": "/",
        "series-index": "/series/",
        "series-check": f"/series/{store.series_id}/",
        "compare": f"/compare?base=kernel:{patch1}&candidate=kernel:{patch2}",
        "compare-filtered": f"/compare?base=kernel:{patch1}&candidate=kernel:{patch2}"
                            "&metric=write.bw_kib_s",
        "history": "/history?" + urlencode(history),
        "regressions": "/regressions/",
        "regression-ab": f"/regressions/{store.ab_regression}/",
        "regression-change-point": f"/regressions/{store.change_point_regression}/",
        "runs": "/runs/",
        "runs-filtered": "/runs/?host=lab-2&published=no",
        "hosts": "/hosts/",
        "device-classes": "/device-classes/",
        "run": f"/runs/{store.nightly_runs[7]}/",
        "studies": "/studies/",
        "study-published": f"/studies/{store.study}/",
        "login": "/accounts/login/",
        # Pages not of the dashboard, under the same Content-Security-Policy.
        "api-docs": "/api/v1/docs",
    }


def wait_for_charts(page) -> int:
    canvases = page.locator("canvas[data-chart]")
    n = canvases.count()
    if n:
        page.wait_for_function(
            "() => [...document.querySelectorAll('canvas[data-chart]')].every(c => c.dataset.drawn)")
        notes = page.locator("canvas[data-chart] ~ p.hint").all_text_contents()
        assert page.locator("canvas[data-drawn='1']").count() == n, notes
    return n


def test_every_page_loads_without_errors_and_every_chart_draws(store, watched, live_server):
    page = watched.page
    charted = set()
    for name, path in pages(store).items():
        response = page.goto(live_server.url + path)
        assert response.status == 200, (name, response.status)
        page.wait_for_load_state("networkidle")
        charts = wait_for_charts(page)
        for i in range(charts):
            canvas = page.locator("canvas[data-chart]").nth(i)
            inked = canvas.evaluate(COUNT_INKED_PIXELS)
            assert inked > 500, f"{name}: chart {i} looks blank ({inked} pixels drawn)"
            # toDataURL of a blank canvas of the same size is the same short string.
            blank = canvas.evaluate("(c) => { const b = document.createElement('canvas');"
                                    " b.width = c.width; b.height = c.height; return b.toDataURL(); }")
            assert canvas.evaluate("(c) => c.toDataURL()") != blank
            charted.add(name)
        screenshot(page, name)
        assert not watched.errors, f"{name}: {watched.errors}"
    assert not watched.outside, f"requests outside the server: {watched.outside}"
    assert {"overview", "compare", "history", "regression-ab", "regression-change-point",
            "study-published"} <= charted


def test_the_series_check_shows_a_chip_per_patch_and_opens_its_comparison(store, watched,
                                                                          live_server):
    page = watched.page
    page.goto(f"{live_server.url}/series/{store.series_id}/")
    rows = page.locator("table.series tbody tr")
    assert rows.count() == 3
    assert rows.nth(1).locator(".chip.no-change").count() == 1
    chip = rows.nth(2).locator(".chip.regression")
    assert chip.count() == 1
    chip.click()
    page.wait_for_url(re.compile(r"/compare\?"))
    wait_for_charts(page)
    assert page.locator("table.cells .chip.regression").count() >= 1
    report = page.locator("#report-text").text_content()
    assert "REGRESSION" in report and "iowatch compare:" in report
    page.locator("#copy-report").click()
    page.wait_for_function("() => document.getElementById('copy-state').textContent !== ''")
    assert page.locator("#copy-state").text_content() in ("copied", "selected: press Ctrl+C")
    assert not watched.errors, watched.errors


def test_a_click_on_a_history_point_opens_its_run(store, watched, live_server):
    page = watched.page
    page.goto(live_server.url + pages(store)["history"])
    wait_for_charts(page)
    canvas = page.locator("#history-chart")
    x, y = canvas.evaluate("""(c) => { const p = c.chart.getDatasetMeta(0).data[0];
        return [p.x, p.y]; }""")
    canvas.click(position={"x": x, "y": y})
    page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}/$"))
    assert page.url.rstrip("/").rsplit("/", 1)[-1] in store.nightly_runs
    assert not watched.errors, watched.errors


def test_a_logged_in_user_triages_and_an_anonymous_user_cannot(store, watched, live_server,
                                                               django_user_model):
    page = watched.page
    url = f"{live_server.url}/regressions/{store.ab_regression}/"

    page.goto(url)
    assert page.locator("form.triage").count() == 0
    assert page.get_by_text("Log in to triage").count() == 1
    # A POST without a session: refused, with or without a CSRF token.
    refused = page.request.post(url, form={"state": "invalid"})
    assert refused.status == 403
    page.goto(f"{live_server.url}/accounts/login/")
    csrf = page.locator("input[name=csrfmiddlewaretoken]").get_attribute("value")
    refused = page.request.post(url, form={"state": "invalid", "csrfmiddlewaretoken": csrf},
                                headers={"Referer": url})
    assert refused.status == 403
    assert Regression.objects.get(pk=store.ab_regression).state == "new"

    django_user_model.objects.create_user("maintainer", password="a-long-test-password")
    page.fill("input[name=username]", "maintainer")
    page.fill("input[name=password]", "a-long-test-password")
    page.click("form.login button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(url)
    page.select_option("form.triage select[name=state]", "acknowledged")
    page.fill("form.triage input[name=note]", f"seen {SCRIPT}, bisecting tonight")
    page.click("form.triage button[type=submit]")
    page.wait_for_load_state("networkidle")
    regression = Regression.objects.get(pk=store.ab_regression)
    assert regression.state == "acknowledged"
    event = TriageEvent.objects.get(regression=regression)
    assert (event.user.username, event.from_state, event.to_state) == ("maintainer", "new",
                                                                       "acknowledged")
    assert page.locator("h1 .state").text_content() == "acknowledged"
    assert page.get_by_text(f"seen {SCRIPT}, bisecting tonight").count() >= 1
    screenshot(page, "regression-triaged")
    assert not watched.dialogs and not watched.errors, (watched.dialogs, watched.errors)


@pytest.mark.parametrize("where", ["series-check", "runs", "run-of-patch"])
def test_a_script_tag_in_a_patch_subject_or_label_shows_as_text(store, watched, live_server, where):
    page = watched.page
    if where == "run-of-patch":
        from iowatch_web.results.models import Run
        path = f"/runs/{Run.objects.get(label=SCRIPT).run_id}/"
    else:
        path = pages(store)[where]
    page.goto(live_server.url + path)
    page.wait_for_load_state("networkidle")
    assert page.get_by_text(SCRIPT).first.is_visible()
    assert page.locator("script:not([src])").count() == 0
    assert not watched.dialogs, watched.dialogs
    assert not watched.errors, watched.errors
