"""Run `iowatch serve` as a real child process on a scratch database.

Used by the end-to-end upload test and by bench/ingest. With DATABASE_URL set
(PostgreSQL) it makes a scratch database on that server and drops it after;
without it the server uses an embedded SQLite store in a scratch data dir.
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

VENV_BIN = Path(sys.executable).parent
IOWATCH = str(VENV_BIN / "iowatch")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Each test process migrates one store, once: every scratch database starts as
# a copy of it (PostgreSQL: CREATE DATABASE ... TEMPLATE; SQLite: the file
# copied) instead of running the 43 migrations again (about 10 s on 2 cores).
# A test of migrating itself makes its own (tests/webapp/migrating.py).
_MIGRATED: dict = {}


def _admin(url: str, sql: str) -> None:
    import psycopg

    admin = urlunsplit(urlsplit(url)._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql)


def _named(url: str, dbname: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{dbname}"))


def _base_env(data_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env["IOWATCH_DATA_DIR"] = str(data_dir)
    return env


def _migrated(url: str | None):
    """The migrated store of this process: its database's name (PostgreSQL) or
    its SQLite file; made on first use, removed when the process ends."""
    if url not in _MIGRATED:
        directory = Path(tempfile.mkdtemp(prefix="iowatch-e2e-migrated-"))
        atexit.register(shutil.rmtree, directory, True)
        env = _base_env(directory)
        if url:
            name = f"iowatch_e2e_migrated_{uuid.uuid4().hex[:12]}"
            _admin(url, f'CREATE DATABASE "{name}"')
            atexit.register(_admin, url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            env["DATABASE_URL"] = _named(url, name)
        manage(env, "migrate", "--noinput", "-v", "0")
        _MIGRATED[url] = name if url else directory / "iowatch.sqlite3"
    return _MIGRATED[url]


@contextmanager
def scratch_database():
    """Yields the environment a server process should get: a store of its own,
    migrated (a copy of this process's migrated store)."""
    data_dir = Path(tempfile.mkdtemp(prefix="iowatch-e2e-"))
    env = _base_env(data_dir)
    url = os.environ.get("DATABASE_URL")
    dbname = None
    try:
        template = _migrated(url)
        if url:
            dbname = f"iowatch_e2e_{uuid.uuid4().hex[:12]}"
            _admin(url, f'CREATE DATABASE "{dbname}" TEMPLATE "{template}"')
            env["DATABASE_URL"] = _named(url, dbname)
        else:
            with sqlite3.connect(template) as src, sqlite3.connect(data_dir / template.name) as dst:
                src.backup(dst)
        yield env
    finally:
        if dbname:
            _admin(url, f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
        shutil.rmtree(data_dir, ignore_errors=True)


def manage(env: dict, *args: str) -> str:
    out = subprocess.run([IOWATCH, "manage", *args], env=env, capture_output=True, text=True,
                         timeout=300)
    if out.returncode:
        raise RuntimeError(f"iowatch manage {' '.join(args)} failed:\n{out.stdout}\n{out.stderr}")
    return out.stdout


def create_agent(env: dict, name: str, *hosts: str) -> str:
    """A fresh agent token (create_agent prints it as its last word), acting
    for `hosts` (claims, heartbeats, steps, results)."""
    return manage(env, "create_agent", name, *(["--host", *hosts] if hosts else [])).split()[-1]


@contextmanager
def running_server(env: dict, port: int | None = None, workers: int = 2, log=None,
                   args: tuple[str, ...] = (), health_port: int | None = None):
    """Starts `iowatch serve` (with its verdict worker unless args say --no-worker)
    and its health server on `health_port` (a free one unless given), waits for
    /api/v1/health, yields (URL, process); always stops it."""
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([IOWATCH, "serve", "--port", str(port), "--workers", str(workers),
                             "--health-port", str(health_port or free_port()), *args],
                            env=env, stdout=log or subprocess.DEVNULL,
                            stderr=log or subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"iowatch serve exited with {proc.returncode}")
            try:
                with urllib.request.urlopen(f"{url}/api/v1/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("iowatch serve did not answer /api/v1/health within 120 s")
            time.sleep(0.3)
        yield url, proc
    finally:
        try:
            os.killpg(proc.pid, 15)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()


def get_json(url: str):
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def iowatch_cli(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """`iowatch ARGS` of this virtualenv, its output captured."""
    return subprocess.run([IOWATCH, *args], capture_output=True, text=True, timeout=timeout)


def wait_verdict(url: str, run_id: str) -> None:
    """Until the server's verdict work on the run is done (at most 150 s)."""
    for _ in range(300):
        if get_json(f"{url}/api/v1/runs/{run_id}")["verdict"]["state"] == "done":
            return
        time.sleep(0.5)
    raise AssertionError(f"run {run_id}: no verdict")


def recorded_boots_as(tmp: Path, host: str | None = None) -> list[Path]:
    """Copies of the virtual lab's recorded boots of one kernel
    (tests/fixtures/e2e-boots/aabb: six boots of the end-to-end check's cell) as
    calibration runs (trigger "calibration") of `host` (default: as recorded,
    vlab): the record of its noise between boots that a comparison of one boot
    a side reads (iowatch.judging.boots). Upload them before the runs they serve."""
    import shutil
    import uuid

    from iowatch import bundle
    root = Path(__file__).resolve().parent / "fixtures" / "e2e-boots" / "aabb"
    out = []
    for src in sorted(root.glob("*/bundle")):
        dst = tmp / "recorded-boots" / src.parent.name
        shutil.copytree(src, dst)
        doc = bundle.upgrade(bundle.load(dst))
        doc["trigger"] = {"kind": "calibration"}
        doc["run_id"] = str(uuid.uuid4())
        if host is not None:
            doc["host"] = {"name": host, "kind": "bare-metal"}
        bundle.write_manifest(dst, doc)
        out.append(dst)
    return out
