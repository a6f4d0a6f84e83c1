"""iowatch bisect: the commit between a good and a bad kernel that made a cell slower."""
from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

from iowatch import inventory, paths, progress
from iowatch.commands.guest_options import PLAIN_HOST, add_boot_option, add_guest_run_options, qemu_host
from iowatch.kernel.series import SeriesError
from iowatch.kernel.series_input import load_series
from iowatch.kernel.source import SourceError, open_source
from iowatch.yamlfile import DataFileError



def register(sub):
    p = sub.add_parser(
        "bisect", help="find the commit that made a cell slower, in the virtual lab",
        description="Measure the good and the bad kernel with the matrix, take the regression "
                    "between them (the largest, or the one --metric/--cell name), then build, boot "
                    "and measure the commit in the middle until one commit is left. Exit 0 when a "
                    "first bad commit is named, 1 when the ends do not differ or cannot be measured, "
                    "2 on bad arguments, 3 when the ends' comparison is undecided at the cap (a "
                    "deciding cell still unsure or suspected: measure them again, or widen the range).")
    ends = p.add_argument_group("the commits (a git range of the source tree, or a series on a base)")
    ends.add_argument("--good", metavar="REF", help="the last kernel known good")
    ends.add_argument("--bad", metavar="REF", help="the first kernel known bad (bisects GOOD..BAD)")
    ends.add_argument("--base", metavar="REF", help="with --series: the good kernel")
    ends.add_argument("--series", metavar="S", help="with --base: a series directory, mbox, "
                      "Message-ID (fetched with b4) or A..B; "
                      "the bad kernel is the base with every patch")
    add_guest_run_options(p, "commit")
    add_boot_option(p)
    p.add_argument("--metric", default=None,
                   help="follow this metric, such as write.bw_kib_s (empty: the largest regression)")
    p.add_argument("--cell", default=None, metavar="TEXT",
                   help="follow the cell whose study/device/filesystem/group contains TEXT")
    lab = p.add_argument_group(
        "the next step, for a pipeline that boots the commits on lab hosts itself")
    lab.add_argument("--variants", metavar="FILE",
                     help="the variants as `iowatch kernel build --json` printed them; with --bundles, "
                          "build and boot nothing: print as JSON what to measure next (state "
                          "measure, with index, artifacts and out) or the result (state done)")
    lab.add_argument("--bundles", metavar="DIR",
                     help="the measurements so far: DIR/variant-NN holds a bundle, or "
                          "DIR/variant-NN.failed says why the variant did not boot")
    lab.add_argument("--history", action="append", default=None, metavar="DIR",
                     help="with --bundles: bundles of kernels booted more than once on the same "
                          "host (a bundle, or a directory of them; repeatable), the host's record "
                          "of its noise between boots: a step measured in one boot is judged with "
                          "it; without it a change there is at most \"suspected: one boot a side\"")
    queue = p.add_argument_group(
        "a regression of the server (issue 14's bisect queue): good, bad, the cell and the matrix "
        "come from it; each step's runs are uploaded and each step posted as it is decided")
    queue.add_argument("--regression", type=int, metavar="ID",
                       help="bisect this regression (its open bisect job gets the steps and the result)")
    queue.add_argument("--next", "--claim", dest="next", action="store_true",
                       help="claim the next queued bisect job and work it (a bisect agent)")
    queue.add_argument("--server", default=os.environ.get("IOWATCH_SERVER"),
                       help="the iowatch server (default $IOWATCH_SERVER)")
    queue.add_argument("--token", default=os.environ.get("IOWATCH_TOKEN"),
                       help="agent token (default $IOWATCH_TOKEN)")
    queue.add_argument("--host", default=socket.gethostname(),
                       help="with --next: this agent's host name, sent with the claim")
    queue.add_argument("--target", dest="hosts", metavar="HOST",
                       help="the qemu host of the inventory to measure on (same as --hosts)")
    # None: check-quick, or with --regression/--next the regression's own matrix.
    p.set_defaults(func=run, matrix=None)


