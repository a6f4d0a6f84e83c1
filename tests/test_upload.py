"""iowatch upload against a stopped server, then a started one: all arrives once."""
from __future__ import annotations

import subprocess
import uuid

import pytest

from iowatch.bundle import BundleWriter
from live_server import IOWATCH, create_agent, free_port, get_json, running_server, scratch_database

pytestmark = pytest.mark.slow


def make_bundle(path, n_samples: int) -> str:
    run_id = str(uuid.uuid4())
    w = BundleWriter(path, run_id=run_id, kernel={"release": "6.12.0-test"},
                     host={"name": "localhost", "kind": "local"},
                     devices=[{"name": "loop-ssd", "class": "ssd"}], tools={"fio": "fio-3.33"})
    samples = [{"metric": "write.bw_kib_s", "value": 1000.0 + i, "unit": "KiB/s",
                "group": "0", "job": f"seqw#{i}"} for i in range(n_samples)]
    w.add_repetition("ext4/loop-ssd/seqw", "f2fs-dio-write", 1, samples,
                     {"fio.json": b'{"fio version": "fio-3.33"}\n'},
                     device="loop-ssd", filesystem="ext4")
    w.close()
    return run_id


def upload(url, token, spool, *bundles):
    return subprocess.run([IOWATCH, "upload", *map(str, bundles), "--server", url, f"--token={token}",
                           "--spool", str(spool), "--retries", "1", "--backoff", "0.05"],
                          capture_output=True, text=True, timeout=300)


def test_upload_to_a_stopped_server_then_a_started_one_stores_everything_once(tmp_path):
    spool = tmp_path / "spool"
    bundles = {tmp_path / f"b{i}": None for i in range(3)}
    for i, path in enumerate(bundles):
        bundles[path] = (make_bundle(path, n_samples=10 * (i + 1)), 10 * (i + 1))

    with scratch_database() as env:
        token = create_agent(env, "lab1")
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        first, second, third = bundles

        down = upload(url, token, spool, first, second)
        assert down.returncode == 1, down.stderr
        assert "kept 2 bundle(s)" in down.stderr
        assert sorted(p.name for p in spool.glob("*.json")) == sorted(
            f"{bundles[b][0]}.json" for b in (first, second))

        with running_server(env, port=port) as (url, _):
            up = upload(url, token, spool, third)
            assert up.returncode == 0, up.stderr
            # The spooled bundles go first, then the new one.
            sent = [line.split()[2].rstrip(":") for line in up.stdout.splitlines()
                    if line.startswith("sent:")]
            assert sent == [bundles[first][0], bundles[second][0], bundles[third][0]]
            assert not list(spool.glob("*.json"))

            again = upload(url, token, spool, first)
            assert again.returncode == 0, again.stderr
            assert again.stdout.startswith("already-stored:")

            runs = get_json(f"{url}/api/v1/runs?limit=100")
            items = runs["items"] if isinstance(runs, dict) else runs
            stored = {r["run_id"] for r in items}
            assert stored == {run_id for run_id, _ in bundles.values()}
            for run_id, n in bundles.values():
                cells = get_json(f"{url}/api/v1/runs/{run_id}/cells")
                cells = cells["items"] if isinstance(cells, dict) else cells
                assert len(cells) == 1
                samples = get_json(f"{url}/api/v1/cells/{cells[0]['id']}/samples?limit=1000")
                samples = samples["items"] if isinstance(samples, dict) else samples
                assert sorted(s["value"] for s in samples) == [1000.0 + i for i in range(n)]


def test_upload_refuses_an_invalid_bundle_and_spools_nothing(tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "bundle.json").write_text('{"schema_version": 1, "run_id": "x"')
    out = upload("http://127.0.0.1:9", "t", tmp_path / "spool", tmp_path / "bad")
    assert out.returncode == 2
    assert "bundle.json" in out.stderr and "not valid JSON" in out.stderr
    assert not (tmp_path / "spool").exists() or not list((tmp_path / "spool").glob("*.json"))
