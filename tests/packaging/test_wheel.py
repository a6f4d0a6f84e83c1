"""The wheel works outside the checkout, as the Dockerfile and the Ansible
common role install it: built from this tree, installed into a fresh
virtualenv, and run from a directory that is not the checkout.

What it proves: everything the programs read at run time (studies, matrices,
schemas, kernel config fragments, the example inventory, templates, static
files with Chart.js) ships as package data and is found with
importlib.resources; the web apps install under one namespace (iowatch_web)
and nothing with a generic top-level name does.

Slow (a virtualenv and pip install, about a minute with pip's cache warm);
the local-target run needs root for its loop devices.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from wheel_build import build_wheel

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _run(cmd, ok=(0,), **kw) -> subprocess.CompletedProcess:
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 900)
    done = subprocess.run(cmd, **kw)
    assert done.returncode in ok, (
        f"{' '.join(map(str, cmd))} exited {done.returncode}\n"
        f"stdout:\n{done.stdout[-4000:]}\nstderr:\n{done.stderr[-4000:]}")
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # A copy without .git, as a lab admin's `pip install .` of a release tarball sees it.
    try:
        return build_wheel(tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("dist"))
    except AssertionError as e:
        pytest.fail(str(e))


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    env_dir = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", str(env_dir)])
    _run([str(env_dir / "bin" / "pip"), "install", "-q", f"{wheel}[server]"])
    return env_dir


@pytest.fixture()
def elsewhere(tmp_path, venv) -> dict:
    """The environment of a user outside the checkout: their own data dir, no
    DATABASE_URL (the embedded SQLite store), the venv's bin first on PATH."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "IOWATCH_STUDIES", "IOWATCH_INVENTORY", "PYTHONPATH",
                        "DJANGO_SETTINGS_MODULE", "VIRTUAL_ENV")}
    env.update(IOWATCH_DATA_DIR=str(tmp_path / "data"), PATH=f"{venv / 'bin'}:{env['PATH']}")
    return {"cwd": tmp_path, "env": env}


def test_the_wheel_installs_only_the_two_namespaces_and_carries_its_data(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert tops == {"iowatch", "iowatch_web"}, tops
    for needed in ("iowatch/data/jobs/smoke.yml", "iowatch/data/jobs/studies/odirect-vs-readers.yml",
                   "iowatch/data/kernel/config/iowatch.config", "iowatch/data/hardware-inventory.yml",
                   "iowatch/schemas/bundle-v1.json",
                   "iowatch_web/dashboard/templates/dashboard/overview.html",
                   "iowatch_web/dashboard/static/dashboard/vendor/chart.umd.js",
                   "iowatch_web/results/migrations/0001_initial.py"):
        assert needed in names, f"{needed} is not in {wheel.name}"


def test_installed_commands_find_their_studies_from_another_directory(elsewhere, venv):
    iowatch = str(venv / "bin" / "iowatch")
    assert "--series" in _run([iowatch, "check", "--help"], **elsewhere).stdout
    done = _run([iowatch, "compare", "--published", "odirect-vs-readers", "--base", "2.6.32-rc7",
                 "--candidate", "for-2.6.33", "--format", "json"], ok=(1,), **elsewhere)
    # Exit 1: the post's regression, the writer starved while the readers gained.
    report = json.loads(done.stdout)
    assert {(c["group"], c["outcome"]) for c in report["cells"]} == {
        ("writer", "regression"), ("readers", "improvement")}, done.stdout[:2000]
    where = _run([str(venv / "bin" / "python"), "-c",
                  "import iowatch.resources as r; print(r.studies_dir())"], **elsewhere).stdout
    assert str(venv) in where and "/work/" not in where.replace(str(venv), "")


@pytest.mark.skipif(os.geteuid() != 0, reason="the local target makes loop devices: run as root")
def test_installed_run_of_the_smoke_matrix_on_the_local_target(elsewhere, venv):
    iowatch = str(venv / "bin" / "iowatch")
    done = _run([iowatch, "run", "smoke", "--target", "localhost", "--reps", "1", "--store"],
                timeout=1200, **elsewhere)
    assert "stored" in (done.stdout + done.stderr), done.stdout[-2000:]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_installed_serve_answers_every_page(elsewhere, venv):
    iowatch = str(venv / "bin" / "iowatch")
    # Something to show: the studies' published numbers, stored from the packaged studies.
    _run([iowatch, "import-published"], **elsewhere)
    port = _free_port()
    server = subprocess.Popen([iowatch, "serve", "--port", str(port), "--workers", "1"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True, **elsewhere)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(f"{base}/api/v1/health", timeout=2)
                break
            except OSError:
                assert server.poll() is None, server.stdout.read()[-4000:]
                time.sleep(0.5)
        pages = ["/", "/series/", "/regressions/", "/runs/", "/studies/",
                 "/studies/odirect-vs-readers/", "/history", "/compare",
                 "/api/v1/health", "/api/v1/openapi.json", "/api/v1/runs",
                 "/dashboard/api/overview", "/dashboard/api/published/odirect-vs-readers",
                 "/static/dashboard/vendor/chart.umd.js", "/accounts/login/"]
        answers = {}
        for page in pages:
            try:
                with urllib.request.urlopen(base + page, timeout=60) as r:
                    answers[page] = r.status
            except urllib.error.HTTPError as e:
                answers[page] = e.code
        assert answers == {p: 200 for p in pages}
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=30)
