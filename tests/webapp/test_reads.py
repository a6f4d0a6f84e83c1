"""The read endpoints return what was stored, filtered in the database."""
from __future__ import annotations

import hashlib

import pytest

from bundle_maker import make_bundle
from iowatch.metrics import METRICS

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored(post):
    """Two runs: one on lab-1 (study f2fs-dio-write), one published on lab-2 (another study)."""
    first = make_bundle(cells=2, samples=3, repetitions=2)
    second = make_bundle(cells=1, samples=2, host="lab-2", study="xfs-smallfile-writeback", seed=7)
    second.update(published=True, label="before", status="failed")
    assert post(first)[0] == 201 and post(second)[0] == 201
    return first, second


def _get(client, path, **params):
    response = client.get(f"/api/v1/{path}", params)
    assert response.status_code == 200, response.content
    return response.json()


def test_runs_are_listed_and_filtered(client, stored):
    first, second = stored
    assert _get(client, "runs")["count"] == 2
    for params, expected in [({"host": "lab-2"}, second), ({"study": "f2fs-dio-write"}, first),
                             ({"published": "true"}, second), ({"published": "false"}, first),
                             ({"status": "failed"}, second), ({"label": "patched"}, first),
                             ({"kernel": "6.12.0-iowatch", "host": "lab-1"}, first)]:
        page = _get(client, "runs", **params)
        assert [r["run_id"] for r in page["items"]] == [expected["run_id"]], params
    assert _get(client, "runs", kernel="5.4")["count"] == 0
    page = _get(client, "runs", limit=1, offset=1)
    assert (page["count"], page["limit"], page["offset"], len(page["items"])) == (2, 1, 1, 1)
    assert client.get("/api/v1/runs", {"limit": 5000}).status_code == 400


def test_a_run_comes_back_as_it_was_sent(client, stored):
    first, _ = stored
    run = _get(client, f"runs/{first['run_id']}")
    assert run["host"] == {"name": "lab-1", "kind": "qemu"}
    assert run["kernel"]["release"] == first["kernel"]["release"]
    assert run["kernel"]["git_commit"] == first["kernel"]["git_commit"]
    assert run["kernel"]["series"]["name"] == first["kernel"]["series"]["name"]
    assert run["kernel"]["patch_index"] == 1
    assert run["kernel_config"] == first["kernel"]["config"]
    assert run["tools"] == first["tools"] and run["environment"] == first["environment"]
    assert [d["name"] for d in run["devices"]] == ["sd0"]
    assert run["devices"][0]["device_class"] == "sdcard"
    assert (run["cell_count"], run["sample_count"]) == (2, 12)
    assert run["started_at"].startswith("2024-05-01T10:00:00")
    missing = client.get("/api/v1/runs/00000000-0000-4000-8000-000000000000")
    assert missing.json() == {"error": "no run 00000000-0000-4000-8000-000000000000", "where": "url"}


def test_cells_samples_and_artifacts_come_back_equal(client, stored):
    first, _ = stored
    cells = _get(client, f"runs/{first['run_id']}/cells")["items"]
    assert [c["key"] for c in cells] == [c["id"] for c in first["cells"]]
    for cell, sent in zip(cells, first["cells"]):
        assert cell["study"] == "f2fs-dio-write" and cell["device"]["name"] == "sd0"
        assert cell["params"] == sent["params"] and cell["sample_count"] == 6
        assert [r["index"] for r in cell["repetitions"]] == [1, 2]
        detail = _get(client, f"cells/{cell['id']}")
        assert [a["name"] for a in detail["artifacts"]] == ["fio.json", "fio.json"]
        samples = _get(client, f"cells/{cell['id']}/samples")["items"]
        assert sorted((s["repetition"], s["metric"], s["value"], s["group"], s["job"])
                      for s in samples) == sorted(
            (r["index"], s["metric"], s["value"], s["group"], s["job"])
            for r in sent["repetitions"] for s in r["samples"])
        artifact = detail["artifacts"][0]
        response = client.get(artifact["url"])
        raw = b"".join(response.streaming_content) if response.streaming else response.content
        assert raw == sent["repetitions"][0]["artifacts"][0]["content"].encode()
        assert hashlib.sha256(raw).hexdigest() == artifact["sha256"]
        assert response["Content-Type"] == "application/octet-stream"


def test_samples_are_filtered_in_the_database(client, stored):
    first, second = stored
    metric = first["cells"][0]["repetitions"][0]["samples"][0]["metric"]
    sent = [s["value"] for c in first["cells"] for r in c["repetitions"] for s in r["samples"]
            if s["metric"] == metric]
    page = _get(client, "samples", metric=metric, run=first["run_id"])
    assert sorted(s["value"] for s in page["items"]) == sorted(sent)
    assert {s["run_id"] for s in page["items"]} == {first["run_id"]}
    assert _get(client, "samples", host="lab-2")["count"] == 2
    assert _get(client, "samples", study="xfs-smallfile-writeback")["count"] == 2
    assert _get(client, "samples", group="0")["count"] == 14
    assert _get(client, "samples", group="nope")["count"] == 0
    assert _get(client, "samples")["count"] == 14
    assert client.get("/api/v1/samples", {"limit": 20000}).status_code == 400
    assert client.get("/api/v1/samples", {"limit": 20000, "host": "lab-1"}).status_code == 200


def test_metrics_health_and_openapi(client):
    metrics = _get(client, "metrics")
    assert {m["name"] for m in metrics} == set(METRICS)
    bw = next(m for m in metrics if m["name"] == "write.bw_kib_s")
    assert (bw["unit"], bw["direction"]) == ("KiB/s", "higher")
    health = _get(client, "health")
    assert health["status"] == "ok" and health["database"] in ("postgresql", "sqlite")
    schema = _get(client, "openapi.json")
    post = schema["paths"]["/api/v1/bundles"]["post"]
    assert {"201", "200", "400", "401", "409", "413", "415"} <= set(post["responses"])
    assert "cells" in post["requestBody"]["content"]["application/json"]["schema"]["properties"]
    docs = client.get("/api/v1/docs")
    assert docs.status_code == 200 and b"cdn" not in docs.content.lower()


def test_a_runs_counts_are_stored_at_ingest_not_counted_on_each_read(stored, client):
    """GET /runs/{id} read the counts off the run (a 100,000-cell run's rows
    were counted on every request: a second each, issue 28)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from iowatch_web.results.models import Run
    run_id = stored[0]["run_id"]
    with CaptureQueriesContext(connection) as queries:
        run = client.get(f"/api/v1/runs/{run_id}").json()
    assert (run["cell_count"], run["sample_count"]) == (2, 12)
    counted = [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"].upper()
               and ('"results_cell"' in q["sql"] or '"results_sample"' in q["sql"])
               and '"regressions_' not in q["sql"]]
    assert counted == []
    # A run stored before the counts were is counted when read.
    Run.objects.filter(run_id=run_id).update(cell_count=None, sample_count=None)
    run = client.get(f"/api/v1/runs/{run_id}").json()
    assert (run["cell_count"], run["sample_count"]) == (2, 12)


def test_a_missing_regressions_report_names_it(client, stored):
    """The report endpoint's 404 reads as the others' (issue 44 item 15)."""
    missing = client.get("/api/v1/regressions/987654/report")
    assert missing.status_code == 404
    assert missing.json() == {"error": "no regression 987654", "where": "url"}
