"""PostgreSQL goes down while a lab uploads, then comes back: nothing is lost.

A PostgreSQL cluster of the test's own (initdb in a temporary directory, on a
free port: the suite's shared cluster is never stopped), a real `iowatch
serve` with its verdict worker, and a real `iowatch upload` of three bundles
started while the database is down. The API answers JSON 503 with
Retry-After meanwhile; the uploader waits and retries; the verdict worker,
which loses its connection, is started again by `iowatch serve`. When the
database is back, every bundle ends stored once and every verdict is made."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest

from iowatch.bundle import BundleWriter
from live_server import IOWATCH, create_agent, free_port, get_json, manage, running_server

pytestmark = [
    pytest.mark.slow,
    pytest.mark.one_engine,  # its own cluster, whichever store the suite runs against
    pytest.mark.skipif(os.geteuid() != 0, reason="starts its own PostgreSQL as the postgres user"),
    pytest.mark.skipif(not Path("/usr/lib/postgresql").is_dir(), reason="PostgreSQL is not installed"),
]


def _pg_bin(tool: str) -> str:
    version = sorted(os.listdir("/usr/lib/postgresql"), key=lambda v: int(v.split(".")[0]))[-1]
    return f"/usr/lib/postgresql/{version}/bin/{tool}"


@contextmanager
def own_postgres():
    """A throwaway cluster: yields (DATABASE_URL, start, stop); always removed."""
    root = Path(tempfile.mkdtemp(prefix="iowatch-pg-"))
    shutil.chown(root, "postgres", "postgres")
    data, port = root / "data", free_port()
    as_pg = ["runuser", "-u", "postgres", "--"]

    def pg_ctl(*args):
        subprocess.run([*as_pg, _pg_bin("pg_ctl"), "-D", str(data), "-w", "-t", "60", *args],
                       check=True, capture_output=True)

    start = lambda: pg_ctl("-l", str(root / "log"), "-o",  # noqa: E731
                           f"-p {port} -k {root} -c listen_addresses=127.0.0.1", "start")
    stop = lambda: pg_ctl("-m", "fast", "stop")  # noqa: E731
    try:
        subprocess.run([*as_pg, _pg_bin("initdb"), "-D", str(data), "-U", "postgres",
                        "--auth=trust", "-E", "UTF8"], check=True, capture_output=True)
        start()
        for sql in ("CREATE ROLE iowatch LOGIN PASSWORD 'iowatch'",
                    "CREATE DATABASE iowatch OWNER iowatch"):  # not in one transaction
            subprocess.run([*as_pg, _pg_bin("psql"), "-h", str(root), "-p", str(port),
                            "-U", "postgres", "-qc", sql], check=True, capture_output=True)
        yield f"postgres://iowatch:iowatch@127.0.0.1:{port}/iowatch", start, stop
    finally:
        subprocess.run([*as_pg, _pg_bin("pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def night(path: Path, i: int, level: float) -> str:
    """A nightly bundle of one f2fs cell with five repetitions at `level` KiB/s."""
    run_id = str(uuid.uuid4())
    w = BundleWriter(path, run_id=run_id, host={"name": "lab-1", "kind": "local"},
                     kernel={"release": "6.12.0", "git_commit": f"{i + 1:012x}"},
                     devices=[{"name": "sd0", "class": "sdcard"}], tools={"fio": "fio-3.33"},
                     matrix="nightly", started_at=f"2024-05-0{i + 1}T02:00:00Z")
    for rep, noise in enumerate([-4, 2, 4, -2, 0], start=1):
        w.add_repetition("f2fs-dio-write/sd0/f2fs", "f2fs-dio-write", rep,
                         [{"metric": "write.bw_kib_s", "value": level + noise, "unit": "KiB/s",
                           "group": "seqw", "job": None}],
                         {"fio.json": b'{"fio version": "fio-3.33"}\n'},
                         device="sd0", filesystem="f2fs")
    w.close()
    return run_id


def calibration(path: Path, k: int, factor: float) -> Path:
    """One calibration boot of lab-1 (a kernel of its own, trigger calibration):
    the host's record of its noise between boots, which a night compared with
    the night before (one boot a side) reads (issue 41 item 1)."""
    from iowatch import bundle
    night(path, 4 + k, 1000 * factor)
    doc = bundle.load(path)
    doc.update(schema_version=2, trigger={"kind": "calibration"},
               kernel={**doc["kernel"], "git_commit": "ca11b7a7e000"})
    bundle.write_manifest(path, doc)
    return path


def test_uploads_during_a_database_outage_all_end_stored_with_their_verdicts(tmp_path):
    bundles = [tmp_path / f"night{i}" for i in range(4)]
    run_ids = [night(b, i, level) for i, (b, level) in
               enumerate(zip(bundles, (1000, 1000, 1000, 700)))]
    record = [calibration(tmp_path / f"calibration{k}", k, f)
              for k, f in enumerate((1.0, 1.01, 0.99, 1.005))]
    with own_postgres() as (url, start, stop):
        env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
        env.update(DATABASE_URL=url, IOWATCH_DATA_DIR=str(tmp_path / "data"))
        manage(env, "migrate", "--noinput", "-v", "0")
        token = create_agent(env, "lab")
        upload = [IOWATCH, "upload", "--server", None, f"--token={token}",
                  "--spool", str(tmp_path / "spool"), "--retries", "8", "--backoff", "0.5"]
        with running_server(env) as (server, _):
            upload[3] = server
            first = subprocess.run([*upload, *map(str, record), str(bundles[0])],
                                   capture_output=True, text=True, env=env, timeout=120)
            assert first.returncode == 0, first.stdout + first.stderr

            stop()
            try:
                urllib.request.urlopen(f"{server}/api/v1/runs", timeout=30)
                pytest.fail("the API answered while its database was down")
            except urllib.error.HTTPError as e:
                assert e.code == 503 and e.headers["Retry-After"], e.code
                assert json.loads(e.read())["where"] == "database"
            later = subprocess.Popen([*upload, *map(str, bundles[1:])], env=env, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            time.sleep(5)  # the uploader meets the outage
            start()
            out, _ = later.communicate(timeout=400)
            assert later.returncode == 0, out

            deadline = time.monotonic() + 120
            while True:
                runs = [get_json(f"{server}/api/v1/runs/{r}") for r in run_ids]
                if all(r["verdict"]["state"] == "done" for r in runs) or time.monotonic() > deadline:
                    break
                time.sleep(1)
            assert [r["verdict"]["state"] for r in runs] == ["done"] * 4, runs
            assert get_json(f"{server}/api/v1/runs")["count"] == 4 + len(record)  # each stored once
            assert get_json(f"{server}/api/v1/regressions")["count"] >= 1  # the slow fourth night
