"""iowatch compare: A/B verdicts per cell between two kernels, runs or bundles.

Exits as the other commands that judge (iowatch.exit_status): 0 no
regression and every deciding cell decided; 1 at least one regression; 2 a
side could not be read (the message says which and why) or the call is
wrong; 3 undecided, a deciding cell still unsure or suspected (a CI gate
must not read that as a pass).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from iowatch import exit_status, resources
from iowatch.side_sources import NeedsStore, bundles_history, load_side, published_side
from iowatch.judging.sides import SideNotFound
from iowatch.vocabulary import FDR
from iowatch.judging import compare_sides
from iowatch.report import FORMATS, RENDERERS
from iowatch.studies import load_studies
from iowatch.yamlfile import DataFileError


def register(sub):
    p = sub.add_parser(
        "compare", help="compare two kernels, runs or bundles (or a study's published results)",
        description="Compare BASE and CANDIDATE cell by cell. Each side is a bundle directory, a "
                    "run id, or a kernel (release, commit or label) in the store: through --server, "
                    "or this machine's store. Several runs on a side pool their repetitions. "
                    "With --published STUDY, compare the study's published results instead. "
                    + exit_status.HELP)
    p.add_argument("base", nargs="?", metavar="BASE")
    p.add_argument("candidate", nargs="?", metavar="CANDIDATE")
    p.add_argument("--published", metavar="STUDY", help="compare this study's published results")
    p.add_argument("--base", dest="base_label", metavar="LABEL", help="with --published: the base label")
    p.add_argument("--candidate", dest="candidate_label", metavar="LABEL",
                   help="with --published: the candidate label")
    p.add_argument("--device-class", default=None, help="only cells of this device class")
    p.add_argument("--format", choices=FORMATS, default="text")
    p.add_argument("--fdr", type=float, default=FDR,
                   help=f"false-discovery rate for Benjamini-Hochberg across the cells (default {FDR})")
    p.add_argument("--server", default=os.environ.get("IOWATCH_SERVER"),
                   help="read run ids and kernels from this server's API (env IOWATCH_SERVER)")
    p.add_argument("--studies", default=None, help="a directory of study files (default: $IOWATCH_STUDIES, else the studies iowatch ships)")
    p.add_argument("--output", "-o", default=None, help="write the report here instead of stdout")
    p.add_argument("--history", action="append", default=None, metavar="DIR",
                   help="bundles of other kernels booted more than once on the same host (a "
                        "bundle, or a directory of them; repeatable): where each side is one "
                        "boot, their noise between boots joins the test; without it such a "
                        "change is at most \"suspected: one boot a side\"")
    p.set_defaults(func=run)


def _fail(message: str) -> int:
    print(f"iowatch compare: {message}", file=sys.stderr)
    return 2


def run(args, store_side=None) -> int:
    """`store_side(spec, role)` reads a side from this machine's store; by
    default the web app's store_side command in a child process
    (iowatch.local_store.store_side), which hands back the runs as data."""
    from iowatch import local_store
    store_side = store_side or local_store.store_side
    if not 0 < args.fdr < 1:
        return _fail(f"--fdr {args.fdr} must be between 0 and 1")
    studies_dir = resources.studies_dir(args.studies)
    try:
        studies = load_studies(studies_dir)
    except DataFileError as e:
        return _fail(str(e))

    def side(spec: str, role: str):
        try:
            return load_side(spec, server=args.server, role=role)
        except NeedsStore:
            return store_side(spec, role)

    try:
        if args.published:
            if args.base or args.candidate or not (args.base_label and args.candidate_label):
                return _fail("--published STUDY takes --base LABEL and --candidate LABEL, "
                             "not positional sides")
            study = studies.get(args.published)
            if study is None:
                return _fail(f"no study {args.published!r} in {studies_dir} "
                             f"(studies: {', '.join(sorted(studies))})")
            base = published_side(study, args.base_label, args.device_class, "base")
            candidate = published_side(study, args.candidate_label, args.device_class, "candidate")
        else:
            if not (args.base and args.candidate):
                return _fail("name two sides: iowatch compare BASE CANDIDATE "
                             "(or --published STUDY --base LABEL --candidate LABEL)")
            base = side(args.base, "base")
            candidate = side(args.candidate, "candidate")
        history = bundles_history(args.history) if args.history else None
    except SideNotFound as e:
        return _fail(str(e))
    cmp = compare_sides(base, candidate, studies=studies, fdr=args.fdr, history=history)
    if args.device_class:
        cmp.verdicts = [v for v in cmp.verdicts if v.key.device_class == args.device_class]
        cmp.diagnostics = [v for v in cmp.diagnostics if v.key.device_class == args.device_class]
    if not cmp.verdicts and not cmp.diagnostics and not cmp.failed and not cmp.canaries:
        return _fail(f"base {args.base or args.base_label!r} and candidate "
                     f"{args.candidate or args.candidate_label!r} share no cell with samples "
                     "(same study, device class, device, filesystem, group and metric)")
    report = RENDERERS[args.format](cmp)
    if args.output:
        Path(args.output).write_text(report)
    else:
        sys.stdout.write(report)
    if cmp.regressions:
        return exit_status.REGRESSION
    return exit_status.of_states([cmp.state])
