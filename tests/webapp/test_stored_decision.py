"""The decision kept and obeyed (issue 43): a stored comparison keeps what
iowatch.judging decided, and every page and API answer reads it.

The case that told them apart: two stored runs of a series (its base and
patch 1), each with one measured cell and one cell skipped on both sides.
judging pools a side without its skipped cells, so nothing failed and the
measured cell decides ("no change"); the overview and the series chips once
counted the skipped cell as failed from the stored rows.
"""
from __future__ import annotations

import importlib

import pytest
from bundle_maker import planted_bundle
from django.apps import apps as django_apps
from django.core.cache import cache

from iowatch.judging import compare_sides
from iowatch.side_data import Side
from iowatch_web.dashboard import attention
from iowatch_web.regressions.models import StoredComparison
from iowatch_web.results.models import PatchSeries
from iowatch_web.store.sides import judging_studies

pytestmark = pytest.mark.django_db(transaction=True)

# The same level on both kernels, a spread of 1%: far inside the 5% minimum effect.
LEVEL = [10000.0, 10100.0, 9900.0, 10050.0, 9950.0]


def _kernel(patch: int) -> dict:
    return {"release": "6.12.0-iowatch", "git_commit": f"{0x5c1 + patch:012x}",
            "series": {"name": "skipped cells", "patch_count": 1},
            "patch": {"index": patch, "subject": "f2fs: a comment" if patch else ""}}


def _skipping(patch: int, hour: int) -> dict:
    """A run of two cells of f2fs-dio-write on sdcard: sd0 measured, sd1 skipped."""
    doc = planted_bundle({"write.bw_kib_s": LEVEL}, kernel=_kernel(patch), cells=2,
                         started_at=f"2024-05-01T{hour:02d}:00:00Z")
    skipped = doc["cells"][1]
    skipped.update(status="skipped", reason="the device class is not on this host",
                   repetitions=[])
    return doc


@pytest.fixture
def skipped_series(post):
    # The pages' file cache outlives a test database, and its keys name row
    # ids that the next test database gives again: read nothing kept before.
    cache.clear()
    docs = [_skipping(0, 1), _skipping(1, 2)]
    for doc in docs:
        status, body = post(doc)
        assert status == 201, body
    return docs


def test_a_cell_skipped_on_both_sides_reads_no_change_everywhere(skipped_series, client):
    base, candidate = skipped_series
    judged = compare_sides(Side("base", "bundles", [base]), Side("candidate", "bundles", [candidate]),
                           studies=judging_studies())
    assert (judged.state, judged.failed, len(judged.verdicts)) == ("no-change", [], 1)

    stored = StoredComparison.objects.get(reason="parent")
    assert (stored.state, stored.failed_cells, stored.regressed) == ("no-change", [], False)
    assert stored.column_states == [{"study": "f2fs-dio-write", "device_class": "sdcard",
                                     "state": "no-change"}]

    series = PatchSeries.objects.get(name="skipped cells")
    (check,) = [c for c in attention.checks() if c["series"] == series]
    assert check["verdict"]["state"] == "no-change"
    patch_row = attention.series_rows(series)["rows"][1]
    assert [chip["state"] for chip in patch_row["chips"]] == ["no-change"]
    overview = client.get("/").content.decode()
    assert "skipped cells" in overview
    series_page = client.get(f"/series/{series.pk}/").content.decode()
    assert "failed on the" not in series_page and "failed on the" not in overview

    kernels = f"base=kernel:{stored.base_kernel_id}&candidate=kernel:{stored.candidate_kernel_id}"
    compared = client.get(f"/dashboard/api/compare?{kernels}").json()
    assert (compared["state"], compared["failed"]) == ("no-change", [])

    run = client.get(f"/api/v1/runs/{candidate['run_id']}").json()
    assert run["verdict"]["states"] == ["no-change"]


def test_the_migration_fills_a_stored_row_by_the_policy(skipped_series):
    """A row stored before the decision was kept is filled by iowatch.judging:
    the failed-cell rule on its stored runs, the state of its stored cells."""
    stored = StoredComparison.objects.get(reason="parent")
    StoredComparison.objects.filter(pk=stored.pk).update(
        state="failed", regressed=True, failed_cells=[{"study": "x"}], column_states=[])
    migration = importlib.import_module(
        "iowatch_web.regressions.migrations.0017_stored_comparison_decision")
    migration.fill(django_apps, None)
    stored.refresh_from_db()
    assert (stored.state, stored.regressed, stored.failed_cells) == ("no-change", False, [])
    assert stored.column_states == [{"study": "f2fs-dio-write", "device_class": "sdcard",
                                     "state": "no-change"}]
