"""iowatch serve: run the web app (dashboard and ingest API).

Migrates the database first (the embedded SQLite one is made on first use),
collects static files, then replaces this process with gunicorn.
"""
from __future__ import annotations

import os
import subprocess
import sys

from iowatch.local_store import django_command, django_env


def register(sub):
    p = sub.add_parser("serve", help="run the web app and the ingest API",
                       description="Run the iowatch web app. Without DATABASE_URL it uses the "
                                   "embedded SQLite store in IOWATCH_DATA_DIR.")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (default 2)")
    p.add_argument("--no-migrate", action="store_true", help="do not migrate the database first")
    p.set_defaults(func=run)


def run(args) -> int:
    env = django_env()
    steps = [] if args.no_migrate else [("migrate", "--noinput", "-v", "0")]
    steps.append(("collectstatic", "--noinput", "-v", "0"))
    for step in steps:
        rc = subprocess.call(django_command(*step), env=env)
        if rc:
            print(f"iowatch serve: `{' '.join(step[:1])}` failed (exit {rc})", file=sys.stderr)
            return rc
    where = f"http://{args.host if args.host not in ('0.0.0.0', '::') else '127.0.0.1'}:{args.port}/"
    print(f"iowatch serve: listening on {args.host}:{args.port}: open {where} "
          f"(API: {where}api/v1/, OpenAPI: {where}api/v1/openapi.json)", flush=True)
    gunicorn = [sys.executable, "-m", "gunicorn", "iowatch_site.wsgi:application",
                "--bind", f"{args.host}:{args.port}", "--workers", str(args.workers),
                "--access-logfile", "-", "--timeout", "300"]
    os.execve(sys.executable, gunicorn, env)
    return 0  # not reached
