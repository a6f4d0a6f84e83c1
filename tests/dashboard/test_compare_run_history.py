"""Compare, run and history pages in a real browser, on the store fixture and
the real guest bundles of tests/fixtures/e2e-check uploaded through the ingest
API: the verdict summary comes first and the tables fit the window, a chart's
axis turns logarithmic when the sides differ more than tenfold, a run shows its
measured numbers with units, its environment as a table and its debug options
flagged, and a history can be chosen from the store, names the patches on its
axis and marks its change points. Screenshots go to test-artifacts/screenshots/."""
from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from urllib.parse import urlencode

import pytest
from dashboard_browser import screenshot, uploader
from test_pages import wait_for_charts

ROOT = Path(__file__).resolve().parents[2]
GUESTS = [ROOT / "tests" / "fixtures" / "e2e-check" / f"guest-{i:02d}" / "bundle" for i in range(3)]
WIDTHS = (1400, 1000)

# Every element's right edge and the page's scroll width, against the window's width.
OVERFLOW = """() => {
    const wide = [...document.querySelectorAll('body *')]
        .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5)
        .map((e) => `${e.tagName.toLowerCase()}.${e.className} ${Math.round(e.getBoundingClientRect().right)}px`);
    return {scroll: document.documentElement.scrollWidth, wide: wide.slice(0, 5)};
}"""


def fits(page, name: str) -> None:
    width = page.viewport_size["width"]
    found = page.evaluate(OVERFLOW)
    assert found["scroll"] <= width and not found["wide"], f"{name} at {width} px: {found}"


@pytest.fixture
def guests(store):
    """The e2e check's three guest bundles, through the ingest API like a lab's;
    patch 2's kernel built with CONFIG_EXT4_DEBUG=y (planted, so the run page has
    a debug option to flag and a confounder that is not the harness's)."""
    from iowatch import bundle
    from iowatch_web.results.models import Run

    from bundle_maker import recorded_boots

    post = uploader("e2e-lab")
    for doc in recorded_boots():  # the virtual lab's record of its noise between boots
        post(doc)
    runs = []
    for i, path in enumerate(GUESTS):
        doc = json.loads(bundle.to_wire(path))
        if i == 2:
            doc["kernel"]["config"]["CONFIG_EXT4_DEBUG"] = "y"
        post(doc)
        runs.append(Run.objects.get(run_id=doc["run_id"]))
    return runs


def _numbers(path: Path, group: str, metric: str) -> list[float]:
    """A bundle's group-level samples of one metric, read from its files."""
    from iowatch import bundle

    return [s["value"] for cell in bundle.load(path)["cells"] for rep in cell["repetitions"]
            for s in rep["samples"] if s["group"] == group and s["metric"] == metric
            and s.get("job") is None]


def test_compare_puts_the_verdict_summary_first_and_its_table_fits(guests, watched, live_server):
    page = watched.page
    base, candidate = guests[1], guests[2]
    url = f"{live_server.url}/compare?base={base.run_id}&candidate={candidate.run_id}"
    verdict = page.request.get(f"{live_server.url}/dashboard/api/compare?"
                               + urlencode({"base": base.run_id, "candidate": candidate.run_id})).json()
    writer = next(c for c in verdict["cells"] if c["metric"] == "write.bw_kib_s")
    assert writer["outcome"] == "regression" and -36 < writer["change_pct"] < -30
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        page.goto(url)
        wait_for_charts(page)
        summary = page.locator("#compare-summary")
        # Seen without scrolling: the verdict, the counts and the deciding row.
        assert summary.bounding_box()["y"] + summary.bounding_box()["height"] < 1000
        assert "REGRESSION" in summary.locator(".compare-verdict").text_content()
        counts = {li.get_attribute("data-outcome"): li.locator("strong").text_content()
                  for li in summary.locator(".compare-counts li").all()}
        assert counts == {"regression": "1", "improvement": "1", "suspected": "0",
                          "inconclusive": "0", "slower": "0", "no-change": "0"}
        first = summary.locator("table.compare-deciding tbody tr").first
        assert "write.bw_kib_s" in first.text_content() and "writer" in first.text_content()
        assert first.locator(".change").text_content() == f"{writer['change_pct']:.1f}%"
        assert first.locator(".ci").text_content() == (f"[{writer['ci_low']:+.1f}%, "
                                                      f"{writer['ci_high']:+.1f}%]")
        assert "300 → 200 KiB/s" in first.text_content()
        # The table: deciding metrics first, worst first, the diagnostics folded.
        rows = page.locator("table.compare-table tbody tr")
        assert rows.count() == 2
        assert rows.first.locator(".chip.regression").count() == 1
        assert rows.first.locator(".change").text_content() == f"{writer['change_pct']:.1f}%"
        assert rows.nth(1).locator(".chip.improvement").count() == 1
        assert not page.locator("details.compare-diagnostics table").is_visible()
        assert "22 other metrics" in page.locator("details.compare-diagnostics summary").text_content()
        # One chart per job group, and nothing wider than the window.
        assert page.locator("canvas[data-chart=compare]").count() == 2
        fits(page, "compare")
        screenshot(page, f"compare-e2e-{width}")
    # Patch 2's debug build is a confounder; the harness's own boot parameters are not.
    assert page.locator("table.confounders tbody tr").all_text_contents() == [
        "kernel CONFIG_EXT4_DEBUGnyext4 debug code adds checks to ext4 paths"]
    assert "kernel cmdline" not in page.locator("#report-text").text_content()
    assert not watched.errors, watched.errors


