"""bench/ingest: samples per second stored through the API, and server memory.

Starts a real `iowatch serve` (gunicorn, 2 workers) on a scratch PostgreSQL
database (DATABASE_URL must point at a PostgreSQL server; scripts/postgres.sh
prints one), posts generated wire-form bundles with real metric names, and
prints:
  - samples/s for bundles of 10,000 samples, with 1 and 2 concurrent clients;
  - the server's peak RSS (master + workers) after each batch, to show memory
    stays flat as more bundles arrive, and per bundle size (1k .. 100k samples).

With --scale-out it prints instead samples/s through one `iowatch serve`
process (one gunicorn worker) and through two on the same database, the
--clients clients spread over them, as two web machines before one
PostgreSQL would be (docs/lab.md, "Several web and verdict machines"). On a
machine with fewer cores than processes (the servers, PostgreSQL, the
clients) the two share the cores and cannot double; the figures say so.

Usage: .venv/bin/python bench/ingest/run.py [--bundles 30] [--samples 10000]
       .venv/bin/python bench/ingest/run.py --scale-out [--clients 4] [--bundles 40]
"""
from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import sys
import threading
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from live_server import create_agent, running_server, scratch_database  # noqa: E402

from iowatch.metrics import METRICS  # noqa: E402

METRIC_NAMES = [m for m in METRICS if METRICS[m].nonnegative][:40]


