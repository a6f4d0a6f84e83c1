"""The kept reproductions of the seeds (tests/fixtures/reproductions), stored the way
`make run` stores them (import-published, then import-reproductions' copies through
ingest_bundle): the Published results page gives each claim the outcome and the
numbers that `iowatch reproduce --from DIR`'s text report gives it, since both call
iowatch.judging.claims' claim judge on iowatch.judging's comparison. Nothing here is a
figure written down: each side is read from the other."""
from __future__ import annotations

import sys
from io import StringIO
from pathlib import Path

import pytest
from dashboard_browser import screenshot
from django.core.management import call_command

from iowatch import figures, resources
from iowatch.commands.import_published import published_bundles
from iowatch.commands.import_reproductions import kept_reproductions, stored_bundles
from iowatch.judging.claims import OUTCOMES, claim_outcome
from iowatch.claims.seeds import checked_variants, find_seed, judge_check_dir, label_bundle, report
from iowatch.studies import load_studies

ROOT = Path(__file__).resolve().parents[2]
KEPT = ROOT / "tests" / "fixtures" / "reproductions"
sys.path.insert(0, str(ROOT / "tests" / "kernel"))  # test_reproduce's check writer


@pytest.fixture
def reproduced(transactional_db, tmp_path):
    """The store after make run's imports; the claim judge's reports of each kept directory."""
    studies = load_studies(resources.studies_dir())
    call_command("ingest_bundle", *[str(d) for s in studies.values()
                                    for d in published_bundles(s, tmp_path / "published")],
                 stdout=StringIO())
    kept = kept_reproductions(KEPT, studies)
    call_command("ingest_bundle", *map(str, stored_bundles(kept, studies, tmp_path / "kept")),
                 stdout=StringIO())
    reports = [judge_check_dir(k.check_dir, k.seed, studies) for k in kept]
    assert reports and all(r.rows for r in reports)
    return reports


def _pct(value: float) -> str:
    """A change as the report and the page write it: a rise to twice or more as the ratio."""
    return figures.change(value)


def _page_claim(page: dict, row) -> dict:
    c = row.claim
    [found] = [x for x in page["claims"] if (x["group"], x["metric"], x["device_class"],
                                             x["before"]["label"], x["after"]["label"])
               == (c.group, c.metric, c.device_class, c.before.label, c.after.label)]
    return found


def _page_matches_the_report(client, rep, of_the_seed: list) -> None:
    """The page of rep's study says what rep says of each claim on rep's lab
    device; the claim's own word is the one the seed's reports give together
    (claim_outcome: reproduced only where each device reproduced it)."""
    slug = rep.seed.study.slug
    page = client.get(f"/dashboard/api/published/{slug}").json()
    html = client.get(f"/studies/{slug}/").content.decode()
    text = report(rep)
    # The same claims, in both.
    assert len(page["claims"]) == len(rep.rows)
    for row in rep.rows:
        claim = _page_claim(page, row)
        assert claim["change_pct"] == pytest.approx(row.claim.change_pct)
        together = claim_outcome([r for other in of_the_seed for r in other.rows if r.claim == row.claim])
        assert claim["verdict"] == together, (claim["why"], row.why)
        assert OUTCOMES[row.outcome] in text
        if row.lab is None:
            assert not claim["lab"]
            continue
        [lab] = [r for r in claim["lab"] if (r["device"], r["filesystem"])
                 == (row.lab.device, row.lab.filesystem)]
        assert lab["verdict"] == row.outcome and lab["why"] == row.why
        assert lab["outcome"] == row.lab.verdict
        assert (lab["before_n"], lab["after_n"]) == (row.lab.before_n, row.lab.after_n)
        for key in ("before", "after", "change_pct", "ci_low", "ci_high"):
            assert lab[key] == pytest.approx(getattr(row.lab, key)), key
        # The figures a reader sees: the text report's, on the page.
        shown = [_pct(row.lab.change_pct), f"{row.lab.before_n}+{row.lab.after_n}"]
        if row.lab.ci_low is not None:
            shown.append(figures.ci(row.lab.ci_low, row.lab.ci_high))
            # The page writes the interval as the report does (iowatch.figures).
            assert f"95% CI {figures.ci(row.lab.ci_low, row.lab.ci_high)}" in html
        assert all(s in text for s in shown), (shown, text)
        assert _pct(row.lab.change_pct) in html
        assert f"n {row.lab.before_n} / {row.lab.after_n}" in html


def test_the_page_says_what_the_text_report_says(reproduced, client):
    for rep in reproduced:
        _page_matches_the_report(client, rep, [r for r in reproduced if r.seed.number == rep.seed.number])


def test_a_side_of_two_post_labels_is_found_by_the_label_its_variant_ran_under(
        transactional_db, tmp_path, client):
    """Seed 003's variant 1 stands for two of the post's sets (2.6.32-rc7 and
    for-2.6.33+fix) and runs once, under the first label: both claims it is a side
    of find its runs, on the page as in the text report. A check made up with
    iowatch's bundle writer (tests/kernel/test_reproduce.py), labelled as
    `iowatch reproduce` labels it, stored as make run stores it."""
    from test_reproduce import seed_003_cells, write_check

    studies = load_studies(resources.studies_dir())
    seed = find_seed("003", studies)
    check = write_check(tmp_path / "kept" / "seed-003", seed, {
        0: seed_003_cells(300, 17000), 1: seed_003_cells(300, 17000), 2: seed_003_cells(150, 15000)})
    for v in checked_variants(check, seed)[0]:
        for path in v.bundles:
            label_bundle(path, seed)
    call_command("ingest_bundle", *[str(d) for d in published_bundles(seed.study, tmp_path / "p")],
                 stdout=StringIO())
    [kept] = kept_reproductions(tmp_path / "kept", studies)
    call_command("ingest_bundle", *map(str, stored_bundles([kept], studies, tmp_path / "out")),
                 stdout=StringIO())
    rep = judge_check_dir(check, seed, studies)
    assert len(rep.rows) == 4 and all(r.lab is not None for r in rep.rows)
    _page_matches_the_report(client, rep, [rep])


def test_the_browser_shows_each_claims_outcome_beside_the_lab(reproduced, watched, live_server):
    page = watched.page
    for rep in reproduced:
        slug = rep.seed.study.slug
        page.goto(f"{live_server.url}/studies/{slug}/")
        page.wait_for_function(
            "() => [...document.querySelectorAll('canvas[data-chart]')].every(c => c.dataset.drawn)")
        of_the_seed = [r for other in reproduced if other.seed.number == rep.seed.number
                       for r in other.rows]
        for row in rep.rows:
            c = row.claim
            # A post can claim the same metric and labels on two classes (seed 000: SD and eMMC).
            tr = page.locator("tr.claim", has_text=c.metric).filter(has_text=c.before.label).filter(
                has_text=c.after.label).filter(has_text=f"{c.device_class};").first
            # The claim's word is the seed's kept runs' together (seed 001: vssd and vnullb).
            together = claim_outcome([r for r in of_the_seed if r.claim == c])
            assert tr.locator(".verdict-cell .chip").text_content() == OUTCOMES[together]
            if row.lab is not None:
                lab = tr.locator(".lab-row", has_text=row.lab.device).first
                assert _pct(row.lab.change_pct) in lab.text_content()
                assert f"n {row.lab.before_n} / {row.lab.after_n}" in lab.text_content()
        screenshot(page, f"study-claims-{slug}-reproduced")
    assert not watched.errors, watched.errors
