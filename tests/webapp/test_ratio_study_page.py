"""The ext4-dio-randread study page (issue 44, item 13): the post's claim is
the ext4/raw ratio (0.5, 0.99), the lab measures ext4's read IOPS; the lab's
numbers are labelled as read IOPS, never "ratio", and the post's ratios and
the lab's IOPS are drawn on separate charts, each with its own axis."""
from __future__ import annotations

import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from iowatch import resources
from iowatch.commands.import_published import published_bundles
from iowatch.commands.import_reproductions import kept_reproductions, stored_bundles
from iowatch.metrics import METRICS
from iowatch.studies import load_studies

KEPT = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "reproductions"
pytestmark = pytest.mark.django_db(transaction=True)


def test_the_labs_iops_are_labelled_and_charted_apart_from_the_posts_ratio(client, tmp_path):
    studies = load_studies(resources.studies_dir())
    kept = [k for k in kept_reproductions(KEPT, studies) if k.check_dir.name == "seed-001"]
    dirs = [str(d) for d in stored_bundles(kept, studies, tmp_path / "out")]
    dirs += [str(d) for d in published_bundles(studies["ext4-dio-randread"], tmp_path / "pub")]
    call_command("ingest_bundle", *dirs, stdout=StringIO())

    data = client.get("/dashboard/api/published/ext4-dio-randread").json()
    (claim,) = [c for c in data["claims"] if c["metric"] == "ratio.fs_to_raw"]
    assert claim["lab"], claim["missing"]
    iops_unit = METRICS["read.iops"].unit
    for row in claim["lab"]:
        assert row["metric"] == "read.iops" and row["metric_unit"] == iops_unit
        assert row["unit"] != "ratio"
    # Two charts: the post's ratios on one, the lab's IOPS on the other.
    assert [(c["metric"], c["unit"]) for c in claim["charts"]] == [
        ("ratio.fs_to_raw", "ratio"), ("read.iops", iops_unit)]
    assert {b["value"] for b in claim["charts"][0]["bars"]} == {0.5, 0.99}
    assert all(b["kind"] in ("before", "after") for b in claim["charts"][1]["bars"])

    page = client.get("/studies/ext4-dio-randread/").content.decode()
    row = re.search(r'<div class="lab-row">(.*?)</div>', page, re.S)[1]
    assert "read.iops" in row and "ratio" not in re.sub(r"<[^>]+>", "", row).split("read.iops", 1)[1]
    canvases = re.findall(rf'data-claim="{claim["id"]}" data-part="(\d)"', page)
    assert canvases == ["0", "1"]
    # The claim's row says why its metric decides, in the study's words.
    why = studies["ext4-dio-randread"].decides_why[("randread", "ratio.fs_to_raw")]
    names = re.findall(r'<td class="claim-name">(.*?)</td>', page, re.S)
    assert any(f'<span class="hint">decides: {why}</span>' in n.replace("&#x27;", "'") for n in names), names
