"""One boot a side on the server (issue 41 item 1).

The kept check tests/fixtures/e2e-boots/check-warm measured each of the three
kernels of kernels/series/e2e-slow-ext4-dio in one boot of 5 repetitions.
Uploaded before this change, it opened a regression on patch 1, a comment in
an XFS file (writer -7.8% [-12.5, -2.9]): a boot's offset read as the patch's.
Now the server holds a change of one boot a side at "suspected" unless the
host has a record of its noise between boots, and with that record (the same
host's kernel booted six times, tests/fixtures/e2e-boots/aabb, uploaded as
calibration runs) it confirms patch 2's slowdown and still not patch 1's.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bundle_maker import recorded_boots
from iowatch import bundle
from iowatch_web.regressions.models import Regression, StoredComparison
from iowatch_web.results.models import Kernel, Run

pytestmark = pytest.mark.django_db

WARM = Path(__file__).resolve().parents[1] / "fixtures" / "e2e-boots" / "check-warm"


def _upload(post) -> list[Kernel]:
    for n in range(3):
        status, body = post(json.loads(bundle.to_wire(WARM / f"guest-{n:02d}" / "bundle")))
        assert status == 201, body
    return [Kernel.objects.get(series__name="e2e-slow-ext4-dio", patch_index=i) for i in range(3)]


def _writer(kernel: Kernel):
    comparison = StoredComparison.objects.get(reason="parent", candidate_kernel=kernel)
    return comparison, comparison.cells.get(group="writer", metric_id="write.bw_kib_s")


def test_without_a_record_of_the_host_one_boot_a_side_opens_no_regression(post, client,
                                                                         monkeypatch):
    from iowatch.stats import boots
    monkeypatch.setattr(boots, "HOLD_WITHOUT_RECORD", True)  # as shipped
    kernels = _upload(post)
    comparison, writer = _writer(kernels[1])  # the comment-only patch
    assert writer.change_pct == pytest.approx(-7.8, abs=0.1) and writer.ci_high < 0
    assert writer.outcome == "suspected" and comparison.state == "suspected"
    assert "one boot a side, boot again to confirm" in writer.words
    comparison, writer = _writer(kernels[2])  # the 10 ms sleep: -39%, held all the same
    assert writer.change_pct < -30 and writer.outcome == "suspected"
    assert not Regression.objects.exists()
    # The page says why, and how many boots each side had.
    page = client.get(f"/compare?base=kernel:{kernels[1].pk}&candidate=kernel:{kernels[2].pk}")
    text = page.content.decode()
    assert "1 boot a side" in text and "one boot a side, boot again to confirm" in text


def test_with_the_hosts_recorded_boots_the_slowdown_is_confirmed_and_the_comment_is_not(post):
    for doc in recorded_boots():
        status, body = post(doc)
        assert status == 201, body
    # Calibration runs are never compared: nothing was judged from them alone.
    assert not StoredComparison.objects.exists()
    assert Run.objects.filter(trigger__kind="calibration").count() == 6
    kernels = _upload(post)
    _, writer = _writer(kernels[1])
    assert writer.outcome != "regression" and writer.ci_low < writer.ci_high
    _, writer = _writer(kernels[2])
    assert writer.outcome == "regression"
    (regression,) = Regression.objects.filter(comparison__reason="parent")
    assert regression.comparison.candidate_kernel == kernels[2]
