"""An unsure cell never asks for more runs than its cap allows (issue 44,
item 9): past the cap the pages say it cannot be decided there, with the CI."""
from __future__ import annotations

import re

import pytest

from bundle_maker import planted_bundle
from iowatch_web.regressions.models import StoredVerdict

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_cell_the_cap_cannot_decide_says_so_on_every_page(post, client):
    for commit, values in ((1, [880, 1000, 1120]), (2, [850, 970, 1090])):
        doc = planted_bundle({"write.bw_kib_s": values}, started_at=f"2024-05-0{commit}T10:00:00Z",
                             kernel={"release": "6.12.0-iowatch", "git_commit": f"{commit:012x}"})
        assert post(doc)[0] == 201
    v = StoredVerdict.objects.get()
    assert v.outcome in ("inconclusive", "suspected") and v.needs_runs is None and v.cap
    said = f"not decidable within the cap ({v.cap}) at this noise: CI \u00b1"
    assert said in v.words
    overview = client.get("/").content.decode()
    assert said in overview and "needed" not in overview
    compare = client.get("/compare", {"base": "000000000001", "candidate": "000000000002"})
    text = compare.content.decode()
    assert said in text and not re.search(r"needs \d+ more runs", text)
