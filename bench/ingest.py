"""Ingest rate of the bundle API: samples stored per second, through the API.

    DATABASE_URL=postgres://iowatch:iowatch@127.0.0.1:5432/iowatch \
        .venv/bin/python bench/ingest.py [--bundles 5] [--cells 10] [--samples 1000]

Posts bundles of cells × samples through Django's test client (the whole view:
size check, JSON parse, validation, store) into a scratch database
(iowatch_bench, dropped afterwards; SQLite without DATABASE_URL) and prints
the time per bundle and the rate. Then times each stage of one bundle alone.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "webapp"), str(ROOT / "tests" / "webapp")]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "iowatch_site.settings")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bundles", type=int, default=5)
    p.add_argument("--cells", type=int, default=10)
    p.add_argument("--samples", type=int, default=1000, help="samples per cell")
    args = p.parse_args()

    import django
    from django.conf import settings

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    connection.settings_dict["TEST"]["NAME"] = (
        "iowatch_bench" if connection.vendor == "postgresql"
        else str(settings.DATA_DIR / "bench-iowatch.sqlite3"))
    from django.test import Client
    from django.test.utils import setup_test_environment

    from bundles import make_bundle, wire
    from iowatch import bundle
    from results import ingest

    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        from io import StringIO

        out = StringIO()
        call_command("create_agent", "bench", stdout=out)
        auth = {"HTTP_AUTHORIZATION": f"Bearer {out.getvalue().strip()}"}
        client = Client()
        n = args.cells * args.samples
        times = []
        for i in range(args.bundles):
            body = wire(make_bundle(cells=args.cells, samples=args.samples, seed=i))
            t = time.perf_counter()
            r = client.post("/api/v1/bundles", body, content_type="application/json", **auth)
            times.append(time.perf_counter() - t)
            assert r.status_code == 201, r.content
        med = statistics.median(times)
        print(f"{connection.vendor}: {args.bundles} bundles of {n} samples "
              f"({len(body) / 1e6:.1f} MB); per bundle median {med * 1000:.0f} ms "
              f"(min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f}): "
              f"{n / med:,.0f} samples/s")

        doc_bytes = wire(make_bundle(cells=args.cells, samples=args.samples, seed=999))
        stages = {}
        t = time.perf_counter(); doc = bundle.loads(doc_bytes); stages["loads"] = time.perf_counter() - t
        t = time.perf_counter(); bundle.validate(doc); stages["validate"] = time.perf_counter() - t
        t = time.perf_counter(); ingest.canonical_sha256(doc); stages["sha256"] = time.perf_counter() - t
        t = time.perf_counter(); ingest.store_bundle(doc); stages["store (incl. sha256)"] = time.perf_counter() - t
        print("stages: " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in stages.items()))
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
