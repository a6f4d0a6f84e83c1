"""A regression exported from a real store: the e2e check's three bundles go
through the ingest API, the server's own verdict work opens the regression,
and `iowatch export kcidb --regression` reads it over HTTP (pytest-django's
live_server on the test database). Its tests carry the stored verdicts."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from iowatch import bundle

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "webapp"), str(ROOT / "tests" / "dashboard")]

from bundle_maker import recorded_boots  # noqa: E402
from dashboard_browser import uploader  # noqa: E402  (the shared agent upload)
from test_export import AABB, CHECK, WRITER, export  # noqa: E402

pytestmark = [pytest.mark.webapp, pytest.mark.django_db(transaction=True)]


def test_a_stored_regression_exports_its_stored_verdicts(live_server):
    from iowatch_web.regressions.models import Regression

    post = uploader("kcidb-lab")
    for doc in recorded_boots():  # the vlab's record of its noise between boots
        post(doc)
    for n in range(3):
        post(json.loads(bundle.to_wire(CHECK / f"guest-{n:02d}" / "bundle")))
    patch2 = bundle.load(CHECK / "guest-02" / "bundle")
    regression = Regression.objects.get(comparison__reason="parent",
                                        comparison__candidate_kernel__patch_index=2)
    stored = {(v.cell_key, v.group, v.metric_id): v for v in regression.comparison.cells.all()}
    assert {v.outcome for v in stored.values()} == {"regression", "improvement"}  # writer, readers

    data = export("--regression", str(regression.id), "--server", live_server.url)
    assert len(data["builds"]) == 1 and data["builds"][0]["status"] == "PASS"
    assert data["checkouts"][0]["misc"]["commit"] == patch2["kernel"]["git_commit"]
    assert len(data["tests"]) == len(stored)
    for t in data["tests"]:
        v = stored[(t["misc"]["cell"], t["misc"]["group"], t["misc"]["metric"])]
        assert t["misc"]["outcome"] == v.outcome
        assert t["status"] == {"regression": "FAIL", "improvement": "PASS"}[v.outcome]
        assert t["number"]["value"] == v.candidate_median
        assert t["misc"]["change_pct"] == v.change_pct and t["misc"]["regression"] == regression.id
    writer = next(t for t in data["tests"] if t["path"] == WRITER)
    # The check's own export judged the same two runs: the same test, the same status.
    checked = {t["id"]: t for t in export("--check", str(CHECK), "--history", str(AABB))["tests"]}
    parent = bundle.load(CHECK / "guest-01" / "bundle")["run_id"]
    assert writer["id"].endswith(f":vs:{parent}") and checked[writer["id"]]["status"] == "FAIL"
    # A run exported alone is measurements (DONE) under ids of their own, read
    # from the bundle or from the store alike.
    alone = export("--run", str(CHECK / "guest-02" / "bundle"))
    assert writer["id"] not in {t["id"] for t in alone["tests"]}
    from_server = export("--run", patch2["run_id"], "--server", live_server.url)
    assert {t["id"] for t in from_server["tests"]} == {t["id"] for t in alone["tests"]}
    assert from_server["checkouts"] == alone["checkouts"]


def test_a_series_that_came_by_mail_is_kept_by_the_store(live_server, client):
    """The series record a mailed check's bundles carry (Message-IDs, To/Cc,
    patch hashes) is stored, read back by the API (for the e-mail report's
    In-Reply-To and References) and makes the same KCIDB checkout as the bundle."""
    from iowatch.kernel.series import patchset_hash

    post = uploader("kcidb-mail")
    record = {"message_id": "cover.1@example.org", "subject": "ext4: yield to readers",
              "to": ["linux-ext4@vger.kernel.org"], "cc": ["Bob <bob@example.org>"],
              "archive": "https://lore.kernel.org/all/", "patch_count": 2,
              "patches": [{"index": i, "subject": f"patch {i}", "author": "Ann <ann@example.org>",
                           "message_id": f"{i}.1@example.org", "sha256": f"{i}" * 64}
                          for i in (1, 2)]}
    # The fixture's bundle is of version 1, before the series from mail: made current.
    doc = bundle.upgrade(json.loads(bundle.to_wire(CHECK / "guest-02" / "bundle")))
    doc["kernel"]["series"].update(record)
    doc["kernel"]["patch"]["message_id"] = "2.1@example.org"
    post(doc)
    run = client.get(f"/api/v1/runs/{doc['run_id']}").json()
    assert run["kernel"]["series"]["to"] == ["linux-ext4@vger.kernel.org"]
    assert run["kernel"]["series"]["message_id"] == "cover.1@example.org"
    assert [(p["index"], p["message_id"], p["author"]) for p in run["patches"]] == \
        [(1, "1.1@example.org", "Ann <ann@example.org>"), (2, "2.1@example.org", "Ann <ann@example.org>")]

    data = export("--run", doc["run_id"], "--server", live_server.url)
    checkout = data["checkouts"][0]
    assert checkout["patchset_hash"] == patchset_hash(record["patches"])
    assert checkout["git_commit_hash"] == doc["kernel"]["series"]["base"]
    assert checkout["message_id"] == "cover.1@example.org"
    assert checkout["patchset_files"][1]["url"] == "https://lore.kernel.org/all/2.1@example.org/raw"
