"""One series checked twice (issue 44 item 10): the same patches (name and
hashes) checked on two bases, as two machines' debian-base commits make them,
once with patch 2 halving the bandwidth and once with no change. The series
page lists the two checks as one group and says they disagree on patch 2;
another series of the same name but other patches stays apart."""
from __future__ import annotations

import hashlib
import html
import re

import pytest
from dashboard_browser import at, kernel, level
from dashboard_browser import uploader

SUBJECTS = {1: "f2fs: take the lock later", 2: "f2fs: drop the write lock"}


def _patches(version: str) -> list[dict]:
    return [{"index": i, "subject": s, "sha256": hashlib.sha256(f"{version}{s}".encode()).hexdigest()}
            for i, s in SUBJECTS.items()]


@pytest.fixture
def checked_twice(transactional_db):
    from bundle_maker import calibration_bundles, planted_bundle

    post = uploader("series-agent")
    # Each host's record of its noise between boots: one run a kernel (issue 41 item 1).
    for host in ("lab-1", "lab-2"):
        for boot in calibration_bundles(planted_bundle({"write.bw_kib_s": level(1000)},
                                                       matrix="series", host=host)):
            post(boot)
    hour = 0
    for base, host, version, levels in (("v6.12", "lab-1", "v1", [1000, 1005, 500]),
                                         ("c12fff06aa55", "lab-2", "v1", [1000, 1002, 998]),
                                         ("v6.13", "lab-1", "v2", [1000, 1001, 999])):
        for patch, bw in enumerate(levels):
            k = kernel(900 + hour, "f2fs: dio write lock", patch, SUBJECTS.get(patch, ""))
            k["series"].update(base=base, patches=_patches(version))
            doc = planted_bundle({"write.bw_kib_s": level(bw)}, kernel=k, started_at=at(hour),
                                 matrix="series", host=host)
            doc["schema_version"] = 2
            post(doc)
            hour += 1


def _groups(page: str) -> list[str]:
    return re.findall(r'<tbody class="series-group[^"]*">(.*?)</tbody>', page, re.S)


def test_the_checks_of_one_series_are_one_group_that_names_the_patch_they_disagree_on(
        checked_twice, client):
    page = client.get("/series/").content.decode()
    groups = _groups(page)
    assert len(groups) == 2, groups
    [twice] = [g for g in groups if "checked 2 times" in g]
    text = html.unescape(re.sub(r"<[^>]+>", "", twice))
    assert "They disagree on patch 2 (f2fs: drop the write lock)" in text
    assert "regression in the check on v6.12 (lab-1)" in text
    assert "no change in the check on c12fff06aa55 (lab-2)" in text
    assert "patch 1" not in text.split("They disagree")[1].split("patch 2")[0]
    # Both checks' rows are in the group; the series with other patches is alone.
    assert twice.count('href="/series/') == 2
    [alone] = [g for g in groups if g is not twice]
    assert "checked" not in alone and "v6.13" in alone


def test_each_checks_page_names_the_other_check_and_the_patch_they_disagree_on(checked_twice, client):
    from iowatch_web.results.models import PatchSeries

    first = PatchSeries.objects.get(base="v6.12")
    other = PatchSeries.objects.get(base="c12fff06aa55")
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", "", client.get(f"/series/{first.pk}/")
                                         .content.decode())).split())
    assert "was also checked on c12fff06aa55" in text and "v6.13" not in text
    assert "patch 2 (f2fs: drop the write lock):" in text
    assert f'href="/series/{other.pk}/"' in client.get(f"/series/{first.pk}/").content.decode()
    alone = PatchSeries.objects.get(base="v6.13")
    assert "also checked" not in client.get(f"/series/{alone.pk}/").content.decode()
