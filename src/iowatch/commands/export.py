"""iowatch export: results in the formats other kernel CI systems read (KCIDB)."""
from __future__ import annotations

import json
import sys
from pathlib import Path


def register(sub):
    p = sub.add_parser("export", help="results as other kernel CI systems read them (KCIDB)")
    formats = p.add_subparsers(dest="format", metavar="FORMAT", required=True)
    k = formats.add_parser(
        "kcidb", help="a run, a check or a regression as KCIDB JSON",
        description="Print a run, a check or a regression as KCIDB JSON (checkouts, builds, and "
                    "tests with numbers and units; a test's status is the verdict: regression "
                    "FAIL, no change or improvement PASS, undecided ERROR, not measured MISS, "
                    "a run with no comparison DONE), validated with kcidb-io. Submit it with "
                    "KernelCI's kcidb-submit, the JSON on its stdin.")
    what = k.add_mutually_exclusive_group(required=True)
    what.add_argument("--run", metavar="BUNDLE_OR_ID",
                      help="a bundle directory, or a run id read from --server")
    what.add_argument("--check", metavar="DIR",
                      help="the directory `iowatch check` wrote (check.json and the bundles)")
    what.add_argument("--regression", metavar="ID", type=int, help="a regression's id on --server")
    k.add_argument("--history", action="append", default=None, metavar="DIR",
                   help="with --check: bundles of kernels booted more than once on the check's "
                        "host (repeatable), its record of the noise between boots, for a check "
                        "whose variants were measured in one boot each")
    k.add_argument("--server", metavar="URL", help="the iowatch server to read run ids and regressions from")
    k.add_argument("--origin", default="iowatch",
                   help="the KCIDB origin: lowercase letters, digits, _ (default iowatch)")
    k.add_argument("--repository", metavar="URL", help="the https:// git URL of the tested tree")
    k.add_argument("--branch", help="the tested branch")
    k.add_argument("--studies", metavar="DIR", default=None,
                   help="study files (default: the ones iowatch ships)")
    k.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    k.add_argument("--no-validate", action="store_true",
                   help="do not check the output with kcidb-io")
    k.set_defaults(func=run_kcidb)


def run_kcidb(args) -> int:
    from iowatch import kcidb, resources
    from iowatch.ciapi import Client, ServerError
    from iowatch.judging.sides import SideNotFound
    from iowatch.side_sources import bundles_history, load_side, manifest_from_api
    from iowatch.studies import load_studies

    def fail(message: str) -> int:
        print(f"iowatch export kcidb: {message}", file=sys.stderr)
        return 2

    try:
        export = kcidb.Export(args.origin, repository=args.repository, branch=args.branch)
        studies = load_studies(resources.studies_dir(args.studies))
        if args.check:
            history = bundles_history(args.history) if args.history else None
            data = kcidb.from_check(Path(args.check), studies, export, history=history)
        elif args.run:
            data = kcidb.from_runs(load_side(args.run, server=args.server, role="--run").runs,
                                   studies, export)
        else:
            if not args.server:
                return fail("--regression needs --server URL (the store that holds it)")
            client = Client(args.server)
            try:
                detail = client.regression(args.regression)
            except ServerError as e:
                if e.status == 404:
                    return fail(f"no regression {args.regression} on {args.server}")
                raise
            if not detail.get("candidate_runs"):
                return fail(f"regression {args.regression} names no candidate run")
            candidate = manifest_from_api(client, str(detail["candidate_runs"][0]))
            data = kcidb.from_regression(detail, candidate, studies, export)
        if not args.no_validate:
            kcidb.validate(data)
    except (kcidb.KcidbError, SideNotFound) as e:
        return fail(str(e))
    except ServerError as e:
        return fail(f"cannot read {args.server}: {e}")
    text = json.dumps(data, indent=1) + "\n"
    if args.output:
        Path(args.output).write_text(text)
        counts = ", ".join(f"{len(data.get(k, []))} {k}" for k in ("checkouts", "builds", "tests"))
        print(f"export: {counts} in {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