def _range(args) -> tuple[str, str]:
    """(good ref, series spec) from either form; ValueError says what is missing."""
    if args.good or args.bad:
        if not (args.good and args.bad) or args.base or args.series:
            raise ValueError("give --good and --bad together (a git range), or --base with --series")
        return args.good, f"{args.good}..{args.bad}"
    if args.base and args.series:
        return args.base, args.series
    raise ValueError("say what to bisect: --good REF --bad REF, or --base REF --series S")


def run_next(args) -> int:
    from iowatch.bisect.search import next_step
    from iowatch.kernel.build import Plan, Variant
    from iowatch.kernel.series import Series
    from iowatch.judging.sides import SideNotFound
    from iowatch.side_sources import bundles_history
    if not (args.variants and args.bundles):
        print("iowatch bisect: give --variants and --bundles together", file=sys.stderr)
        return 2
    try:
        rows = json.loads(Path(args.variants).read_text())
        variants = [Variant(**{k: row[k] for k in Variant.__dataclass_fields__ if k in row}) for row in rows]
    except (OSError, ValueError, TypeError, KeyError) as e:
        print(f"iowatch bisect: {args.variants}: not the JSON of `iowatch kernel build --json` ({e}); "
              "build the range with it and pass its output", file=sys.stderr)
        return 2
    if not variants or variants[0].index != 0:
        print(f"iowatch bisect: {args.variants}: the first variant must be the base (index 0)",
              file=sys.stderr)
        return 2
    try:
        history = bundles_history(args.history) if args.history else None
    except SideNotFound as e:
        print(f"iowatch bisect: {e}", file=sys.stderr)
        return 2
    here = Path(".")
    plan = Plan(here, here, here, Series(Path(args.variants).stem, args.variants, ()),
                variants[0].commit, variants)
    print(json.dumps(next_step(plan, Path(args.bundles), metric=args.metric, cell=args.cell,
                                history=history), indent=1))
    return 0


def run(args) -> int:
    from iowatch.bisect.search import report, run_bisect, summary
    args.metric, args.cell = args.metric or None, args.cell or None  # a pipeline passes "" for none
    if args.regression is not None or args.next:
        from iowatch.commands.bisect_queue import run_job
        return run_job(args)
    args.matrix = args.matrix or "check-quick"
    if args.variants or args.bundles:
        return run_next(args)
    from iowatch.check import store_locally
    try:
        good, spec = _range(args)
        host = qemu_host(args.inventory, args.hosts or PLAIN_HOST, "the bisect runs on a qemu host "
                         "(bare-metal hosts are driven by the Jenkins bisect pipeline)")
        tree = open_source(args.source)
        series = load_series(spec, tree)
    except (ValueError, DataFileError, SourceError, SeriesError) as e:
        print(f"iowatch bisect: {e}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else \
        paths.data_dir() / "bisects" / f"{series.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    with progress.from_args(args, "bisect") as display:
        result = run_bisect(tree, good, series, host, Path(args.inventory or inventory.default_path()), args.matrix, out,
                            profile=args.profile, reps=args.reps, per_boot=args.reps_per_boot,
                            metric=args.metric, cell=args.cell,
                            store=(lambda p: None) if args.no_store else store_locally,
                            say=display.say, echo_console=args.console)
    print()
    print(report(result))
    out.mkdir(parents=True, exist_ok=True)
    (out / "bisect.json").write_text(json.dumps(summary(result), indent=1) + "\n")
    print(f"bisect: details in {out / 'bisect.json'}")
    if args.json:
        print(json.dumps(summary(result), indent=1))
    return exit_code(result)


def exit_code(result) -> int:
    """0: one first bad commit named; 3 (undecided): the ends undecided, or a
    range of candidates rather than one commit; 1: the ends do not differ or
    cannot be measured."""
    from iowatch import exit_status
    if result.first_bad is not None and result.target is not None:
        found = result.culprit
        return 0 if found is None or found.first_bad is not None else exit_status.UNDECIDED
    return exit_status.UNDECIDED if result.ends_state in exit_status.UNDECIDED_STATES else 1
