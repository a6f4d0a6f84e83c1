"""bench/ingest/agents.py: a lab of agents uploading at once, with a long history.

What a lab does to the server: many agents, each a host of its own, upload a
bundle of about 10,000 samples when a nightly run ends, while the store
already holds a history of runs. Every upload's verdict work (A/B against the
host's previous kernel, change points over its history) is done by the verdict
worker from the queue, not in the request.

Steps:
  1. a scratch PostgreSQL database, migrated; a history of --history runs
     (default 10,000: 50 nights on each of 200 hosts, small runs of the same
     study) stored through the ingest code and marked judged;
  2. `iowatch serve` (gunicorn and its verdict workers) on loopback;
  3. --agents threads (default 200), one host each, upload the next night's
     bundle every --period seconds (chosen from --rate, samples/s over the
     lab), starts spread over the first period, for --duration seconds.
     A tenth of the hosts get a kernel 20% slower at their first new night;
  4. then wait until every stored run's verdict is done (or --drain-timeout).

Prints stored, lost, duplicates, upload latency p50/p99/max, samples/s over
the window, the queue's lag from upload to verdict done (p50/p99/max, and how
many within 60 s), regressions opened, and the peak RSS of the server's
processes (gunicorn and verdict workers) and of PostgreSQL's.

Usage: DATABASE_URL=$(scripts/postgres.sh | tail -1) \\
       .venv/bin/python bench/ingest/agents.py [--agents 200] [--duration 300]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import textwrap
import threading
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from live_server import create_agent, free_port, running_server, scratch_database  # noqa: E402

STUDY = "f2fs-dio-write"
GROUP = "seqw"
DECIDING = "write.bw_kib_s"
GROUP_METRICS = {"write.bw_kib_s": "KiB/s", "write.bw_min_kib_s": "KiB/s",
                 "write.bw_max_kib_s": "KiB/s", "write.runtime_min_ms": "ms",
                 "write.runtime_max_ms": "ms"}
JOB_METRICS = {"write.iops": "IO/s", "write.bw_kib_s": "KiB/s", "write.lat_mean_us": "us",
               "write.clat_p99_us": "us", "write.runtime_ms": "ms", "write.io_kib": "KiB",
               "write.clat_p50_us": "us", "write.slat_mean_us": "us", "cpu.usr_pct": "%",
               "cpu.sys_pct": "%"}
FILESYSTEMS = ("f2fs", "ext4", "xfs", "btrfs")
HISTORY_NIGHTS = 50
UPLOAD_TIMEOUT_S = 120.0


def kernel(night: int) -> dict:
    return {"release": f"6.12.0-night{night}", "git_commit": f"{night + 1:012x}"}


def bundle_doc(host: str, night: int, *, devices: int, reps: int, jobs: int, level: float,
               rng: random.Random) -> dict:
    """A nightly run of the f2fs study on `devices` SD cards × 4 filesystems."""
    devs = [{"name": f"sd{d}", "class": "sdcard"} for d in range(devices)]
    cells = []
    for d in devs:
        for fs in FILESYSTEMS:
            repetitions = []
            for r in range(1, reps + 1):
                bw = level * math.exp(rng.gauss(0, 0.04))
                samples = [{"metric": m, "value": round(bw * (0.9 if "min" in m else 1), 1)
                            if unit == "KiB/s" else round(rng.uniform(900, 1100), 1),
                            "unit": unit, "group": GROUP, "job": None}
                           for m, unit in GROUP_METRICS.items()]
                samples += [{"metric": m, "value": round(rng.uniform(10, 5000), 2), "unit": unit,
                             "group": GROUP, "job": f"{GROUP}.{j}"}
                            for j in range(jobs) for m, unit in JOB_METRICS.items()]
                repetitions.append({"index": r, "status": "passed", "samples": samples})
            cells.append({"id": f"{STUDY}/{d['name']}/{fs}", "study": STUDY, "status": "passed",
                          "device": d["name"], "filesystem": fs, "repetitions": repetitions})
    return {"schema_version": 1, "run_id": str(uuid.uuid4()), "status": "passed",
            "matrix": "nightly", "kernel": kernel(night),
            "started_at": f"2026-{1 + night // 28:02d}-{1 + night % 28:02d}T02:00:00Z",
            "host": {"name": host, "kind": "bare-metal"}, "devices": devs, "cells": cells}


# --- 1. the history ----------------------------------------------------------------

def _seed(hosts: list[str], env: dict) -> int:
    """Store the history of these hosts in this process (a Django of its own)."""
    os.environ.update(env)
    os.environ["DJANGO_SETTINGS_MODULE"] = "iowatch_web.site.settings"
    import django

    django.setup()
    from iowatch_web.results.ingest import store_bundle

    rng = random.Random(hash(hosts[0]) & 0xFFFF)
    for host in hosts:
        for night in range(HISTORY_NIGHTS):
            store_bundle(bundle_doc(host, night, devices=1, reps=5, jobs=0, level=5000, rng=rng))
    return len(hosts) * HISTORY_NIGHTS


def seed_history(env: dict, hosts: list[str], procs: int = 2) -> None:
    chunks = [hosts[i::procs] for i in range(procs)]
    with ProcessPoolExecutor(procs) as pool:
        list(pool.map(_seed, chunks, [env] * procs))
    # The history counts as judged: its verdicts are not what this bench measures.
    script = textwrap.dedent("""
        from django_tasks_db.models import DBTaskResult
        from iowatch_web.results.models import Run
        from django.utils import timezone
        Run.objects.update(verdict_state="done", verdict_done_at=timezone.now())
        DBTaskResult.objects.all().delete()
    """)
    subprocess.run([sys.executable, "-m", "django", "shell", "-c", script], check=True,
                   env={**env, "DJANGO_SETTINGS_MODULE": "iowatch_web.site.settings"})


# --- 3. the agents ---------------------------------------------------------------

class Lab:
    def __init__(self, url: str, token: str, args):
        self.url, self.token, self.args = url, token, args
        self.lock = threading.Lock()
        self.sent: dict[str, int] = {}      # run id → samples, for every bundle an agent made
        self.stored: set[str] = set()
        self.latency: list[float] = []
        self.errors: list[str] = []
        self.samples_in_window = 0

    def upload(self, body: bytes) -> tuple[int, str]:
        """POST until stored or refused, honouring Retry-After; (status, error)."""
        deadline = time.monotonic() + self.args.give_up
        wait = 1.0
        while True:
            req = urllib.request.Request(
                f"{self.url}/api/v1/bundles", data=body, method="POST",
                headers={"Content-Type": "application/json",
                         "Authorization": f"Bearer {self.token}"})
            try:
                with urllib.request.urlopen(req, timeout=UPLOAD_TIMEOUT_S) as r:
                    r.read()
                    return r.status, ""
            except urllib.error.HTTPError as e:
                if e.code not in (429, 502, 503, 504):
                    return e.code, e.read().decode(errors="replace")[:200]
                after = e.headers.get("Retry-After")
                delay = float(after) if after and after.isdigit() else wait
            except OSError as e:
                delay, after = wait, None
                err = str(e)
                with self.lock:
                    self.errors.append(err)
            if time.monotonic() + delay > deadline:
                return 0, "gave up"
            time.sleep(delay * random.uniform(0.5, 1.5))
            wait = min(wait * 2, 30)

    def agent(self, i: int, t0: float, end: float, slow: bool) -> None:
        rng = random.Random(i)
        host = f"bench-host-{i:03d}"
        at = t0 + rng.uniform(0, self.args.period)
        night = HISTORY_NIGHTS
        while at < end:
            time.sleep(max(0.0, at - time.monotonic()))
            level = 4000 if slow else 5000
            doc = bundle_doc(host, night, devices=self.args.devices, reps=5, jobs=4, level=level,
                             rng=rng)
            n = sum(len(r["samples"]) for c in doc["cells"] for r in c["repetitions"])
            body = json.dumps(doc).encode()
            with self.lock:
                self.sent[doc["run_id"]] = n
            start = time.monotonic()
            status, error = self.upload(body)
            done = time.monotonic()
            with self.lock:
                if status in (200, 201):
                    self.stored.add(doc["run_id"])
                    self.latency.append(done - start)
                    if done <= end:
                        self.samples_in_window += n
                else:
                    self.errors.append(f"{host} night {night}: {status} {error}")
            night += 1
            at += self.args.period


class RssPeak:
    """Peak summed RSS of a process tree, and of PostgreSQL's processes, every 0.2 s."""

    def __init__(self, pid: int):
        self.root = psutil.Process(pid)
        self.server = self.postgres = 0
        self._stop = threading.Event()
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while not self._stop.wait(0.2):
            try:
                tree = [self.root, *self.root.children(recursive=True)]
                self.server = max(self.server, sum(p.memory_info().rss for p in tree))
                pg = [p for p in psutil.process_iter(["name"]) if p.info["name"] == "postgres"]
                self.postgres = max(self.postgres, sum(p.memory_info().rss for p in pg))
            except psutil.Error:
                pass

    def stop(self):
        self._stop.set()