def test_compare_of_the_series_counts_both_regressed_cells(store, watched, live_server):
    page = watched.page
    _, patch1, patch2 = store.kernels
    page.goto(f"{live_server.url}/compare?base=kernel:{patch1}&candidate=kernel:{patch2}")
    wait_for_charts(page)
    counts = [re.sub(r"\s+", " ", c).strip()
              for c in page.locator("#compare-summary .compare-counts li").all_text_contents()]
    assert counts == ["2 regressions", "0 improvements", "0 suspected", "0 unsure",
                      "0 slower, not confirmed", "0 no change"]
    deciding = page.locator("#compare-summary table.compare-deciding tbody tr")
    assert deciding.count() == 2
    for i in range(2):
        change = float(deciding.nth(i).locator(".change").text_content().rstrip("%"))
        assert -52 < change < -49, change  # 1010 -> 500 KiB/s
    # The charts plot the means on a linear axis: the sides differ about twofold.
    assert page.locator("canvas[data-chart=compare]").evaluate_all(
        "(cs) => cs.map((c) => c.chart.scales.x.type)") == ["linear"]
    assert not watched.errors, watched.errors


def test_compare_draws_bars_from_zero_even_when_the_sides_differ_more_than_tenfold(store, watched,
                                                                                  live_server):
    # The seed post of odirect-vs-readers: the writer fell from 2,968 to 19 KB/s
    # (156x) while the readers rose from 101 to 137 MB/s.
    page = watched.page
    page.goto(f"{live_server.url}/compare?base=2.6.32-rc7&candidate=for-2.6.33")
    wait_for_charts(page)
    scales = dict(page.locator("canvas[data-chart=compare]").evaluate_all(
        "(cs) => cs.map((c) => [c.dataset.group, c.chart.scales.x.type])"))
    # A bar's length is its value: no log axis (issue 28), whatever the range.
    assert scales == {"readers": "linear", "writer": "linear"}
    writer = page.locator("canvas[data-chart=compare][data-group=writer]")
    # The 19 KiB/s bar is drawn (a few pixels) and far shorter than the 2,968 one.
    base, candidate = writer.evaluate(
        "(c) => [0, 1].map((d) => c.chart.getDatasetMeta(d).data.map((b) => Math.abs(b.x - b.base))[0])")
    assert 2 <= candidate < base / 50, (base, candidate)
    assert page.locator("#compare-summary .compare-deciding tbody tr").first.locator(
        ".change").text_content() == "-99.4%"
    screenshot(page, "compare-published-bars")
    assert not watched.errors, watched.errors


