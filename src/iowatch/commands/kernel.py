"""iowatch kernel build: the cumulative variants of a patch series, built."""
from __future__ import annotations

import json
import sys

from iowatch.kernel.build import build_all, make_variants
from iowatch.kernel.series import Series, SeriesError, load_series
from iowatch.kernel.source import SourceError, open_source


def register(sub):
    p = sub.add_parser("kernel", help="build kernel variants of a patch series")
    ksub = p.add_subparsers(dest="kernel_command", metavar="ACTION")
    b = ksub.add_parser(
        "build", help="build base, base+p1, base+p1+p2, ... incrementally",
        description="Make the series' cumulative variants as commits on a branch of the "
                    "source tree's work tree and build each bzImage in one build directory "
                    "with ccache. A patch that does not apply is named with its rejected hunks; "
                    "a variant that does not build is recorded build-failed and later ones are "
                    "still tried.")
    b.add_argument("--base", required=True, metavar="REF", help="commit, tag or branch to start from "
                   "(the Debian source's is `debian-base`)")
    b.add_argument("--series", default=None, metavar="S",
                   help="a directory with a `series` file, an mbox (b4 am), or a git range A..B; "
                        "without it only the base is built (the nightly build of a branch head)")
    b.add_argument("--source", default=None, metavar="TREE",
                   help="a kernel git tree (default: Debian's linux-source-6.12, unpacked once)")
    b.add_argument("--jobs", type=int, default=None, help="make -j (default: all cores)")
    b.add_argument("--json", action="store_true", help="print the variants as JSON")
    b.set_defaults(func=run_build)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def print_variant(v) -> None:
    what = "base" if v.index == 0 else f"patch {v.index}: {v.subject}"
    extra = f" in {v.build_s} s{' (incremental)' if v.incremental else ''}" if v.build_s else ""
    print(f"  variant {v.index} [{v.status}] {v.commit[:12] or '-'} {what}{extra}", flush=True)
    if v.error:
        print("    " + v.error.replace("\n", "\n    "), file=sys.stderr)


def run_build(args) -> int:
    try:
        tree = open_source(args.source)
        series = load_series(args.series, tree) if args.series else Series(
            args.base.replace("/", "_"), args.base, ())
        plan = make_variants(tree, args.base, series)
        print(f"kernel build: {len(series.patches)} patches of {series.name} on {plan.base[:12]} "
              f"({tree}); build directory {plan.build}", flush=True)
        build_all(plan, args.jobs, on_variant=(lambda v: None) if args.json else print_variant)
    except (SourceError, SeriesError) as e:
        print(f"iowatch kernel build: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([v.to_dict() for v in plan.variants], indent=1))
    return 0 if all(v.status == "built" for v in plan.variants) else 1