class HealthPolls:
    """/api/v1/health on the health port, asked every second until stop()."""

    def __init__(self, url: str):
        self.url, self.seconds, self.unanswered = url, [], 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            t = time.perf_counter()
            try:
                with urllib.request.urlopen(self.url, timeout=10) as r:
                    r.read()
                self.seconds.append(time.perf_counter() - t)
            except OSError:
                self.unanswered += 1
            self._stop.wait(max(0.0, 1.0 - (time.perf_counter() - t)))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def queue_lags(env: dict, run_ids: list[str]) -> dict:
    script = textwrap.dedent(f"""
        import json
        from iowatch_web.results.models import Run
        from iowatch_web.regressions.models import Regression
        runs = Run.objects.filter(run_id__in={run_ids!r})
        lags = [(r.verdict_done_at - r.received_at).total_seconds() for r in runs
                if r.verdict_done_at]
        states = {{}}
        for r in runs:
            states[r.verdict_state] = states.get(r.verdict_state, 0) + 1
        print(json.dumps({{"lags": lags, "states": states, "stored": runs.count(),
                          "distinct": len(set(runs.values_list("run_id", flat=True))),
                          "regressions": Regression.objects.count()}}))
    """)
    out = subprocess.run([sys.executable, "-m", "django", "shell", "-c", script], check=True,
                         capture_output=True, text=True,
                         env={**env, "DJANGO_SETTINGS_MODULE": "iowatch_web.site.settings"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agents", type=int, default=200)
    ap.add_argument("--duration", type=float, default=300, help="seconds of uploads")
    ap.add_argument("--rate", type=float, default=24_000,
                    help="samples/s the lab sends in all (sets the period of each agent)")
    ap.add_argument("--devices", type=int, default=12, help="SD cards per bundle (x4 filesystems)")
    ap.add_argument("--history", type=int, default=10_000, help="runs stored before the bench")
    # What a lab of 200 agents runs on 2 cores: gunicorn workers overlap the
    # commits' waits on the disk; two verdict workers keep the queue's lag flat.
    ap.add_argument("--workers", type=int, default=4, help="gunicorn workers")
    ap.add_argument("--verdict-workers", type=int, default=2)
    ap.add_argument("--give-up", type=float, default=600, help="an agent stops retrying after")
    ap.add_argument("--drain-timeout", type=float, default=600)
    args = ap.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        print("bench/ingest: set DATABASE_URL to a PostgreSQL server "
              "(DATABASE_URL=$(scripts/postgres.sh | tail -1))", file=sys.stderr)
        return 2
    per_bundle = args.devices * len(FILESYSTEMS) * 5 * (len(GROUP_METRICS) + 4 * len(JOB_METRICS))
    args.period = args.agents * per_bundle / args.rate

    with scratch_database() as env:
        hosts = [f"bench-host-{i:03d}" for i in range(max(1, args.history // HISTORY_NIGHTS))]
        t = time.monotonic()
        seed_history(env, hosts)
        print(f"history: {len(hosts) * HISTORY_NIGHTS:,} runs on {len(hosts)} hosts stored in "
              f"{time.monotonic() - t:.0f} s", flush=True)
        token = create_agent(env, "bench")
        serve_args = ("--verdict-workers", str(args.verdict_workers))
        health_port = free_port()
        with running_server(env, workers=args.workers, args=serve_args,
                            health_port=health_port) as (url, proc):
            peak = RssPeak(proc.pid)
            health = HealthPolls(f"http://127.0.0.1:{health_port}/api/v1/health")
            lab = Lab(url, token, args)
            print(f"{args.agents} agents, one bundle of {per_bundle:,} samples each every "
                  f"{args.period:.0f} s, for {args.duration:.0f} s; gunicorn {args.workers} "
                  f"workers, {args.verdict_workers} verdict worker(s), {os.cpu_count()} cores",
                  flush=True)
            t0 = time.monotonic()
            end = t0 + args.duration
            slow = set(random.Random(7).sample(range(args.agents), max(1, args.agents // 10)))
            threads = [threading.Thread(target=lab.agent, args=(i, t0, end, i in slow))
                       for i in range(args.agents)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            uploads_done = time.monotonic()
            while True:
                q = queue_lags(env, sorted(lab.stored))
                open_ = q["states"].get("pending", 0) + q["states"].get("running", 0)
                if not open_ or time.monotonic() - uploads_done > args.drain_timeout:
                    break
                time.sleep(5)
            peak.stop()
            health.stop()

    lost = len(set(lab.sent) - lab.stored)
    lags = q["lags"]
    print(f"bundles made {len(lab.sent)}, stored {q['stored']}, lost {lost}, "
          f"duplicates {q['stored'] - q['distinct']}")
    print(f"upload latency s: p50 {pct(lab.latency, .5):.2f}  p99 {pct(lab.latency, .99):.2f}  "
          f"max {max(lab.latency, default=float('nan')):.2f}")
    print(f"samples/s over the {args.duration:.0f} s window: "
          f"{lab.samples_in_window / args.duration:,.0f}")
    print(f"verdicts: {q['states']}; lag upload→done s: p50 {pct(lags, .5):.1f}  "
          f"p99 {pct(lags, .99):.1f}  max {max(lags, default=float('nan')):.1f}; "
          f"within 60 s: {sum(x <= 60 for x in lags)}/{len(lags)}")
    print(f"regressions opened: {q['regressions']} (hosts with a slower kernel: "
          f"{max(1, args.agents // 10)})")
    print(f"peak RSS MiB: server {peak.server / 2**20:.0f} (gunicorn + verdict workers), "
          f"PostgreSQL {peak.postgres / 2**20:.0f}")
    print(f"health (its own port, every second): {len(health.seconds)} answered, "
          f"{health.unanswered} unanswered within 10 s, max "
          f"{max(health.seconds, default=float('nan')) * 1000:.0f} ms, p99 "
          f"{pct(health.seconds, .99) * 1000:.0f} ms")
    if lab.errors:
        print(f"{len(lab.errors)} upload errors, first: {lab.errors[:3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