def test_the_run_page_shows_numbers_environment_and_flags(guests, watched, live_server):
    page = watched.page
    run = guests[2]
    writer = _numbers(GUESTS[2], "writer", "write.bw_kib_s")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        page.goto(f"{live_server.url}/runs/{run.run_id}/")
        page.wait_for_load_state("networkidle")
        # The study's deciding metrics first: median, range and n, with the unit.
        rows = page.locator("table.run-numbers").first.locator("tbody tr")
        assert rows.count() == 2
        row = rows.filter(has_text="write.bw_kib_s")
        assert row.locator(".median").text_content() == f"{statistics.median(writer):.0f} KiB/s"
        assert row.locator(".n").text_content() == str(len(writer)) == "5"
        assert f"{min(writer):.0f} – {max(writer):.0f}" in row.text_content()
        assert "decides" in row.text_content()
        # The environment is a two-column table, not a Python dict.
        environment = page.locator("table#environment")
        assert environment.locator("tr", has_text="host.cpu_model").locator("td").text_content() == (
            "QEMU TCG CPU version 2.5+")
        assert environment.locator("tr", has_text="devices.vhdd.scheduler").locator(
            "td").text_content() == "bfq"
        assert "{'" not in page.locator("main").text_content()
        assert page.locator("table#tools tr", has_text="fio").locator("td").text_content() == "fio-3.33"
        # The debug option is flagged; the preemption model is named.
        debug = page.locator("#kernel-flags li.debug")
        assert debug.count() == 1 and "CONFIG_EXT4_DEBUG=y" in debug.text_content()
        assert "ext4 debug" in debug.text_content()
        assert "CONFIG_PREEMPT_VOLUNTARY=y" in " ".join(
            page.locator("#kernel-flags li.preemption").all_text_contents())
        # Against guest 1: the debug option is a confounder, the harness's boot parameters are not.
        confounders = page.locator("table.confounders tbody").text_content()
        assert "kernel CONFIG_EXT4_DEBUG" in confounders and "cmdline" not in confounders
        assert page.locator("#verdict-state").text_content().startswith("done")
        # The guest's 1,500-character command line wraps inside the window.
        fits(page, "run")
        screenshot(page, f"run-vlab-{width}")
    assert not watched.errors, watched.errors


def test_history_is_chosen_from_the_store_names_patches_and_marks_change_points(store, watched,
                                                                               live_server):
    page = watched.page
    page.goto(live_server.url + "/")
    page.locator("header nav a", has_text="History").click()
    page.wait_for_url(re.compile(r"/history$"))
    # With no key, the newest measured cell's: the nightly history on lab-2.
    wait_for_charts(page)
    chosen = {name: page.locator(f"select[name={name}]").input_value()
              for name in ("study", "host", "device", "filesystem", "group", "metric")}
    assert chosen == {"study": store.study, "host": "lab-2", "device": "sd0", "filesystem": "f2fs",
                      "group": "seqw", "metric": "write.bw_kib_s"}
    assert set(page.locator("select[name=host] option").all_text_contents()) >= {"lab-1", "lab-2"}
    canvas = page.locator("#history-chart")
    assert canvas.get_attribute("data-change-points") == "7"
    mark = page.locator("#change-points li").text_content()
    assert re.fullmatch(r"Change point: -(29|30)\.\d% at 6\.12\.0-iowatch 000000000008, "
                        r"mean 1,00\d → 70\d KiB/s", mark), mark
    screenshot(page, "history-nightly")

    # Another host: the series' three kernels, with the patches' subjects on the axis.
    page.select_option("select[name=host]", "lab-1")
    page.wait_for_url(re.compile(r"host=lab-1"))
    wait_for_charts(page)
    assert page.locator("select[name=metric]").input_value() == "write.bw_kib_s"
    ticks = canvas.evaluate("(c) => c.chart.scales.x.ticks.map((t) => t.label)")
    assert len(ticks) == 3 and isinstance(ticks[0], str), ticks
    assert ticks[2] == ["000000000066 [2]", "f2fs: drop the write lock"]
    assert ticks[1][1].startswith("f2fs: <script>"), ticks  # text on the canvas, never HTML
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        page.reload()
        wait_for_charts(page)
        fits(page, "history")
        screenshot(page, f"history-series-{width}")
    assert not watched.dialogs and not watched.errors, (watched.dialogs, watched.errors)
