"""iowatch manage: run a Django management command of the web app.

The runner side never imports Django (DESIGN.md §2): this starts the web app's
own manage in a child process, such as `iowatch manage create_agent lab1`.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

SETTINGS = "iowatch_site.settings"


def django_env() -> dict:
    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", SETTINGS)
    return env


def django_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "django", *args]


def store_bundles(bundle_dirs: list[str]) -> int:
    """Store bundle directories in this machine's store (embedded SQLite or
    DATABASE_URL), migrating it first so a fresh data directory just works."""
    env = django_env()
    rc = subprocess.call(django_command("migrate", "--noinput", "-v", "0"), env=env)
    if rc:
        return rc
    return subprocess.call(django_command("ingest_bundle", *map(str, bundle_dirs)), env=env)


def register(sub):
    p = sub.add_parser("manage", help="run a management command of the web app",
                       description="Run a Django management command of the iowatch web app "
                                   "(migrate, create_agent NAME, createsuperuser, ...).")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the command and its arguments")
    p.set_defaults(func=run)


def run(args) -> int:
    if not args.args:
        args.args = ["help"]
    return subprocess.call(django_command(*args.args), env=django_env())
