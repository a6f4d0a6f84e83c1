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
            "kernel", "check", "bisect", "compare")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser with every subcommand, or with `only` that one: a command's
    module may import numpy and scipy, and a guest under TCG reading Python
    over 9p pays seconds for each import nobody needs."""
    p = argparse.ArgumentParser(
        prog="iowatch",
        description="Storage performance-regression CI for Linux kernel changes.")
    p.add_argument("--version", action="version", version=f"iowatch {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name in ([only] if only else COMMANDS):
        importlib.import_module(f"iowatch.commands.{name}").register(sub)
    return p


def _command(argv: list[str]) -> str | None:
    """The subcommand argv names, when it names one before any option."""
    first = argv[0] if argv else ""
    name = first.replace("-", "_")
    return name if name in COMMANDS else None


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(_command(sys.argv[1:] if argv is None else argv))
    args = parser.parse_args(argv)
    if hasattr(args, "argv"):  # the command's own arguments, for a command that hands itself on
        args.argv = (sys.argv[1:] if argv is None else list(argv))[1:]
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
