"""What each host is doing, in a real browser (issue 29 item 3): the hosts page
and the overview show a running host's phase, cell and job (linked to its
bisect), and a silent one as "unreachable since HH:MM" in the warning colour;
at 1,000 px nothing overflows and the strict CSP raises no console error."""
from __future__ import annotations

from datetime import timedelta

import pytest
from dashboard_browser import SCRIPT, screenshot, stored_lava_labs
from django.utils import timezone

from iowatch_web.hosts import beats
from iowatch_web.regressions.models import BisectJob
from iowatch_web.results.models import Agent

# The warning colour (.unreachable in dashboard.css).
WARNING = "rgb(138, 59, 0)"
CELL = "f2fs-dio-write/sd0/f2fs"


@pytest.fixture
def lab(store):
    """lab-2 (the nightly host, with runs) running a cell of the nightly
    regression's bisect; lab-9 (no runs) silent for two hours, last uploading."""
    job = BisectJob.objects.get(regression_id=store.change_point_regression)
    agent = Agent.objects.get(name="lab-agent")
    two_hours_ago = timezone.now() - timedelta(hours=2)
    for phase in ("idle", "building", "booting"):
        beats.record("lab-2", {"phase": phase, "job": {"kind": "bisect", "id": job.pk}
                               if phase != "idle" else None, "commit": "ab" * 20}, agent)
    beats.record("lab-2", {"phase": "running", "cell": CELL, "job": {"kind": "bisect", "id": job.pk},
                           "commit": "ab" * 20, "detail": f"repetition 2 of 5 {SCRIPT}"}, agent)
    beats.record("lab-9", {"phase": "uploading"}, agent, now=two_hours_ago)
    return {"job": job, "unreachable_at": (two_hours_ago + beats.timeout()).strftime("%Y-%m-%d %H:%M UTC")}


def test_the_hosts_page_shows_what_each_host_is_doing(lab, watched, live_server):
    page = watched.page
    page.set_viewport_size({"width": 1000, "height": 900})
    page.goto(live_server.url + "/")
    page.get_by_role("link", name="Hosts", exact=True).first.click()
    page.wait_for_url("**/hosts/")

    running = page.locator("#host-lab-2")
    assert running.locator(".phase").first.inner_text() == "running cells"
    assert CELL in running.inner_text() and "abababababab" in running.inner_text()
    link = running.get_by_role("link", name=f"bisect #{lab['job'].pk}").first
    assert link.get_attribute("href") == f"/regressions/{lab['job'].regression_id}/#bisect"
    assert SCRIPT in running.locator(".detail").inner_text()  # untrusted text stays text
    assert not watched.dialogs
    # Its recent changes, newest first.
    running.locator("summary").click()
    assert running.locator("ol.changes li .phase").all_inner_texts() == [
        "running cells", "booting the kernel", "building the kernel", "idle, waiting for work"]

    silent = page.locator("#host-lab-9")
    warning = silent.locator(".unreachable")
    assert warning.inner_text() == f"unreachable since {lab['unreachable_at']}"
    assert warning.evaluate("e => getComputedStyle(e).color") == WARNING
    assert "uploading the bundle" in silent.inner_text()

    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    screenshot(page, "hosts-1000")
    link.click()
    page.wait_for_url(f"**/regressions/{lab['job'].regression_id}/#bisect")
    assert not watched.errors, watched.errors
    assert not watched.outside


def test_the_overview_shows_each_hosts_state_beside_its_latest_run(lab, watched, live_server):
    page = watched.page
    page.set_viewport_size({"width": 1000, "height": 900})
    page.goto(live_server.url + "/")
    rows = page.locator("table.hosts tbody tr")
    lab2 = rows.filter(has_text="lab-2")
    assert lab2.locator(".host-now .phase").inner_text() == "running cells"
    assert CELL in lab2.locator(".host-now").inner_text()
    assert lab2.get_by_role("link", name=f"bisect #{lab['job'].pk}").count() == 1
    assert lab2.locator("td").nth(1).get_by_role("link").count() == 1  # its latest run, still there
    lab9 = rows.filter(has_text="lab-9")
    assert lab9.locator(".unreachable").inner_text() == f"unreachable since {lab['unreachable_at']}"
    assert lab9.locator(".unreachable").evaluate("e => getComputedStyle(e).color") == WARNING
    assert "never" in lab9.inner_text()  # no run yet
    # A host with runs and no heartbeat says so.
    assert "no heartbeat" in rows.filter(has_text="lab-1").first.inner_text()
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    screenshot(page, "overview-hosts-1000")
    assert not watched.errors, watched.errors


@pytest.fixture
def lava_labs(store):
    stored_lava_labs()


@pytest.mark.parametrize("width", [1000, 390])
def test_lava_boards_show_beside_the_hosts(lab, lava_labs, watched, live_server, width):
    page = watched.page
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(live_server.url + "/hosts/")
    fresh = page.locator("#lava-lava_local")
    said = fresh.locator(".lava-age").inner_text().replace("\xa0", " ")  # timesince's no-break space
    assert "(5 minutes ago): 1 idle, 1 running, 0 offline, 1 bad health." in said
    bad = page.locator("#board-qemu-03 .board")
    assert bad.inner_text() == "bad health"
    assert bad.evaluate("e => getComputedStyle(e).color") == WARNING
    down = page.locator("#lava-lava_vendor")
    assert down.locator(".lava-not-reached .unreachable").inner_text() == "not reached"
    assert "Connection refused" in down.locator(".lava-not-reached").inner_text()
    assert "(3 hours ago)" in down.locator(".lava-age").inner_text().replace("\xa0", " ")
    assert down.locator(".board.offline").evaluate("e => getComputedStyle(e).color") == WARNING
    # iowatch's own hosts are still there, above.
    assert page.locator("#host-lab-2").count() == 1
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    screenshot(page, f"hosts-lava-{width}")
    assert not watched.errors, watched.errors