def make_body(n_samples: int, per_cell: int = 200) -> bytes:
    cells = []
    for c in range(max(1, n_samples // per_cell)):
        samples = [{"metric": METRIC_NAMES[i % len(METRIC_NAMES)], "value": float(1000 + i),
                    "unit": METRICS[METRIC_NAMES[i % len(METRIC_NAMES)]].unit,
                    "group": "0", "job": f"job{i % 4}"} for i in range(per_cell)]
        cells.append({"id": f"ext4/loop-ssd/cell{c}", "study": "bench-ingest", "status": "passed",
                      "device": "loop-ssd", "filesystem": "ext4",
                      "repetitions": [{"index": 1, "status": "passed", "samples": samples,
                                       "artifacts": [{"name": "fio.json",
                                                      "content": '{"fio version": "fio-3.33"}'}]}]})
    doc = {"schema_version": 1, "run_id": str(uuid.uuid4()), "status": "passed",
           "kernel": {"release": "6.12.0-bench"}, "host": {"name": "bench", "kind": "local"},
           "devices": [{"name": "loop-ssd", "class": "ssd"}], "cells": cells}
    return json.dumps(doc).encode()


def post(url: str, token: str, body: bytes) -> int:
    req = urllib.request.Request(f"{url}/api/v1/bundles", data=body, method="POST",
                                 headers={"Content-Type": "application/json",
                                          "Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=300) as r:
        reply = json.loads(r.read())
        assert r.status == 201, (r.status, reply)
        return reply["samples"]


class RssWatch:
    """Samples the server tree's RSS every 20 ms; peak() since the last reset()."""

    def __init__(self, pid: int):
        self.proc = psutil.Process(pid)
        self._peak = 0
        self._stop = threading.Event()
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while not self._stop.is_set():
            try:
                procs = [self.proc] + self.proc.children(recursive=True)
                rss = sum(p.memory_info().rss for p in procs)
                self._peak = max(self._peak, rss)
            except psutil.Error:
                pass
            time.sleep(0.02)

    def reset(self):
        self._peak = 0

    def peak_mib(self) -> float:
        return self._peak / 2**20

    def stop(self):
        self._stop.set()


def through(urls: list[str], token: str, bodies: list[bytes], clients: int) -> tuple[float, list]:
    """Post the bodies with `clients` threads, the i-th body to urls[i % len(urls)];
    returns (samples/s, the latencies in s, sorted)."""
    latencies = []
    targets = itertools.cycle(urls)
    jobs = [(next(targets), body) for body in bodies]

    def timed(job):
        t = time.perf_counter()
        n = post(job[0], token, job[1])
        latencies.append(time.perf_counter() - t)
        return n

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        total = sum(pool.map(timed, jobs))
    return total / (time.perf_counter() - t0), sorted(latencies)


def scale_out(args) -> None:
    """One server process against two on one database, the same clients."""
    print(f"ingest scale-out: {args.clients} clients, {args.bundles} bundles of "
          f"{args.samples:,} samples, `iowatch serve --workers 1 --no-worker` processes on one "
          f"PostgreSQL database, {os.cpu_count()} cores")
    print(f"{'servers':>8} {'samples/s':>11} {'bundle p50 ms':>14} {'p99 ms':>8}")
    figures = {}
    for servers in (1, 2):
        with scratch_database() as env, contextlib.ExitStack() as stack:
            urls = [stack.enter_context(running_server(
                env, workers=1, args=("--no-worker",) + (("--no-migrate",) if i else ())))[0]
                for i in range(servers)]
            token = create_agent(env, "bench")
            for url in urls:  # warm up each process's imports and metric cache
                post(url, token, make_body(1000))
            bodies = [make_body(args.samples) for _ in range(args.bundles)]
            rate, latencies = through(urls, token, bodies, args.clients)
            figures[servers] = rate
            p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
            print(f"{servers:>8} {rate:>11,.0f} {latencies[len(latencies) // 2] * 1000:>14.0f} "
                  f"{p99 * 1000:>8.0f}")
    print(f"two processes take {figures[2] / figures[1]:.2f}x one's load")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bundles", type=int, default=30, help="bundles per throughput run")
    ap.add_argument("--samples", type=int, default=10_000, help="samples per bundle")
    ap.add_argument("--scale-out", action="store_true",
                    help="one server process against two on one database")
    ap.add_argument("--clients", type=int, default=4, help="clients of the scale-out run")
    args = ap.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        print("bench/ingest: set DATABASE_URL to a PostgreSQL server "
              "(DATABASE_URL=$(scripts/postgres.sh | tail -1))", file=sys.stderr)
        return 2
    if args.scale_out:
        scale_out(args)
        return 0

    with scratch_database() as env, running_server(env, workers=2) as (url, proc):
        token = create_agent(env, "bench")
        watch = RssWatch(proc.pid)
        post(url, token, make_body(1000))  # warm up both workers' imports and metric cache
        post(url, token, make_body(1000))

        print(f"ingest into PostgreSQL via POST /api/v1/bundles, gunicorn 2 workers, "
              f"{os.cpu_count()} cores")
        print(f"{'clients':>8} {'bundles':>8} {'samples/bundle':>15} {'samples/s':>11} "
              f"{'bundle p50 ms':>14} {'peak RSS MiB':>13}")
        for clients in (1, 2):
            bodies = [make_body(args.samples) for _ in range(args.bundles)]
            watch.reset()
            latencies = []

            def timed(body):
                t = time.perf_counter()
                n = post(url, token, body)
                latencies.append(time.perf_counter() - t)
                return n

            t0 = time.perf_counter()
            with ThreadPoolExecutor(clients) as pool:
                total = sum(pool.map(timed, bodies))
            wall = time.perf_counter() - t0
            latencies.sort()
            print(f"{clients:>8} {args.bundles:>8} {args.samples:>15,} {total / wall:>11,.0f} "
                  f"{latencies[len(latencies) // 2] * 1000:>14.0f} {watch.peak_mib():>13.1f}")

        print("\nserver memory as bundles arrive (10,000 samples each, 1 client)")
        print(f"{'bundles so far':>15} {'peak RSS MiB':>13}")
        sent = 0
        for batch in (10, 20, 40):
            watch.reset()
            for _ in range(batch):
                post(url, token, make_body(args.samples))
            sent += batch
            print(f"{sent:>15} {watch.peak_mib():>13.1f}")

        print("\nserver memory by bundle size (1 client)")
        print(f"{'samples/bundle':>15} {'body MiB':>9} {'peak RSS MiB':>13} {'samples/s':>11}")
        for size in (1_000, 10_000, 50_000, 100_000):
            body = make_body(size)
            watch.reset()
            t = time.perf_counter()
            n = post(url, token, body)
            rate = n / (time.perf_counter() - t)
            print(f"{size:>15,} {len(body) / 2**20:>9.1f} {watch.peak_mib():>13.1f} {rate:>11,.0f}")
        watch.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
