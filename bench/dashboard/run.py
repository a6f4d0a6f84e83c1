"""Dashboard load figures: fill a scratch PostgreSQL database with 10,000 runs
and 1,000,000 samples (bulk COPY, not the ingest API), serve it with
`iowatch serve`, and load every page and chart endpoint of the dashboard
(overview, series, compare, history, regressions, runs, run detail, published
results) with concurrent clients on 127.0.0.1. Prints p50 and p95 per page
(goal: p95 under 150 ms). Not a test: it prints figures.

It also stores one run of --big-cells cells (default 100,000, the largest
bundle the ingest API accepts is about that: 17 MB; five repetitions, two
group-level samples and one raw artifact each), loads its run page (first,
middle and last page of cells) and its API reads like any other page, then
reads its first page with the clients while one more asks /api/v1/health
every 0.2 s, and prints the health latency meanwhile (issue 28: 132 s before
the run page was paged; the goal is under 1 s).

    DATABASE_URL=postgres://iowatch:iowatch@127.0.0.1:5432/iowatch \\
        .venv/bin/python bench/dashboard/run.py [--runs 10000] [--big-cells 100000] \\
        [--clients 4] [--workers 2] [--seconds 10]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import threading
import time
import urllib.request
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from live_server import running_server, scratch_database  # noqa: E402

HOSTS = 10
CELLS_PER_RUN = 2
REPS = 5
# Five group-level metrics and five job-level ones: 100 samples per run.
METRICS = ["write.bw_kib_s", "write.iops", "write.clat_p99_us", "cpu.sys_s", "wall_s"]
STUDY = "f2fs-dio-write"
# Ten patch series of three kernels (base, patch 1, patch 2) among the first kernels.
SERIES = 10
# The published numbers of STUDY, as import-published stores them (n = 1 each),
# and the lab's runs labelled like them (kernels 1 and 2 on every host).
PUBLISHED = {"before": 5125.0, "patched": 10424.0}


def fill(url: str, runs: int) -> dict:
    import psycopg

    kernels = runs // HOSTS
    t0 = time.monotonic()
    rng = random.Random(1)
    start = datetime(2024, 1, 1, tzinfo=timezone.utc)
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        # A study is its slug (results 0007): its title and seed are jobs/'s.
        cur.execute("INSERT INTO results_study (id, slug) VALUES (1, %s)", (STUDY,))
        with cur.copy("COPY results_host (id, name, kind, inventory) FROM STDIN") as cp:
            for h in range(HOSTS):
                cp.write_row((h + 1, f"lab-{h}", "bare-metal", "{}"))
        with cur.copy("COPY results_device (id, host_id, name, device_class, path, model, "
                      "inventory) FROM STDIN") as cp:
            for h in range(HOSTS):
                cp.write_row((h + 1, h + 1, "sd0", "sdcard", "/dev/mmcblk0", "SD", "{}"))
        with cur.copy("COPY results_patchseries (id, name, base, patch_count, mail) FROM STDIN") as cp:
            for s in range(SERIES):
                cp.write_row((s + 1, f"f2fs: series {s}", "v6.12", 2, "{}"))
        with cur.copy("COPY results_patch (series_id, index, subject, commit, author, sha256) FROM STDIN") as cp:
            for s in range(SERIES):
                for i in (1, 2):
                    cp.write_row((s + 1, i, f"f2fs: patch {i} of series {s}", f"{s:05x}{i:02x}", "", ""))
        with cur.copy("COPY results_kernel (id, release, git_commit, config_hash, config, "
                      "series_id, patch_index) FROM STDIN") as cp:
            for k in range(kernels):
                in_series = k < SERIES * 3
                cp.write_row((k + 1, "6.12.0-nightly", f"{k + 1:012x}", "c0ffee", "{}",
                              k // 3 + 1 if in_series else None, k % 3 if in_series else None))
            cp.write_row((kernels + 1, "4.4-rc4", None, None, "{}", None, None))
        run_rows, cell_rows, rep_rows = [], [], []
        cell_id = rep_id = 0
        with cur.copy("COPY results_run (id, run_id, host_id, kernel_id, status, published, "
                      "label, matrix, command, cmdline, tools, environment, started_at, "
                      "finished_at, received_at, bundle_sha256, verdict_state, verdict_attempts, "
                      "verdict_error, verdict_done_at, trigger) FROM STDIN") as cp:
            for k in range(kernels):
                for h in range(HOSTS):
                    run_id = k * HOSTS + h + 1
                    at = start + timedelta(hours=k, minutes=h)
                    label = {0: "before", 1: "patched"}.get(k, "nightly")
                    cp.write_row((run_id, str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                                  h + 1, k + 1, "passed", False, label, "nightly",
                                  "iowatch run jobs/smoke.yml", "quiet", "{}",
                                  json.dumps({"scheduler": "mq-deadline"}), at, at, at, "0" * 64,
                                  "done", 1, "", at, json.dumps({"kind": "nightly", "branch": "master"})))
        with cur.copy("COPY results_run_devices (run_id, device_id) FROM STDIN") as cp:
            for r in range(runs):
                cp.write_row((r + 1, r % HOSTS + 1))
        with cur.copy("COPY results_cell (id, run_id, key, study_id, device_id, filesystem, "
                      "mkfs_options, mount_options, params, status, reason) FROM STDIN") as cp:
            for r in range(runs):
                for c in range(CELLS_PER_RUN):
                    cell_id += 1
                    cp.write_row((cell_id, r + 1, f"{STUDY}/sd0/f2fs/c{c}", 1, r % HOSTS + 1,
                                  "f2fs", "", "noatime", "{}", "passed", ""))
        with cur.copy("COPY results_repetition (id, cell_id, index, status, error) FROM STDIN") as cp:
            for c in range(cell_id):
                for rep in range(1, REPS + 1):
                    rep_id += 1
                    cp.write_row((rep_id, c + 1, rep, "passed", ""))
        samples = 0
        with cur.copy("COPY results_sample (cell_id, repetition, metric_id, value, \"group\", job) "
                      "FROM STDIN") as cp:
            for c in range(cell_id):
                kernel = (c // CELLS_PER_RUN) // HOSTS
                level = 1000.0 if kernel < kernels * 3 // 4 else 700.0  # a step late in history
                for rep in range(1, REPS + 1):
                    for i, metric in enumerate(METRICS):
                        value = level * (1 + i) + rng.gauss(0, 10)
                        cp.write_row((c + 1, rep, metric, value, "0", None))
                        cp.write_row((c + 1, rep, metric, value / 10, "0", "job1"))
                        samples += 2
        # The published runs: host "published", one cell and one sample each.
        cur.execute("INSERT INTO results_host (id, name, kind, inventory) VALUES (%s, 'published', "
                    "'published', '{}')", (HOSTS + 1,))
        cur.execute("INSERT INTO results_device (id, host_id, name, device_class, path, model, "
                    "inventory) VALUES (%s, %s, 'published-sdcard', 'sdcard', '', '', '{}')",
                    (HOSTS + 1, HOSTS + 1))
        for i, (label, value) in enumerate(PUBLISHED.items()):
            run_id, cell_id = runs + 1 + i, cell_id + 1
            at = start - timedelta(days=1, minutes=-i)
            cur.execute("INSERT INTO results_run (id, run_id, host_id, kernel_id, status, published, "
                        "label, matrix, command, cmdline, tools, environment, started_at, "
                        "finished_at, received_at, bundle_sha256, verdict_state, verdict_attempts, "
                        "verdict_error, trigger) VALUES (%s, %s, %s, %s, 'passed', true, %s, '', '', '', "
                        "'{}', '{}', %s, %s, %s, %s, 'done', 0, '', '{}')",
                        (run_id, str(uuid.UUID(int=rng.getrandbits(128), version=4)), HOSTS + 1,
                         kernels + 1, label, at, at, at, "1" * 64))
            cur.execute("INSERT INTO results_run_devices (run_id, device_id) VALUES (%s, %s)",
                        (run_id, HOSTS + 1))
            cur.execute("INSERT INTO results_cell (id, run_id, key, study_id, device_id, filesystem, "
                        "mkfs_options, mount_options, params, status, reason) VALUES (%s, %s, %s, 1, "
                        "%s, 'f2fs', '', '', '{}', 'passed', '')",
                        (cell_id, run_id, f"{STUDY}/published-sdcard/f2fs", HOSTS + 1))
            rep_id += 1
            cur.execute("INSERT INTO results_repetition (id, cell_id, index, status, error) VALUES "
                        "(%s, %s, 1, 'passed', '')", (rep_id, cell_id))
            cur.execute("INSERT INTO results_sample (cell_id, repetition, metric_id, value, "
                        "\"group\", job) VALUES (%s, 1, 'write.bw_kib_s', %s, '0', NULL)",
                        (cell_id, value))
            samples += 1
        for table in ("results_study", "results_host", "results_patchseries", "results_patch", "results_device", "results_kernel",
                      "results_run", "results_run_devices", "results_cell", "results_repetition",
                      "results_sample"):
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                        f"(SELECT max(id) FROM {table}))")
        # Stored verdicts for the overview and regression pages: a comparison per
        # consecutive kernel pair on lab-0, one regression every tenth.
        comparisons = kernels - 1
        with cur.copy("COPY regressions_storedcomparison (id, reason, host_id, matrix, base_kernel_id, "
                      "candidate_kernel_id, fdr, computed_at, platform_drifted, platform_words) "
                      "FROM STDIN") as cp:
            for k in range(comparisons):
                # Within a series, a patch is compared with its parent.
                reason = "parent" if k + 1 < SERIES * 3 and (k + 1) % 3 else "previous-run"
                cp.write_row((k + 1, reason, 1, "nightly", k + 1, k + 2, 0.05,
                              start + timedelta(hours=k + 1), False, ""))
        with cur.copy("COPY regressions_storedverdict (comparison_id, cell_key, study_id, host_id, "
                      "device_class, device_id, filesystem, \"group\", metric_id, direction, "
                      "min_effect_pct, base_n, base_mean, base_median, candidate_n, candidate_mean, "
                      "candidate_median, change_pct, outcome, size_only, words, budget_spent) FROM STDIN") as cp:
            for k in range(comparisons):
                for c in range(CELLS_PER_RUN):
                    outcome = "regression" if k % 10 == 0 else "no-change"
                    cp.write_row((k + 1, f"{STUDY}/sd0/f2fs/c{c}", 1, 1, "sdcard", 1, "f2fs", "0",
                                  "write.bw_kib_s", "higher", 5, 5, 1000, 1000, 5,
                                  900 if outcome == "regression" else 1000,
                                  900 if outcome == "regression" else 1000,
                                  -10 if outcome == "regression" else 0, outcome, False, "",
                                  False))
        states = ["new", "acknowledged", "invalid", "fixed", "bisecting"]
        with cur.copy("COPY regressions_regression (comparison_id, state, notes, created, updated, kind) "
                      "FROM STDIN") as cp:
            for k in range(0, comparisons, 10):
                at = start + timedelta(hours=k + 1)
                cp.write_row((k + 1, states[k // 10 % len(states)], "", at, at, "nightly"))
        for table in ("regressions_storedcomparison", "regressions_storedverdict", "regressions_regression"):
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                        f"(SELECT max(id) FROM {table}))")
        conn.commit()
        cur.execute("ANALYZE")
        cur.execute("SELECT run_id FROM results_run WHERE NOT published ORDER BY id DESC LIMIT 20")
        run_ids = [str(r[0]) for r in cur.fetchall()]
        cur.execute("SELECT id FROM regressions_regression ORDER BY id DESC LIMIT 20")
        regression_ids = [r[0] for r in cur.fetchall()]
    return {"runs": runs, "kernels": kernels, "samples": samples,
            "seconds": time.monotonic() - t0, "run_ids": run_ids,
            "regression_ids": regression_ids}


def fill_big_run(url: str, cells: int) -> dict:
    """One run of `cells` cells on a host of its own (lab-big, so the other
    hosts' histories stay as they were), as a bundle of that size stores it:
    REPS repetitions a cell, two group-level samples and one raw artifact (a
    small fio JSON) each. Returns its run id and timings."""
    import psycopg

    t0 = time.monotonic()
    rng = random.Random(3)
    raw = json.dumps({"fio version": "fio-3.33", "jobs": []}).encode()
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        cur.execute("INSERT INTO results_kernel (release, git_commit, config_hash, config) "
                    "VALUES ('6.12.0-big', 'b16b16b16b16', 'c0ffee', '{}') RETURNING id")
        (kernel_id,) = cur.fetchone()
        cur.execute("INSERT INTO results_host (name, kind, inventory) VALUES ('lab-big', "
                    "'bare-metal', '{}') RETURNING id")
        (host_id,) = cur.fetchone()
        cur.execute("INSERT INTO results_device (host_id, name, device_class, path, model, inventory) "
                    "VALUES (%s, 'sd0', 'sdcard', '/dev/mmcblk0', 'SD', '{}') RETURNING id", (host_id,))
        (device_id,) = cur.fetchone()
        run_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        at = datetime(2025, 1, 1, tzinfo=timezone.utc)
        cur.execute("INSERT INTO results_run (run_id, host_id, kernel_id, status, published, "
                    "label, matrix, command, cmdline, tools, environment, started_at, "
                    "finished_at, received_at, bundle_sha256, verdict_state, verdict_attempts, "
                    "verdict_error, verdict_done_at, trigger) VALUES (%s, %s, %s, 'passed', false, "
                    "'big', 'big', 'iowatch run big.yml', 'quiet', '{}', '{}', %s, %s, %s, %s, "
                    "'done', 1, '', %s, '{}') RETURNING id",
                    (run_id, host_id, kernel_id, at, at, at, "2" * 64, at))
        (run_pk,) = cur.fetchone()
        cur.execute("INSERT INTO results_run_devices (run_id, device_id) VALUES (%s, %s)",
                    (run_pk, device_id))
        cur.execute("SELECT coalesce(max(id), 0) FROM results_cell")
        (first,) = cur.fetchone()
        with cur.copy("COPY results_cell (id, run_id, key, study_id, device_id, filesystem, "
                      "mkfs_options, mount_options, params, status, reason) FROM STDIN") as cp:
            for c in range(cells):
                cp.write_row((first + 1 + c, run_pk, f"{STUDY}/sd0/f2fs/big{c:06d}", 1, device_id, "f2fs",
                              "", "noatime", json.dumps({"bs": f"{4 << (c % 8)}k"}), "passed", ""))
        with cur.copy("COPY results_repetition (cell_id, index, status, error) FROM STDIN") as cp:
            for c in range(cells):
                for rep in range(1, REPS + 1):
                    cp.write_row((first + 1 + c, rep, "passed", ""))
        with cur.copy("COPY results_sample (cell_id, repetition, metric_id, value, \"group\", job) "
                      "FROM STDIN") as cp:
            for c in range(cells):
                for rep in range(1, REPS + 1):
                    cp.write_row((first + 1 + c, rep, "write.bw_kib_s", rng.gauss(20000, 500), "0", None))
                    cp.write_row((first + 1 + c, rep, "wall_s", rng.gauss(10, 0.3), "0", None))
        with cur.copy("COPY results_artifact (cell_id, repetition, name, sha256, size, content) "
                      "FROM STDIN") as cp:
            for c in range(cells):
                for rep in range(1, REPS + 1):
                    cp.write_row((first + 1 + c, rep, "fio.json", "3" * 64, len(raw), raw))
        # The counts ingest stores with a run (results 0008).
        cur.execute("UPDATE results_run SET cell_count = %s, sample_count = %s WHERE id = %s",
                    (cells, cells * REPS * 2, run_pk))
        for table in ("results_cell", "results_repetition", "results_sample", "results_artifact"):
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                        f"(SELECT max(id) FROM {table}))")
        conn.commit()
        cur.execute("ANALYZE")
    return {"run_id": run_id, "cells": cells, "seconds": time.monotonic() - t0}


def health_while(base: str, paths: list[str], clients: int, seconds: float) -> tuple[list[float], list[float]]:
    """The latencies (ms) of /api/v1/health asked every 0.2 s by one more
    client while `clients` clients read `paths`; and those of the reads."""
    health: list[float] = []
    stop = threading.Event()

    def probe() -> None:
        while not stop.is_set():
            t = time.perf_counter()
            with urllib.request.urlopen(base + "/api/v1/health", timeout=300) as r:
                r.read()
            health.append((time.perf_counter() - t) * 1000)
            stop.wait(0.2)

    prober = threading.Thread(target=probe)
    prober.start()
    try:
        reads = load(base, paths, clients, seconds)
    finally:
        stop.set()
        prober.join()
    return health, reads


def load(base: str, paths: list[str], clients: int, seconds: float) -> list[float]:
    """Each client requests the paths in turn until the time is up; returns the
    latencies in ms (a failed request stops the bench)."""
    times: list[float] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    failures: list[str] = []

    def client(i: int) -> None:
        n = i
        while time.monotonic() < deadline and not failures:
            # Client i takes paths i, i + clients, ...: no two clients ask the same
            # path at once, so a list of paths asked once each stays uncached.
            path = paths[n % len(paths)]
            n += clients
            t = time.perf_counter()
            try:
                with urllib.request.urlopen(base + path, timeout=30) as r:
                    r.read()
            except Exception as e:  # any failure ends the bench with its reason
                failures.append(f"{path}: {e}")
                return
            with lock:
                times.append((time.perf_counter() - t) * 1000)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise SystemExit(f"bench: request failed: {failures[0]}")
    return times


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--big-cells", type=int, default=100_000,
                        help="cells of the one big run (0: none)")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2,
                        help="gunicorn workers (default 2, as iowatch serve's)")
    parser.add_argument("--seconds", type=float, default=8.0, help="per page")
    parser.add_argument("--only", default="", help="only the pages whose name holds this text")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        raise SystemExit("bench: set DATABASE_URL to a PostgreSQL server (a scratch database is made on it)")
    with scratch_database() as env, running_server(env, workers=args.workers) as (base, _):
        filled = fill(env["DATABASE_URL"], args.runs)
        print(f"filled: {filled['runs']} runs, {filled['kernels']} kernels, {filled['samples']} "
              f"samples in {filled['seconds']:.1f} s (COPY)")
        big = fill_big_run(env["DATABASE_URL"], args.big_cells) if args.big_cells else None
        if big:
            print(f"filled: one run of {big['cells']} cells in {big['seconds']:.1f} s (COPY)")
        k = filled["kernels"]
        rng = random.Random(2)
        pairs = [(rng.randrange(1, k), 0) for _ in range(40)]
        compare_paths = [f"?base=kernel:{a}&candidate=kernel:{a + 1}" for a, _ in pairs]
        history = [urlencode({"study": STUDY, "host": f"lab-{h}", "device": "sd0",
                              "filesystem": "f2fs", "group": "0", "metric": m})
                   for h in range(HOSTS) for m in METRICS[:2]]
        pages = {
            "overview endpoint /dashboard/api/overview": ["/dashboard/api/overview"],
            "overview page /": ["/"],
            "history endpoint /dashboard/api/history": [f"/dashboard/api/history?{q}" for q in history],
            "history page /history": [f"/history?{q}" for q in history],
            "compare endpoint /dashboard/api/compare (40 kernel pairs)":
                [f"/dashboard/api/compare{q}" for q in compare_paths],
            "compare page /compare (same pairs)": [f"/compare{q}" for q in compare_paths],
            # Every request a pair not asked before: the judging itself, never the cache.
            "compare endpoint, uncached (each pair once)":
                [f"/dashboard/api/compare?base=kernel:{a}&candidate=kernel:{a + 1}"
                 for a in rng.sample(range(SERIES * 3 + 1, k), k - SERIES * 3 - 1)],
            "runs page /runs/": ["/runs/", "/runs/?host=lab-3", "/runs/?page=50"],
            "run page /runs/<id>/ (20 runs)": [f"/runs/{r}/" for r in filled["run_ids"]],
            "series pages /series/, /series/<id>/":
                ["/series/"] + [f"/series/{s + 1}/" for s in range(SERIES)],
            "regressions page /regressions/": ["/regressions/", "/regressions/?state=new"],
            "regression page /regressions/<id>/ (20)":
                [f"/regressions/{r}/" for r in filled["regression_ids"]],
            "published results page /studies/": ["/studies/"],
            f"published study page /studies/{STUDY}/": [f"/studies/{STUDY}/"],
            "published endpoint /dashboard/api/published/<slug>":
                [f"/dashboard/api/published/{STUDY}"],
        }
        if big:
            run, last = big["run_id"], -(-big["cells"] // 50)
            pages.update({
                f"big run page /runs/<{big['cells']} cells>/ (pages 1, mid, last)":
                    [f"/runs/{run}/", f"/runs/{run}/?page={last // 2}", f"/runs/{run}/?page={last}"],
                "big run API /api/v1/runs/<id>": [f"/api/v1/runs/{run}"],
                "big run API /api/v1/runs/<id>/cells?limit=1000 (3 offsets)":
                    [f"/api/v1/runs/{run}/cells?limit=1000&offset={o}" for o in (0, 50000, 99000)],
                "big run API /api/v1/runs/<id>/values?limit=100000 (3 offsets)":
                    [f"/api/v1/runs/{run}/values?limit=100000&offset={o}"
                     for o in (0, 500000, 900000)],
            })
        print(f"load: {args.clients} concurrent clients, {args.seconds:g} s per page, "
              f"gunicorn with {args.workers} workers, {os.cpu_count()} CPUs")
        print(f"{'page':62} {'requests':>8} {'p50 ms':>8} {'p95 ms':>8}")
        for name, paths in pages.items():
            if args.only not in name:
                continue
            load(base, paths[:2], 1, 0.5)  # warm the workers' connections
            times = load(base, paths, args.clients, args.seconds)
            print(f"{name:62} {len(times):8d} {percentile(times, 50):8.1f} {percentile(times, 95):8.1f}")
        if big:
            pages_of_big = [f"/runs/{big['run_id']}/"]
            health, reads = health_while(base, pages_of_big, args.clients, args.seconds)
            print(f"health while {args.clients} clients read the big run's page "
                  f"({len(reads)} reads, p95 {percentile(reads, 95):.1f} ms): {len(health)} probes, "
                  f"p50 {percentile(health, 50):.1f} ms, p95 {percentile(health, 95):.1f} ms, "
                  f"max {max(health):.1f} ms (goal: under 1,000 ms)")


if __name__ == "__main__":
    main()
