"""Every page of the dashboard at 1,400, 1,000 and 390 px wide (Debian's
chromium), on a store that also holds the seeds' kept reproductions
(tests/fixtures/reproductions, imported as `make run` imports them, their
verdicts done): no horizontal overflow (document.scrollWidth within the
window; the widest element past the window is named), no console error or
uncaught exception, and no failed request (a request that failed, or an
answer of 400 or more). Every page's failures are listed in one message; a
full-page screenshot of each is kept as
test-artifacts/screenshots/<page>-<width>.png (at 390 px: every page as a
phone shows it)."""
from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from dashboard_browser import screenshot, stored_lava_labs
from test_pages import pages

from iowatch_web.results.models import Run

WIDTHS = (1400, 1000, 390)
KEPT = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "reproductions"

# The element past the window's right edge that is widest, as "tag#id.class (N px): text".
WIDEST_PAST_THE_EDGE = """() => {
    const edge = window.innerWidth;
    let widest = null;
    for (const el of document.body.querySelectorAll("*")) {
        const r = el.getBoundingClientRect();
        if (r.right <= edge + 1 || r.width === 0) continue;
        if (!widest || r.width > widest.width) widest = {el, width: r.width, right: r.right};
    }
    if (!widest) return null;
    const el = widest.el;
    const name = el.tagName.toLowerCase() + (el.id ? "#" + el.id : "")
        + [...el.classList].map((c) => "." + c).join("");
    const text = (el.innerText || "").trim().replace(/\\s+/g, " ").slice(0, 60);
    return `${name} (${Math.round(widest.width)} px wide, right edge at ${Math.round(widest.right)} px): ${text}`;
}"""


@pytest.fixture
def reproduced(claims, tmp_path):
    """The claims' store and the seeds' kept reproductions, stored as
    `iowatch import-reproductions` stores them, with their verdict work done."""
    from django.core.management import call_command

    from iowatch import resources
    from iowatch.commands.import_reproductions import kept_reproductions, stored_bundles
    from iowatch.studies import load_studies
    from iowatch_web.regressions.work import drain

    studies = load_studies(resources.studies_dir())
    kept = kept_reproductions(KEPT, studies)
    call_command("ingest_bundle", *map(str, stored_bundles(kept, studies, tmp_path / "kept")),
                 stdout=StringIO())
    drain()
    return claims


def seed_pages() -> dict[str, str]:
    """Each seed's series page, its newest regression and its run pages' first."""
    from iowatch_web.regressions.models import Regression
    from iowatch_web.results.models import PatchSeries

    found = {}
    for series in PatchSeries.objects.filter(name__startswith="seed-"):
        seed = series.name[:8]
        found[f"{seed}-series"] = f"/series/{series.pk}/"
        regression = Regression.objects.filter(comparison__candidate_kernel__series=series).first()
        if regression is not None:
            found[f"{seed}-regression"] = f"/regressions/{regression.pk}/"
        run = Run.objects.filter(kernel__series=series).order_by("-received_at").first()
        if run is not None:
            found[f"{seed}-run"] = f"/runs/{run.run_id}/"
    return found


def every_page(store) -> dict[str, str]:
    """test_pages' pages, every study's published results, a published run,
    and the seeds' series, regressions and runs."""
    found = pages(store)
    found.update(seed_pages())
    for slug in ("odirect-vs-readers", "ext4-dio-randread", "f2fs-nat-flush",
                 "xfs-smallfile-writeback"):
        found[f"study-{slug}"] = f"/studies/{slug}/"
    found["run-published"] = f"/runs/{Run.objects.filter(published=True, label='for-2.6.33').get().run_id}/"
    found["regression-bisected"] = bisected(store.change_point_regression)
    # The end-to-end check's regression (real guest bundles: long device models,
    # kernel names, the mail report), and one triaged with the longest note the
    # form takes, unbroken, by a user with a long name: at 1,000 px the first
    # was 1,063 px wide and a 5,000-character note 52,650 px (issue 28).
    from iowatch_web.regressions.models import Regression
    e2e = Regression.objects.filter(comparison__candidate_kernel__series__isnull=False).exclude(
        pk=store.ab_regression).order_by("-pk").first()
    if e2e is not None:
        found["regression-e2e"] = f"/regressions/{e2e.pk}/"
    found["regression-long-note"] = long_note(store.ab_regression)
    # LAVA's boards beside the hosts: one lab fresh, one not reached with a long error.
    stored_lava_labs()
    found["hosts"] = "/hosts/"
    return found


