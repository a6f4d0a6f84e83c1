"""iowatch report: a stored regression as the mailing-list report.

The detail JSON comes from the server (GET /api/v1/regressions/{id}) and is
rendered by iowatch.mailreport.render, the function the server's report
endpoint and the regression page call on the same JSON: one text everywhere
(but its Date:, the time it is written).
"""
from __future__ import annotations

import os
import sys

PENDING = 3  # awaiting a second host's confirmation: not a report to send yet


def register(sub):
    p = sub.add_parser(
        "report", help="a stored regression as the e-mail for the mailing list",
        description="Fetch a regression from the server and print it as the mailing-list report: "
                    "--format email gives the headers (From, To, Cc, Subject, Date, Message-ID, "
                    "and In-Reply-To and References when the series came by mail) and the body; "
                    "--format text the subject and the body. Exit 0 when printed; 2 when the "
                    "server or the regression cannot be read; 3 (nothing printed) while a second "
                    "host's confirmation is pending, unless --unconfirmed.")
    p.add_argument("regression", metavar="REGRESSION_ID", type=int)
    p.add_argument("--format", choices=("email", "text"), default="email")
    p.add_argument("--server", metavar="URL", default=os.environ.get("IOWATCH_SERVER"),
                   help="the iowatch server that holds the regression (env IOWATCH_SERVER)")
    p.add_argument("--to", action="append", default=[], metavar="ADDRESS",
                   help="add a To: recipient (repeatable); the patch's author and the series' "
                        "lists are already there when the series came by mail")
    p.add_argument("--cc", action="append", default=[], metavar="ADDRESS",
                   help="add a Cc: recipient (repeatable)")
    p.add_argument("--unconfirmed", action="store_true",
                   help="write the report although a second host's confirmation is pending")
    p.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    p.set_defaults(func=run_report)


def run_report(args) -> int:
    from iowatch.ciapi import Client, ServerError
    from iowatch.mailreport import render, with_recipients

    if not args.server:
        print("iowatch report: --server URL (or IOWATCH_SERVER) names the server that holds "
              "the regression", file=sys.stderr)
        return 2
    try:
        detail = Client(args.server).regression(args.regression)
    except ServerError as e:
        print(f"iowatch report: {e}", file=sys.stderr)
        return 2
    confirmation = detail.get("confirmation") or {}
    if confirmation.get("state") == "pending" and not args.unconfirmed:
        print(f"iowatch report: regression #{args.regression} is {confirmation.get('words')}: "
              "the mail goes out after it (--unconfirmed writes it now)", file=sys.stderr)
        return PENDING
    page = f"{args.server.rstrip('/')}/regressions/{args.regression}/"
    text = render(with_recipients(detail, args.to, args.cc, page), args.format)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0
