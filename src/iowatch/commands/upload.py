"""iowatch upload: send result bundles to the server, spooling what cannot be sent."""
from __future__ import annotations

import os
import sys

from iowatch import bundle, paths
from iowatch.upload import Outcome, Spool, upload


def register(sub):
    p = sub.add_parser(
        "upload", help="send result bundles to the server (spooled until stored)",
        description="Send result bundles to the iowatch server. Each bundle is spooled first "
                    "and leaves the spool only once the server has stored it; bundles spooled "
                    "by earlier calls are sent first. Exit 0: all sent; 1: some kept in the "
                    "spool or rejected; 2: a bundle is invalid or the call is wrong.")
    p.add_argument("bundles", nargs="*", metavar="BUNDLE_DIR",
                   help="bundle directories; none: only send what is spooled")
    p.add_argument("--server", default=os.environ.get("IOWATCH_SERVER"),
                   help="server URL, such as http://127.0.0.1:8000 (env IOWATCH_SERVER)")
    p.add_argument("--token", default=os.environ.get("IOWATCH_TOKEN"),
                   help="this agent's token (env IOWATCH_TOKEN; see `iowatch manage create_agent`)")
    p.add_argument("--spool", default=None, help=f"spool directory (default {paths.spool_dir()})")
    p.add_argument("--retries", type=int, default=5, help="tries after the first (default 5)")
    p.add_argument("--backoff", type=float, default=1.0,
                   help="first wait in seconds, doubled each try up to 30 (default 1)")
    p.set_defaults(func=run)


def _print(o: Outcome) -> None:
    stream = sys.stdout if o.state in ("sent", "already-stored") else sys.stderr
    print(f"{o.state}: run {o.run_id}: {o.detail}", file=stream)


def run(args) -> int:
    if not args.server:
        print("iowatch upload: no server: pass --server URL or set IOWATCH_SERVER", file=sys.stderr)
        return 2
    if not args.token:
        print("iowatch upload: no token: pass --token or set IOWATCH_TOKEN "
              "(make one with `iowatch manage create_agent NAME` on the server)", file=sys.stderr)
        return 2
    spool = Spool(args.spool or paths.spool_dir())
    try:
        outcomes = upload(args.bundles, args.server, args.token, spool,
                          retries=args.retries, backoff=args.backoff, report=_print)
    except bundle.BundleError as e:
        print(f"iowatch upload: {e}", file=sys.stderr)
        return 2
    kept = [o for o in outcomes if o.state == "kept"]
    if kept:
        print(f"iowatch upload: kept {len(kept)} bundle(s) in {spool.root}; "
              "the next `iowatch upload` to this server sends them first", file=sys.stderr)
    if not outcomes:
        print("iowatch upload: nothing to send")
    return 0 if all(o.state in ("sent", "already-stored") for o in outcomes) else 1
