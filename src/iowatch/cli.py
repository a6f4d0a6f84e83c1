"""The iowatch command line: a thin layer over the library.

Each subcommand lives in iowatch.commands.<name> with a register(subparsers)
that adds its parser and sets func; the library does the work.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback

from iowatch import __version__

COMMANDS = ("parse", "run", "import_published", "upload", "serve", "manage", "device",
            "kernel", "check", "bisect", "compare", "export", "import_lkp", "nightly", "report",
            "claims", "reproduce", "import_reproductions", "agent", "lava")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser with every subcommand, or with `only` that one: a command's
    module may import numpy and scipy, and a guest under TCG reading Python
    over 9p pays seconds for each import nobody needs."""
    p = argparse.ArgumentParser(
        prog="iowatch",
        description="Storage performance-regression CI for Linux kernel changes.")
    p.add_argument("--version", action="version", version=f"iowatch {__version__}")
    p.add_argument("--studies", metavar="DIR", default=None,
                   help="read study files from DIR instead of the ones iowatch ships "
                        "(the same as IOWATCH_STUDIES=DIR; give it before the command)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name in ([only] if only else COMMANDS):
        importlib.import_module(f"iowatch.commands.{name}").register(sub)
    return p


def _command(argv: list[str]) -> str | None:
    """The subcommand argv names, when it names one before any option."""
    first = argv[0] if argv else ""
    name = first.replace("-", "_")
    return name if name in COMMANDS else None


def _studies_first(argv: list[str]) -> list[str]:
    """`iowatch --studies DIR COMMAND …`: DIR becomes IOWATCH_STUDIES, which every
    command, the local store's child processes and guests read (iowatch.resources),
    and the rest is the command line as if it had not been given."""
    if argv[:1] == ["--studies"] and len(argv) > 1:
        os.environ["IOWATCH_STUDIES"] = os.path.abspath(argv[1])
        return argv[2:]
    if argv[:1] and argv[0].startswith("--studies="):
        os.environ["IOWATCH_STUDIES"] = os.path.abspath(argv[0].split("=", 1)[1])
        return argv[1:]
    return argv


def main(argv: list[str] | None = None) -> int:
    argv = _studies_first(sys.argv[1:] if argv is None else list(argv))
    parser = build_parser(_command(argv))
    args = parser.parse_args(argv)
    if hasattr(args, "argv"):  # the command's own arguments, for a command that hands itself on
        args.argv = argv[1:]
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        # A crash is not a verdict: Python's own exit status for it, 1, is what
        # the commands that judge exit with for a regression, and a CI gate
        # would read a crash of `check` as one.
        from iowatch import exit_status
        from iowatch.runner import Interrupted
        from iowatch.vlab import GuestStopped

        if isinstance(e, (Interrupted, GuestStopped)):  # SIGTERM, where no command caught it
            print(f"iowatch {argv[0]}: interrupted ({e})", file=sys.stderr)
            return 130
        traceback.print_exc()
        print(f"iowatch {argv[0]}: stopped by an unexpected error (the traceback above); "
              f"exit {int(exit_status.ERROR)}: an error, not a verdict", file=sys.stderr)
        return int(exit_status.ERROR)


if __name__ == "__main__":
    sys.exit(main())
