"""This machine's store (embedded SQLite or DATABASE_URL), reached through the
web app's own management commands in a child process.

The runner side never imports Django (README, "Layout"): storing bundles, and
reading the sides of a comparison that only the store holds, start `python -m
django COMMAND` with the web app's settings; the store hands back data
(bundle-shaped manifests) and the runner side judges them.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

from iowatch import exit_status

SETTINGS = "iowatch_web.site.settings"

# What `pip install 'iowatch[server]'` adds that the web app cannot start without.
SERVER_MODULES = ("django", "ninja", "gunicorn", "whitenoise", "django_tasks", "iowatch_web")


def server_missing() -> list[str]:
    """The server's modules this Python cannot import: found, not imported
    (the runner side never imports Django)."""
    missing = []
    for name in SERVER_MODULES:
        try:
            found = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            found = None
        if found is None:
            missing.append(name)
    return missing


def explain_missing_server(command: str) -> int | None:
    """exit_status.ERROR after saying what to install, or None when the server is there."""
    missing = server_missing()
    if not missing:
        return None
    print(f"iowatch {command}: the web app is not installed in this Python ({sys.executable}): "
          f"no module {', '.join(missing)}. The server needs `pip install 'iowatch[server]'`; "
          "a lab host that only runs and uploads does not.", file=sys.stderr)
    return exit_status.ERROR


def django_env() -> dict:
    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", SETTINGS)
    return env


def django_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "django", *args]


def call(*args: str) -> int:
    """Run one management command; its output goes to ours. Returns its exit code."""
    if (rc := explain_missing_server(f"manage {args[0]}" if args else "manage")) is not None:
        return rc
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


def store_side(spec: str, role: str):
    """One side read from this machine's store (the web app's store_side
    command): a run id, or a kernel's release, label or commit prefix.
    SideNotFound, with the store's reason, when it matches nothing or the
    store cannot be read."""
    from iowatch.side_data import Side
    from iowatch.judging.sides import SideNotFound
    missing = server_missing()
    if missing:
        raise SideNotFound(f"{role} {spec!r} is not a bundle directory, and reading this "
                           f"machine's store needs the web app (no module {', '.join(missing)}): "
                           "`pip install 'iowatch[server]'`, or give --server URL")
    done = subprocess.run(django_command("store_side", spec, role), env=django_env(),
                          capture_output=True, text=True)
    if done.returncode:
        lines = done.stderr.strip().splitlines()
        raise SideNotFound(lines[-1] if lines else
                           f"reading {role} {spec!r} from this machine's store failed "
                           f"(exit {done.returncode})")
    got = json.loads(done.stdout)
    return Side(got["spec"], got["source"], got["runs"])
