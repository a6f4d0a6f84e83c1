"""iowatch report: a stored regression as the mailing-list report.

The detail JSON comes from the server (GET /api/v1/regressions/{id}) and is
rendered by iowatch.mailreport.render, the function the server's report
endpoint and the regression page call on the same JSON: one text everywhere.
"""
from __future__ import annotations

import os
import sys


def register(sub):
    p = sub.add_parser(
        "report", help="a stored regression as the e-mail for the mailing list",
        description="Fetch a regression from the server and print it as the mailing-list report: "
                    "--format email gives the headers (From, To, Cc, Subject, and In-Reply-To and "
                    "References when the series came by mail) and the body; --format text the "
                    "subject and the body. Exit 0 when printed, 2 when the server or the "
                    "regression cannot be read.")
    p.add_argument("regression", metavar="REGRESSION_ID", type=int)
    p.add_argument("--format", choices=("email", "text"), default="email")
    p.add_argument("--server", metavar="URL", default=os.environ.get("IOWATCH_SERVER"),
                   help="the iowatch server that holds the regression (env IOWATCH_SERVER)")
    p.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    p.set_defaults(func=run_report)


def run_report(args) -> int:
    from iowatch.ciapi import Client, ServerError
    from iowatch.mailreport import render

    if not args.server:
        print("iowatch report: --server URL (or IOWATCH_SERVER) names the server that holds "
              "the regression", file=sys.stderr)
        return 2
    try:
        detail = Client(args.server).regression(args.regression)
    except ServerError as e:
        print(f"iowatch report: {e}", file=sys.stderr)
        return 2
    text = render(detail, args.format)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0
