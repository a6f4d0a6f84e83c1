"""bench/ingest/upload_profile.py: where an upload's time goes (issue 42 item 3).

Posts --bundles bundles of about 10,000 samples each (bench/ingest/agents.py's
nightly bundle: 12 SD cards x 4 filesystems x 5 repetitions, job- and
group-level samples and one fio JSON a repetition) through the ingest API's
own view with Django's test client, in this process, on a scratch database
(PostgreSQL when DATABASE_URL names one, else SQLite), under cProfile.
Prints the time of each step of the path (parse, validate, hash, insert, the
verdict's queue entry) as a share of the whole, then cProfile's top functions.
Not a test: it prints figures.

    DATABASE_URL=postgres://iowatch:iowatch@127.0.0.1:5432/iowatch \\
        nice -n 15 .venv/bin/python bench/ingest/upload_profile.py [--bundles 20]
"""
from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import json
import os
import pstats
import random
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "bench" / "ingest")]
from live_server import scratch_database  # noqa: E402

# The steps of the path, by the function that does each (cumulative time).
STEPS = {
    "read the JSON (bundle.loads)": "bundle.py:.*\\(loads\\)",
    "validate (bundle.validate: schema and checks)": "bundle.py:.*\\(validate\\)",
    "hash the bundle (canonical_sha256)": "ingest.py:.*\\(canonical_sha256\\)",
    "artifacts' bytes and sha256 (_artifact_contents)": "ingest.py:.*\\(_artifact_contents\\)",
    "insert, in the transaction (_insert)": "ingest.py:.*\\(_insert\\)",
    "  of which the samples (_insert_samples)": "ingest.py:.*\\(_insert_samples\\)",
    "  of which the rows by COPY (_copy_rows: samples, repetitions, artifacts)":
        "ingest.py:.*\\(_copy_rows\\)",
    "  of which the devices (_devices)": "ingest.py:.*\\(_devices\\)",
    "queue the verdict (work.enqueue)": "work.py:.*\\(enqueue\\)",
    "commit (psycopg's, PostgreSQL only)": "psycopg/connection.py:.*\\(commit\\)",
    "the whole request (post_bundle)": "api.py:.*\\(post_bundle\\)",
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundles", type=int, default=20)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    with scratch_database() as env:
        os.environ.update(env)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "iowatch_web.site.settings")
        import django
        django.setup()
        from django.core.management import call_command
        from django.test import Client
        from agents import bundle_doc

        call_command("migrate", "--noinput", "-v", "0")
        out = io.StringIO()
        call_command("create_agent", "profiler", "--host", *(f"lab-{i}" for i in range(args.bundles)),
                     stdout=out)
        token = out.getvalue().split()[-1]
        rng = random.Random(1)
        bodies = [json.dumps(with_artifacts(bundle_doc(f"lab-{i}", 1, devices=12, reps=5, jobs=4,
                                                       level=20000.0, rng=rng))).encode()
                  for i in range(args.bundles)]
        client = Client(HTTP_HOST="127.0.0.1")
        profile = cProfile.Profile()
        samples = 0
        profile.enable()
        for body in bodies:
            r = client.post("/api/v1/bundles", body, content_type="application/json",
                            HTTP_AUTHORIZATION=f"Bearer {token}")
            assert r.status_code == 201, r.content[:300]
            samples += r.json()["samples"]
        profile.disable()
        report(profile, args, samples, env.get("DATABASE_URL") and "PostgreSQL" or "SQLite")
    return 0


# A raw output a repetition, about the size of a small fio JSON (4 jobs).
FIO_TEXT = json.dumps({"fio version": "fio-3.33", "jobs": [
    {"jobname": f"seqw.{j}", "write": {"bw": 5000 + j, "iops": 2.5, "clat_ns": {"mean": 4e8}},
     "pad": "x" * 400} for j in range(4)]})


def with_artifacts(doc: dict) -> dict:
    digest = hashlib.sha256(FIO_TEXT.encode()).hexdigest()
    for cell in doc["cells"]:
        for rep in cell["repetitions"]:
            rep["artifacts"] = [{"name": "fio.json", "content": FIO_TEXT, "sha256": digest}]
    return doc


def report(profile: cProfile.Profile, args, samples: int, store: str) -> None:
    stats = pstats.Stats(profile)
    total = stats.total_tt
    print(f"{args.bundles} bundles, {samples} samples, {samples // args.bundles} a bundle, on "
          f"{store}: {total:.2f} s profiled ({samples / total:,.0f} samples/s under the profiler)")
    for words, pattern in STEPS.items():
        cum = sum(v[3] for k, v in stats.stats.items()
                  if re.search(pattern, f"{k[0]}:{k[1]}({k[2]})"))
        print(f"  {words:<72} {cum:7.2f} s  {100 * cum / total:5.1f}%")
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(args.top)
    print("\nby own time:\n" + "\n".join(text.getvalue().splitlines()[6:]))
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(
        "iowatch|transaction.py|psycopg/connection.py", args.top)
    print("\nthe project's functions (and the commit) by cumulative time:\n"
          + "\n".join(text.getvalue().splitlines()[6:]))


if __name__ == "__main__":
    sys.exit(main())