def long_note(regression_id: int) -> str:
    from django.contrib.auth import get_user_model

    from iowatch_web.regressions.triage import MAX_NOTE, triage

    user = get_user_model().objects.create_user("a.maintainer.with.a.long.name" * 5)
    url = "https://lore.kernel.org/linux-fsdevel/" + "0123456789abcdef" * 8 + "@example.org/"
    triage(regression_id, user, "acknowledged", (url + " " + "x" * MAX_NOTE)[:MAX_NOTE])
    return f"/regressions/{regression_id}/"


def bisected(regression_id: int) -> str:
    """The nightly regression's bisect, done after three steps: the page with
    its steps table, first bad commit and mailing-list report."""
    from django.utils import timezone

    from iowatch_web.regressions.models import BisectJob

    job = BisectJob.objects.get(regression_id=regression_id)
    runs = [str(r) for r in Run.objects.filter(published=False).values_list("run_id", flat=True)[:2]]
    job.steps = [{"commit": f"{i:x}" * 40, "subject": f"xfs: a change with a long subject line, number {i}",
                  "author": "Ann Dev <ann@example.org>", "outcome": outcome, "median": 700.0 + i,
                  "unit": "KiB/s", "repetitions": 5, "run_ids": runs, "position": 0.5}
                 for i, outcome in enumerate(("good", "skipped", "bad"), 1)]
    job.state, job.claimed_at, job.finished_at = "done", timezone.now(), timezone.now()
    job.result = {"first_bad": {"commit": "3" * 40, "subject": job.steps[2]["subject"],
                                "author": "Ann Dev <ann@example.org>"},
                  "candidates": [], "skipped": ["2" * 40], "provenance": {}}
    job.save()
    return f"/regressions/{regression_id}/"


@pytest.mark.one_engine  # the pages' layout: the same on either store
def test_every_page_fits_every_window_without_errors(reproduced, browser, live_server):  # noqa: F811
    """One store, the three widths: the seeds' import and verdicts are made once."""
    paths = every_page(reproduced)
    failures = [f for width in WIDTHS for f in [_fits(browser, live_server, paths, width)] if f]
    assert not failures, "\n".join(failures)


def _fits(browser, live_server, paths: dict[str, str], width: int) -> str:
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    problems: dict[str, list[str]] = {}
    current = {"name": ""}

    def problem(text: str) -> None:
        problems.setdefault(current["name"], []).append(text)

    page.on("console", lambda m: problem(f"console error: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problem(f"uncaught: {e}"))
    page.on("requestfailed", lambda r: problem(f"request failed: {r.url} ({r.failure})"))
    page.on("response", lambda r: problem(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    try:
        for name, path in paths.items():
            current["name"] = name
            page.goto(live_server.url + path)
            page.wait_for_load_state("networkidle")
            try:
                page.wait_for_function("() => [...document.querySelectorAll('canvas[data-chart]')]"
                                       ".every(c => c.dataset.drawn)", timeout=10_000)
            except Exception:  # a chart that never draws is a problem of this page, not the run
                problem("a chart did not draw within 10 s")
            scroll, inner = page.evaluate(
                "() => [document.documentElement.scrollWidth, window.innerWidth]")
            if scroll > inner:
                problem(f"horizontal overflow: {scroll} px of content in a {inner} px window; "
                        f"widest past the edge: {page.evaluate(WIDEST_PAST_THE_EDGE)}")
            screenshot(page, f"{name}-{width}")
    finally:
        context.close()
    return "" if not problems else f"at {width} px:\n" + "\n".join(
        f"  {name}: " + "; ".join(found) for name, found in problems.items())
