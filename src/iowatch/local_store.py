"""This machine's store (embedded SQLite or DATABASE_URL), reached through the
web app's own management commands in a child process.

The runner side never imports Django (README, "Layout"): storing bundles, and
comparing runs that only the store holds, start `python -m django COMMAND`
with the web app's settings.
"""
from __future__ import annotations

import os
import subprocess
import sys

SETTINGS = "iowatch_web.site.settings"


def django_env() -> dict:
    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", SETTINGS)
    return env


def django_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "django", *args]


def call(*args: str) -> int:
    """Run one management command; its output goes to ours. Returns its exit code."""
    return subprocess.call(django_command(*args), env=django_env())


def store_bundles(bundle_dirs: list[str]) -> int:
    """Store bundle directories in this machine's store, migrating it first so
    a fresh data directory just works."""
    rc = call("migrate", "--noinput", "-v", "0")
    if rc:
        return rc
    rc = call("ingest_bundle", *map(str, bundle_dirs))
    if rc:
        return rc
    # No worker may be running on this machine: make the new runs' verdicts here.
    return call("verdicts", "--now")
