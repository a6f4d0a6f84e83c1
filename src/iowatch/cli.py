"""The iowatch command line: a thin layer over the library.

Each subcommand lives in iowatch.commands.<name> with a register(subparsers)
that adds its parser and sets func; the library does the work.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from iowatch import __version__

COMMANDS = ("parse", "run", "import_published", "upload", "serve", "manage", "device",
            "kernel", "check", "compare")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="iowatch",
        description="Storage performance-regression CI for Linux kernel changes.")
    p.add_argument("--version", action="version", version=f"iowatch {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"iowatch.commands.{name}").register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
