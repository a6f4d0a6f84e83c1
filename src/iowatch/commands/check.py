"""iowatch check: which patch of a series changed what, on which device class."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from iowatch import exit_status, inventory, progress, resources, vlab
from iowatch.claims import series as series_claims
from iowatch.commands.guest_options import HostError, add_boot_option, add_guest_run_options, qemu_host
from iowatch.check import (compare_with_base, default_out, exit_code, report, run_check,
                           store_locally, summary, write_summary)
from iowatch.kernel.series import SeriesError
from iowatch.kernel.series_input import load_series
from iowatch.kernel.source import SourceError, open_source
from iowatch.studies import load_matrix, load_studies
from iowatch.yamlfile import DataFileError


def register(sub):
    p = sub.add_parser(
        "check", help="build a series' variants, run them in the virtual lab, name the patch",
        description="Build base, base+p1, ... of a patch series, boot each in the virtual lab "
                    "(QEMU guests with emulated device classes), run the matrix inside, store the "
                    "results, and compare each variant with its parent and with the base. "
                    + exit_status.HELP)
    p.add_argument("--series", required=True, metavar="S",
                   help="a directory with a `series` file, an mbox (read with `b4 am -m`), a "
                        "Message-ID or lore URL (fetched with `b4 mbox`), or a git range A..B")
    p.add_argument("--base", required=True, metavar="REF", help="the commit the series applies to")
    add_guest_run_options(p, "variant")
    add_boot_option(p)
    p.set_defaults(func=run)


def run(args) -> int:
    try:
        host = qemu_host(args.inventory, args.hosts, "the check runs on a qemu host "
                         "(bare-metal hosts are driven by the Jenkins pipeline)")
        tree = open_source(args.source)
        series = load_series(args.series, tree)
        matrix = load_matrix(args.matrix)
        studies = load_studies(resources.studies_dir())
    except (DataFileError, inventory.InventoryError, HostError, SourceError, SeriesError) as e:
        print(f"iowatch check: {e}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else default_out(series)
    # What the series' mails claim is measured too: a study they are about that
    # the matrix lacks is added to it (iowatch.claims.series).
    slugs = [s.slug for s in matrix.studies]
    claimed = series_claims.from_series(series, studies, slugs, made_dir=out / "mail-studies")
    matrix_arg = args.matrix
    extra = series_claims.missing_studies(claimed, slugs)
    made = series_claims.made_studies(claimed)
    if extra:
        matrix_arg = str(series_claims.matrix_with(matrix.path, matrix.studies[0].path.parent, extra,
                                                out, made))
        print(f"check: the series' mails claim figures of {', '.join(extra)}, which {matrix.name} "
              f"does not run: running {matrix_arg}")
    if made:
        # The verdicts read the studies too: the made ones beside the rest.
        os.environ["IOWATCH_STUDIES"] = str(out / "studies")
        for path in made:
            print(f"check: a study made from a mail's workload: {path}")
    try:
        with progress.from_args(args, "check") as display:
            result = run_check(tree, args.base, series, host, Path(args.inventory or inventory.default_path()), matrix_arg, out,
                               profile=args.profile, reps=args.reps, per_boot=args.reps_per_boot,
                               store=(lambda p: None) if args.no_store else store_locally,
                               say=display.say, echo_console=args.console)
    except (KeyboardInterrupt, vlab.GuestStopped) as e:
        # The guest is stopped already (vlab); check.json holds every comparison made so far.
        print(f"\niowatch check: stopped ({e or 'Ctrl-C'}); what was judged before is in "
              f"{out / 'check.json'} (iowatch reproduce SEED --from {out} judges a seed's check)",
              file=sys.stderr)
        return 130
    whole = compare_with_base(result) if any(pc.whole_series for pc in claimed) else None
    series_claims.judge(claimed, {r.variant.index: r.vs_parent for r in result.runs}, studies, whole)
    result.claims = [pc.as_dict() for pc in claimed]
    print()
    print(report(result))
    lines = series_claims.report_lines(claimed)
    if lines:
        print("\n".join(lines))
    print(f"check: details in {write_summary(result, out)}")
    if args.json:
        print(json.dumps(summary(result), indent=1))
    return exit_code(result)
