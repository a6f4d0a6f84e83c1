"""iowatch claims: the performance claims of a patch mail, as a table or JSON.

SOURCE is an mbox (a series' thread, `b4 mbox` output), one mail, a mail's
text as pasted (such as shared/seeds/), a series directory (kernels/series/*),
or a Message-ID whose thread b4 fetches from lore. Exit 0 when claims were found, 1 when none were, 2 when SOURCE
cannot be read.
"""
from __future__ import annotations

import json
import sys

from iowatch import resources
from iowatch.claims.mail import ClaimsError, load, match_study
from iowatch.studies import load_studies
from iowatch.yamlfile import DataFileError

COLUMNS = (("line", 5), ("label", 22), ("metric", 26), ("value", 12), ("unit", 8),
           ("quantity", 20), ("device", 10), ("workload", 40))


def register(sub) -> None:
    p = sub.add_parser("claims", help="extract the performance claims of a patch mail",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("source", metavar="MBOX|FILE|SERIES_DIR|MESSAGE-ID",
                   help="an mbox or mail file, a mail's text, a series directory, or a "
                        "Message-ID (fetched with b4)")
    p.add_argument("--json", action="store_true", help="print the claims as a JSON list")
    p.set_defaults(func=run)


def _cell(claim, name: str) -> str:
    if name == "value":
        text = f"{claim.value:g}" + (f" ±{claim.spread:g}" if claim.spread is not None else "")
    elif name == "device":
        text = claim.device_class or ""
    elif name == "workload":
        text = " ".join((claim.workload or "").split())
    else:
        text = str(getattr(claim, name) if getattr(claim, name) is not None else "")
    return text


def table(claims) -> str:
    rows = [[name for name, _ in COLUMNS]]
    rows += [[_cell(c, name) for name, _ in COLUMNS] for c in claims]
    out = []
    for row in rows:
        cells = [(text if len(text) <= width else text[:width - 1] + "…").ljust(width)
                 for text, (_, width) in zip(row, COLUMNS)]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)


def _studies() -> dict:
    """The studies iowatch runs (--studies DIR or the shipped ones); none when they
    cannot be read: the claims are the answer, the match only a pointer."""
    try:
        return load_studies(resources.studies_dir())
    except (DataFileError, OSError) as e:
        print(f"iowatch claims: studies not read ({e})", file=sys.stderr)
        return {}


def run(args) -> int:
    try:
        claims = load(args.source)
    except (ClaimsError, OSError) as e:
        print(f"iowatch claims: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([c.to_dict() for c in claims], indent=2))
    elif claims:
        print(table(claims))
        match = match_study(claims, _studies())
        print(f"\nstudy: {match.study} ({match.why()})" if match else
              "\nstudy: none of iowatch's studies has this workload")
    if not claims:
        print(f"iowatch claims: no performance claims found in {args.source}", file=sys.stderr)
        return 1
    return 0
