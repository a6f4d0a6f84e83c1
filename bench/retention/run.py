"""Retention figures: a year of nightlies (365 runs of the smoke matrix's
cells on one host, a run a day), then `iowatch manage retain`. Prints the
sample and summary rows, the database and table sizes, and the history
endpoint's p50/p95, before and after; and whether the history answers the
same numbers. Not a test: it prints figures.

The smoke matrix (jobs/smoke.yml) expands to 8 cells at 2 repetitions. Every
repetition has the sample rows and raw files of a real one: the first
repetition of tests/fixtures/e2e-check/guest-00 (odirect-vs-readers, 141
samples: 31 of job groups, 110 of single jobs; its fio.json, job.fio and
diskstats files), values scaled per night. Not through the ingest API: the runs
through the ORM, the samples and files by COPY.

    DATABASE_URL=postgres://iowatch:iowatch@127.0.0.1:5432/iowatch \\
        .venv/bin/python bench/retention/run.py [--nights 365] [--clients 4] [--seconds 8]
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import random
import sys
import time
import urllib.request
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from live_server import manage, running_server, scratch_database  # noqa: E402

# The dashboard bench's concurrent clients and percentiles.
_spec = importlib.util.spec_from_file_location("dashboard_bench", ROOT / "bench/dashboard/run.py")
dashboard_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dashboard_bench)

FIXTURE = ROOT / "tests/fixtures/e2e-check/guest-00/bundle"
HOST = "lab-nightly"
DEVICES = {"hdd": "hdd0", "ssd-raid0": "md0", "ssd": "ssd0", "nvme": "nvme0", "sdcard": "sd0",
           "emmc": "emmc0"}


def smoke_cells() -> tuple[list[tuple[str, str, str]], int]:
    """(study, device class, filesystem) of every cell of jobs/smoke.yml, and its repetitions."""
    from iowatch.studies import load_matrix

    matrix = load_matrix(ROOT / "jobs/smoke.yml")
    cells = [(s.slug, cls, fs) for s in matrix.studies
             for cls in s.device_classes
             for fs in matrix.filesystems.get(s.slug) or s.filesystems]
    return cells, matrix.reps


def template() -> tuple[list[dict], list[tuple[str, bytes]]]:
    doc = json.loads((FIXTURE / "bundle.json").read_text())
    rep = doc["cells"][0]["repetitions"][0]
    files = [(a["name"], (FIXTURE / a["path"]).read_bytes()) for a in rep["artifacts"]]
    return rep["samples"], files


def fill(env: dict, nights: int) -> dict:
    """Runs, cells and repetitions through the ORM (so any field the store adds
    gets its default), the samples and raw files by COPY."""
    os.environ.update(DATABASE_URL=env["DATABASE_URL"], IOWATCH_DATA_DIR=env["IOWATCH_DATA_DIR"],
                      DJANGO_SETTINGS_MODULE="iowatch_web.site.settings")
    import django
    import psycopg

    django.setup()
    from iowatch_web.results.models import Cell, Device, Host, Kernel, Repetition, Run, Study

    cells, reps = smoke_cells()
    samples, files = template()
    rng = random.Random(1)
    today = datetime.now(timezone.utc).replace(hour=2, minute=0, second=0, microsecond=0)
    t0 = time.monotonic()
    studies = {slug: Study.objects.create(slug=slug) for slug in sorted({s for s, _, _ in cells})}
    host = Host.objects.create(name=HOST, kind="qemu")
    devices = {cls: Device.objects.create(host=host, name=name, device_class=cls)
               for cls, name in DEVICES.items()}
    kernels = Kernel.objects.bulk_create(
        Kernel(release="6.13.0-nightly", git_commit=f"{k + 1:012x}", config_hash="c0ffee")
        for k in range(nights))
    runs = Run.objects.bulk_create(
        Run(run_id=uuid.UUID(int=rng.getrandbits(128), version=4), host=host, kernel=kernels[k],
            status="passed", label="nightly", matrix="smoke", command="iowatch run jobs/smoke.yml",
            started_at=today - timedelta(days=nights - 1 - k),
            finished_at=today - timedelta(days=nights - 1 - k), bundle_sha256="0" * 64,
            verdict_state="done") for k in range(nights))
    stored = Cell.objects.bulk_create(
        Cell(run=run, key=f"{slug}/{DEVICES[cls]}/{fs}", study=studies[slug], device=devices[cls],
             filesystem=fs, status="passed") for run in runs for slug, cls, fs in cells)
    Repetition.objects.bulk_create(Repetition(cell=c, index=r, status="passed")
                                   for c in stored for r in range(1, reps + 1))
    n_samples = 0
    with psycopg.connect(env["DATABASE_URL"]) as conn, conn.cursor() as cur:
        with cur.copy("COPY results_sample (cell_id, repetition, metric_id, value, \"group\", job) "
                      "FROM STDIN") as cp:
            for c in stored:
                for r in range(1, reps + 1):
                    scale = 1 + rng.gauss(0, 0.05)
                    for s in samples:
                        cp.write_row((c.pk, r, s["metric"], s["value"] * scale, s["group"], s["job"]))
                        n_samples += 1
        with cur.copy("COPY results_artifact (cell_id, repetition, name, sha256, size, content) "
                      "FROM STDIN") as cp:
            for c in stored:
                for r in range(1, reps + 1):
                    for name, content in files:
                        cp.write_row((c.pk, r, name, hashlib.sha256(content).hexdigest(),
                                      len(content), content))
        conn.commit()
        cur.execute("ANALYZE")
    return {"cells": len(cells), "reps": reps, "samples": n_samples,
            "seconds": time.monotonic() - t0}


def sizes(url: str, full_vacuum: bool = False) -> dict:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM FULL ANALYZE" if full_vacuum else "VACUUM ANALYZE")
        one = lambda q: conn.execute(q).fetchone()[0]  # noqa: E731
        return {"samples": one("SELECT count(*) FROM results_sample"),
                "summaries": one("SELECT count(*) FROM retention_samplesummary"),
                "database": one("SELECT pg_database_size(current_database())"),
                "sample table": one("SELECT pg_total_relation_size('results_sample')"),
                "summary table": one("SELECT pg_total_relation_size('retention_samplesummary')"),
                "artifact table": one("SELECT pg_total_relation_size('results_artifact')")}


def history_paths(cells, group_metrics, limits) -> list[str]:
    """Every request a different (key, limit): the history itself, never the dashboard's cache."""
    return [f"/dashboard/api/history?" + urlencode(
        {"study": slug, "host": HOST, "device": DEVICES[cls], "filesystem": fs, "group": g,
         "metric": m, "limit": limit})
        for limit in limits for slug, cls, fs in cells for g, m in group_metrics]


