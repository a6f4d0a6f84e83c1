"""The history of one series key as a reader follows it (issue 44 item 11):
one line per series (each check of it on its own base is its own line) or
tracked branch, never one sawtooth across them; a regression's page marks its
two kernels (good and bad) and names every kernel on the axis.

The store: one host that checked the same two-patch series twice (on two
bases: the same patches, as two machines' debian-base commits make them) and
ran nightlies of master. The JSON is read through the test client; the
regression page's chart in Debian's chromium."""
from __future__ import annotations

import pytest
from dashboard_browser import at, kernel, level
from dashboard_browser import screenshot, uploader

from iowatch_web.regressions.models import Regression
from iowatch_web.results.models import Kernel

KEY = {"study": "f2fs-dio-write", "host": "lab-1", "device": "sd0", "filesystem": "f2fs",
       "group": "seqw", "metric": "write.bw_kib_s"}


@pytest.fixture
def checked_twice(transactional_db):
    """Check A on base v6.12 (patch 2 halves the bandwidth), check B of the same
    series on another base (patch 2 changes nothing), then three nightlies."""
    from bundle_maker import calibration_bundles, planted_bundle

    post = uploader("history-agent")
    # The host's record of its noise between boots: one run a kernel (issue 41 item 1).
    for boot in calibration_bundles(planted_bundle({"write.bw_kib_s": level(1000)},
                                                   matrix="series")):
        post(boot)
    hour = 0
    for base, levels in (("v6.12", [1000, 1005, 500]), ("c12fff06aa55", [1000, 1002, 998])):
        for patch, bw in enumerate(levels):
            k = kernel(500 + hour, "f2fs: dio write lock", patch, f"f2fs: patch {patch}")
            k["series"]["base"] = base
            post(planted_bundle({"write.bw_kib_s": level(bw)}, kernel=k, started_at=at(hour),
                                matrix="series"))
            hour += 1
    for night in range(3):
        doc = planted_bundle({"write.bw_kib_s": level(900)}, kernel=kernel(700 + night),
                             started_at=at(hour), matrix="nightly")
        doc.update(schema_version=2, trigger={"kind": "nightly", "branch": "master"})
        post(doc)
        hour += 1
    return Regression.objects.get(comparison__reason="parent",
                                  comparison__candidate_kernel__series__base="v6.12")


def test_each_check_of_a_series_and_each_branch_is_its_own_line(checked_twice, client):
    data = client.get("/dashboard/api/history", KEY).json()
    assert len(data["kernels"]) == 9
    lines = {line["name"]: line for line in data["lines"]}
    assert sorted(lines) == ["f2fs: dio write lock on c12fff06aa55", "f2fs: dio write lock on v6.12",
                             "nightly master"]
    assert [p["x"] for p in lines["f2fs: dio write lock on v6.12"]["points"]] == [0, 1, 2]
    assert [p["x"] for p in lines["f2fs: dio write lock on c12fff06aa55"]["points"]] == [3, 4, 5]
    assert [p["x"] for p in lines["nightly master"]["points"]] == [6, 7, 8]
    assert [p["y"] for p in lines["f2fs: dio write lock on v6.12"]["points"]] == [1000, 1005, 500]
    # Every kernel is on exactly one line.
    assert sorted(p["x"] for line in data["lines"] for p in line["points"]) == list(range(9))


def test_the_regressions_two_kernels_are_marked(checked_twice, client):
    comparison = checked_twice.comparison
    data = client.get("/dashboard/api/history", {**KEY, "good": comparison.base_kernel_id,
                                                  "bad": comparison.candidate_kernel_id}).json()
    assert data["marks"] == [{"x": 1, "role": "good", "kernel": data["kernels"][1]["label"]},
                             {"x": 2, "role": "bad", "kernel": data["kernels"][2]["label"]}]
    # The regression page asks its history for them.
    page = client.get(f"/regressions/{checked_twice.pk}/").content.decode()
    assert (f"good={comparison.base_kernel_id}&amp;bad={comparison.candidate_kernel_id}") in page
    # A kernel outside the history is not marked.
    outside = Kernel.objects.order_by("-pk").values_list("pk", flat=True).first() + 1
    assert client.get("/dashboard/api/history", {**KEY, "good": outside}).json()["marks"] == []


def test_the_chart_draws_a_line_per_series_marks_both_kernels_and_names_every_kernel(
        checked_twice, watched, live_server):
    page = watched.page
    page.set_viewport_size({"width": 1000, "height": 900})
    page.goto(f"{live_server.url}/regressions/{checked_twice.pk}/")
    page.wait_for_function("() => [...document.querySelectorAll('canvas[data-chart]')]"
                           ".every(c => c.dataset.drawn)")
    canvas = page.locator("canvas[data-chart='history']").first
    assert canvas.get_attribute("data-marks") == "good:1,bad:2"
    shown = canvas.evaluate("(c) => ({ticks: c.chart.scales.x.ticks.length,"
                            " lines: c.chart.data.datasets.filter(d => d.type === 'line').length})")
    assert shown == {"ticks": 9, "lines": 3}
    screenshot(page, "regression-history-lines-1000")
    assert not watched.errors, watched.errors
