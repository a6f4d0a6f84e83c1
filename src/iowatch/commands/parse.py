"""iowatch parse: read one fio or fs_mark output and print its samples as JSON lines.

Exit status: 0 when everything parsed; 1 when the output parsed but fio
reported failed jobs (listed on stderr, never printed as samples); 2 when the
input cannot be read or is not output iowatch understands.
"""

from __future__ import annotations

import json
import sys

from iowatch.parsers import FORMATS, parse_file, parse_text
from iowatch.samples import ParseError


def register(sub) -> None:
    p = sub.add_parser("parse", help="print the samples in a fio or fs_mark output",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("file", metavar="FILE", help="tool output to read, or - for standard input")
    p.add_argument("--format", choices=("auto",) + FORMATS, default="auto",
                   help="the output's format (default: detected from its content)")
    p.set_defaults(func=run)


def run(args) -> int:
    try:
        if args.file == "-":
            # Bytes, decoded as parse_file does: a stray byte must not stop a parse.
            result = parse_text(sys.stdin.buffer.read().decode("utf-8", "replace"), args.format,
                                "<stdin>")
        else:
            result = parse_file(args.file, args.format)
    except ParseError as e:
        print(f"iowatch parse: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"iowatch parse: cannot read {args.file}: {e.strerror or e}", file=sys.stderr)
        return 2

    for sample in result.samples:
        print(json.dumps(sample.to_dict()))
    for f in result.failures:
        message = f" ({f.message})" if f.message else ""
        print(f"iowatch parse: {result.tool} job {f.job!r} in group {f.group} "
              f"failed with error {f.error}{message}", file=sys.stderr)
    return 1 if result.failures else 0
