"""iowatch check: which patch of a series changed what, on which device class."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from iowatch import inventory
from iowatch.check import default_out, report, run_check, store_locally, summary
from iowatch.kernel.series import SeriesError, load_series
from iowatch.kernel.source import SourceError, open_source
from iowatch.yamlfile import DataFileError

REPO = Path(__file__).resolve().parents[3]


def register(sub):
    p = sub.add_parser(
        "check", help="build a series' variants, run them in the virtual lab, name the patch",
        description="Build base, base+p1, ... of a patch series, boot each in the virtual lab "
                    "(QEMU guests with emulated device classes), run the matrix inside, store the "
                    "results, and compare each variant with its parent and with the base. Exit 1 "
                    "when a patch regresses.")
    p.add_argument("--series", required=True, metavar="S",
                   help="a directory with a `series` file, an mbox, or a git range A..B")
    p.add_argument("--base", required=True, metavar="REF", help="the commit the series applies to")
    p.add_argument("--source", default=None, metavar="TREE",
                   help="kernel git tree (default: Debian's linux-source-6.12)")
    p.add_argument("--matrix", default=str(REPO / "jobs" / "check-quick.yml"),
                   help="what to run on each variant (default jobs/check-quick.yml)")
    p.add_argument("--hosts", default="vlab", help="the qemu host of the inventory (default vlab)")
    p.add_argument("--inventory", default=str(REPO / "hardware-inventory.yml"))
    p.add_argument("--profile", choices=("quick", "full"), default=None)
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--out", default=None, help="where bundles and console logs go")
    p.add_argument("--no-store", action="store_true", help="do not store results in the local store")
    p.add_argument("--console", action="store_true", help="echo the guests' consoles")
    p.add_argument("--json", action="store_true", help="also print a JSON summary")
    p.set_defaults(func=run)


def run(args) -> int:
    try:
        inv = inventory.load(args.inventory)
        host = inv.host(args.hosts)
        if host.kind != "qemu":
            print(f"iowatch check: host {host.name} is {host.kind}; the check runs on a qemu host "
                  "(bare-metal hosts are driven by the Jenkins pipeline)", file=sys.stderr)
            return 2
        tree = open_source(args.source)
        series = load_series(args.series, tree)
    except (DataFileError, inventory.InventoryError, SourceError, SeriesError) as e:
        print(f"iowatch check: {e}", file=sys.stderr)
        return 2
    except KeyError as e:
        print(f"iowatch check: {e.args[0]}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else default_out(series)
    result = run_check(tree, args.base, series, host, Path(args.inventory), args.matrix, out,
                       profile=args.profile, reps=args.reps,
                       store=(lambda p: None) if args.no_store else store_locally,
                       say=lambda s: print(s, flush=True), echo_console=args.console)
    print()
    print(report(result))
    (out / "check.json").write_text(json.dumps(summary(result), indent=1) + "\n")
    print(f"check: details in {out / 'check.json'}")
    if args.json:
        print(json.dumps(summary(result), indent=1))
    return 1 if result.regressing_patches else 0