def mib(n: int) -> str:
    return f"{n / 2**20:8.1f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nights", type=int, default=365)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        raise SystemExit("bench: set DATABASE_URL to a PostgreSQL server (a scratch database is made on it)")
    cells, _ = smoke_cells()
    samples, _ = template()
    # The history a maintainer reads: each job group's bandwidth and IOPS.
    group_metrics = sorted({(s["group"], s["metric"]) for s in samples
                            if s["job"] is None and s["metric"].endswith(("bw_kib_s", ".iops"))})
    # --no-worker: the verdict worker's sweep would start a retention pass by itself.
    with scratch_database() as env, running_server(env, workers=args.workers,
                                                   args=("--no-worker",)) as (base, _):
        url = env["DATABASE_URL"]
        filled = fill(env, args.nights)
        print(f"filled: {args.nights} nightly runs x {filled['cells']} cells x {filled['reps']} "
              f"repetitions, {filled['samples']} sample rows in {filled['seconds']:.1f} s")
        probe = history_paths(cells[:1], group_metrics[:1], [args.nights])[0]
        with urllib.request.urlopen(base + probe, timeout=60) as r:
            before_answer = json.loads(r.read())
        figures = {}
        for phase in ("before", "after"):
            if phase == "after":
                t = time.monotonic()
                said = manage(env, "retain")
                print(f"iowatch manage retain ({time.monotonic() - t:.1f} s):")
                print("  " + said.strip().replace("\n", "\n  "))
            paths = history_paths(cells, group_metrics, range(args.nights, 0, -1))
            # Alternate paths for each phase: no answer is read from the other's cache.
            paths = paths[1::2] if phase == "after" else paths[0::2]
            dashboard_bench.load(base, paths[:2], 1, 0.5)
            times = dashboard_bench.load(base, paths, args.clients, args.seconds)
            figures[phase] = (sizes(url), times)
        with urllib.request.urlopen(base + probe + "&offset=0", timeout=60) as r:
            after_answer = json.loads(r.read())
        full = sizes(url, full_vacuum=True)
        for answer in (before_answer, after_answer):
            answer["points"].sort(key=lambda p: (p["x"], p["y"]))
            answer.pop("offset", None)
        print(f"history answers the same numbers after retention: "
              f"{'yes' if before_answer == after_answer else 'NO'} "
              f"({len(after_answer['points'])} points, {len(after_answer['kernels'])} kernels)")
        print(f"{'':34} {'before':>14} {'after':>14} {'after VACUUM FULL':>18}")
        for name in ("samples", "summaries"):
            print(f"{name + ' rows':34} {figures['before'][0][name]:14d} "
                  f"{figures['after'][0][name]:14d} {full[name]:18d}")
        for name in ("database", "sample table", "summary table", "artifact table"):
            print(f"{name + ' (with indexes)':34} {mib(figures['before'][0][name]):>14} "
                  f"{mib(figures['after'][0][name]):>14} {mib(full[name]):>18}")
        print(f"history endpoint, {args.clients} clients, {args.seconds:g} s, each request a new "
              f"(key, limit) up to {args.nights} kernels:")
        for phase in ("before", "after"):
            times = figures[phase][1]
            print(f"  {phase:7} {len(times):6d} requests  p50 "
                  f"{dashboard_bench.percentile(times, 50):7.1f} ms  p95 "
                  f"{dashboard_bench.percentile(times, 95):7.1f} ms")


if __name__ == "__main__":
    main()
