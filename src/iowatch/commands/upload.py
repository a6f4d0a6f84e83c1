"""iowatch upload: send result bundles to the server, spooling what cannot be sent."""
from __future__ import annotations

import os
import sys
from collections import Counter

from iowatch import paths
from iowatch.upload import MAX_DELAY_S, QUARANTINE_AFTER, STORED_STATES, Outcome, Spool, upload


def register(sub):
    p = sub.add_parser(
        "upload", help="send result bundles to the server (spooled until stored)",
        description="Send result bundles to the iowatch server. Each bundle is spooled first "
                    "and leaves the spool only once the server has stored it; bundles spooled "
                    "by earlier calls are sent first. A bundle the server refuses goes to "
                    "spool/rejected/, one it keeps failing on (5xx) to spool/quarantine/, both "
                    "with the reasons. Exit 0: everything was stored; 1: something was kept, "
                    "rejected or quarantined; 2: a bundle is invalid or its raw files changed "
                    "since the run (refused here, the others still go), or the call is wrong.")
    p.add_argument("bundles", nargs="*", metavar="BUNDLE_DIR",
                   help="bundle directories; none: only send what is spooled")
    p.add_argument("--server", default=os.environ.get("IOWATCH_SERVER"),
                   help="server URL, such as http://127.0.0.1:8000 (env IOWATCH_SERVER)")
    p.add_argument("--token", default=os.environ.get("IOWATCH_TOKEN"),
                   help="this agent's token (env IOWATCH_TOKEN; see `iowatch manage create_agent`)")
    p.add_argument("--spool", default=None, help=f"spool directory (default {paths.spool_dir()})")
    p.add_argument("--retries", type=int, default=5, help="tries after the first (default 5)")
    p.add_argument("--backoff", type=float, default=1.0,
                   help=f"first wait in seconds, doubled each try up to {MAX_DELAY_S:.0f}, "
                        "drawn from the upper half of that (default 1); a Retry-After wins")
    p.add_argument("--quarantine-after", type=int, default=QUARANTINE_AFTER, metavar="N",
                   help="set a bundle aside after the server failed on it N times, counted "
                        f"across calls (default {QUARANTINE_AFTER})")
    p.add_argument("--retry-quarantined", action="store_true",
                   help="first put this server's quarantined bundles back in the spool")
    p.set_defaults(func=run)


def _print(o: Outcome) -> None:
    print(o.line(), file=sys.stdout if o.state in STORED_STATES else sys.stderr)


def _summary(outcomes: list[Outcome], spool: Spool) -> list[str]:
    n = Counter(o.state for o in outcomes)
    parts = [f"{n[s]} {s}" for s in ("sent", "already-stored", "rejected", "quarantined",
                                     "kept", "not-tried", "refused-locally") if n[s]]
    lines = [f"iowatch upload: {len(outcomes)} bundle(s): {', '.join(parts)}" if outcomes
             else "iowatch upload: nothing to send"]
    if n["kept"] + n["not-tried"]:
        lines.append(f"iowatch upload: kept {n['kept'] + n['not-tried']} bundle(s) in {spool.root}; "
                     "the next `iowatch upload` to this server sends them first")
    if n["rejected"]:
        lines.append(f"iowatch upload: rejected bodies and the server's reasons are in {spool.rejected}")
    waiting = len(list(spool.quarantine.glob("*.json"))) if spool.quarantine.is_dir() else 0
    if waiting:
        lines.append(f"iowatch upload: {waiting} bundle(s) wait in {spool.quarantine} (the server "
                     "failed on them); fix the server, then `iowatch upload --retry-quarantined`")
    return lines


def run(args) -> int:
    if not args.server:
        print("iowatch upload: no server: pass --server URL or set IOWATCH_SERVER", file=sys.stderr)
        return 2
    if not args.token:
        print("iowatch upload: no token: pass --token or set IOWATCH_TOKEN "
              "(make one with `iowatch manage create_agent NAME` on the server)", file=sys.stderr)
        return 2
    spool = Spool(args.spool or paths.spool_dir())
    if args.retry_quarantined:
        with spool.locked():
            released = spool.release(args.server)
        print(f"iowatch upload: put {len(released)} quarantined bundle(s) back in the spool")
    outcomes = upload(args.bundles, args.server, args.token, spool, retries=args.retries,
                      backoff=args.backoff, quarantine_after=args.quarantine_after, report=_print)
    ok = all(o.state in STORED_STATES for o in outcomes)
    for line in _summary(outcomes, spool):
        print(line, file=sys.stdout if ok else sys.stderr)
    if any(o.state == "refused-locally" for o in outcomes):
        return 2
    return 0 if ok else 1
