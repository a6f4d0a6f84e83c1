"""iowatch manage: run a Django management command of the web app.

The runner side never imports Django (README, "Layout"): this starts the web app's
own manage in a child process, such as `iowatch manage create_agent lab1`.
"""
from __future__ import annotations

import argparse

from iowatch.local_store import call


def register(sub):
    p = sub.add_parser("manage", help="run a management command of the web app",
                       description="Run a Django management command of the iowatch web app "
                                   "(migrate, create_agent NAME, createsuperuser, ...).")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the command and its arguments")
    p.set_defaults(func=run)


def run(args) -> int:
    return call(*(args.args or ["help"]))
