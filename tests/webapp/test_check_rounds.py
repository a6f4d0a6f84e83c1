"""A check's rounds are blocks on the server too (issue 24 item 2): each bundle
`iowatch check` makes records the check and its round (check_round), the store
keeps it, and the verdict the server stores when the bundles arrive judges the
variants within the rounds when they drifted, as the check's own report does
(tests/kernel/test_check_drift.py).

The bundles are the real rounds of tests/fixtures/reproductions/seed-001 (seed
001's two-patch series checked in the virtual lab: the first run of each
variant and four adaptive rounds), round 2 of every variant copied as if the
machine ran twice as fast (each higher-is-better sample doubled, each
lower-is-better one halved, ratios left alone). Uploaded with their rounds,
patch 2's ext4 read IOPS is the regression the check names; the same bundles
uploaded without them pool the doubled round into the spread and it is not."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from drift import faster

from iowatch import bundle
from iowatch_web.regressions.models import StoredComparison, StoredVerdict
from iowatch_web.results.models import Kernel, Run

pytestmark = pytest.mark.django_db(transaction=True)

SEED = Path(__file__).resolve().parents[1] / "fixtures" / "reproductions" / "seed-001"
CHECK = "5eed0001" * 4
FAST_ROUND, SPEED, ROUNDS = 2, 2.0, 4


def _recorded(index: int, round_no: int) -> Path:
    if round_no == 0:
        return SEED / f"guest-{index:02d}" / "bundle"
    return SEED / f"variant-{index:02d}-round{round_no}" / f"guest-{index:02d}-round{round_no}" / "bundle"


def _upload(post, tmp_path: Path, with_rounds: bool) -> None:
    for index in (1, 2):
        for k in range(ROUNDS + 1):
            # check_round as iowatch.check writes it
            extra = {"check_round": {"check": CHECK, "round": k}} if with_rounds else {}
            dst = faster(_recorded(index, k), tmp_path / f"v{index}-r{k}",
                         SPEED if k == FAST_ROUND else 1.0, **extra)
            status, body = post(json.loads(bundle.to_wire(dst)))
            assert status == 201, body


def _ext4_patch2() -> StoredVerdict:
    k1, k2 = (Kernel.objects.get(patch_index=i) for i in (1, 2))
    comparison = StoredComparison.objects.get(reason="parent", base_kernel=k1, candidate_kernel=k2)
    assert comparison.candidate_runs.count() == ROUNDS + 1
    return comparison.cells.get(filesystem="ext4", metric_id="read.iops")


def test_a_checks_rounds_are_stored_and_judged_as_blocks_by_the_server(post, tmp_path):
    _upload(post, tmp_path, with_rounds=True)
    assert sorted(Run.objects.values_list("check_round__round", flat=True)) == \
        sorted([k for k in range(ROUNDS + 1)] * 2)
    ext4 = _ext4_patch2()
    # Judged within rounds: the exclusive lock still costs ext4 about 38% of its
    # IOPS, its CI (±12%) wholly below -20%. Confirmed when the rate was 5%; at stop 51's
    # 3.5% these 5 boots a side (one a round) hold it suspected, as they do
    # without the doubled round (tests/kernel/test_reproduction_fixtures.py).
    assert ext4.outcome in ("regression", "suspected") and -45 < ext4.change_pct < -30, ext4.words
    assert ext4.ci_high < -20


def test_without_their_rounds_the_same_bundles_pool_the_drift(post, tmp_path):
    _upload(post, tmp_path, with_rounds=False)
    assert not Run.objects.exclude(check_round={}).exists()
    ext4 = _ext4_patch2()
    assert ext4.outcome != "regression", ext4.words
    # The doubled round's spread in the interval: twice as wide (±24% against ±12%).
    assert ext4.ci_high > -15, ext4.words
