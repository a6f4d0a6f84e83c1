"""iowatch reproduce: a seed's claims against the virtual lab's Linux 6.12.

`iowatch reproduce SEED` runs `iowatch check` of the seed's series
(kernels/series/seed-NNN-*) on debian-base with the seed's study as the
matrix (quick profile unless --profile), gives each variant's runs the
post's label of the side it stands for (reproduce.yml in the series
directory), stores them, and judges every published claim of the study
(iowatch.claims.seeds). `--from CHECK_DIR` judges a check that already ran, without
building or booting. The exit status is the check's (iowatch.exit_status),
also with --from, where it is read from the check's check.json; 2 when the
seed, series or check directory cannot be used.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from iowatch import exit_status, inventory, paths, resources
from iowatch.commands import check as check_command
from iowatch.commands.guest_options import add_boot_option, add_guest_run_options
from iowatch.claims.seeds import (Seed, SeedError, checked_variants, find_seed, judge_check_dir,
                           label_bundle, report)
from iowatch.studies import load_studies
from iowatch.yamlfile import DataFileError


def register(sub) -> None:
    p = sub.add_parser(
        "reproduce", help="check a seed's series in the virtual lab and judge the post's claims",
        description=__doc__.split("\n\n")[1].replace("\n", " ") + " " + exit_status.HELP)
    p.add_argument("seed", metavar="SEED",
                   help="000 .. 004, a series directory name (seed-001-ext4-dio-read-lock) or "
                        "path, or the seed's study (ext4-dio-randread)")
    p.add_argument("--from", dest="from_dir", metavar="CHECK_DIR", default=None,
                   help="judge the claims on this check's output directory (its check.json and "
                        "bundles) instead of building and booting")
    p.add_argument("--base", default="debian-base", metavar="REF",
                   help="the commit the series applies to (default debian-base)")
    add_guest_run_options(p, "variant")
    add_boot_option(p)
    # reproduce.yml's matrix, else the seed's study file, unless --matrix names another.
    p.set_defaults(func=run, matrix=None, hosts=None)
    for action in p._actions:
        if action.dest == "matrix":
            action.help = ("what to run on each variant (default: the matrix of the series' "
                           "reproduce.yml, else the seed's study file)")
        if action.dest == "hosts":
            action.help = ("the qemu host of the inventory (default: the host of the series' "
                           "reproduce.yml, else vlab-mech, the modelled lab)")


def run(args) -> int:
    try:
        studies = load_studies(resources.studies_dir())
        seed = find_seed(args.seed, studies)
        if args.from_dir:
            return _judge(Path(args.from_dir), seed, studies, args.json, write=False)
    except (SeedError, DataFileError) as e:
        print(f"iowatch reproduce: {e}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else (
        paths.data_dir() / "reproductions" / f"{seed.name}-{time.strftime('%Y%m%d-%H%M%S')}")
    store, want_json = not args.no_store, args.json
    # The check as `iowatch check` runs it; the bundles are stored once they carry the post's labels.
    args.series, args.out, args.no_store, args.json = str(seed.series_dir), str(out), True, False
    args.matrix = args.matrix or seed.matrix or str(seed.study.path)
    if seed.host and not args.hosts and not _has_host(args.inventory, seed.host):
        print(f"iowatch reproduce: {seed.series_dir.name}/reproduce.yml boots the variants on host "
              f"{seed.host!r}, which {args.inventory or inventory.default_path()} does not have; "
              "copy it from the hardware-inventory.yml iowatch ships, or name another qemu host "
              "with --hosts", file=sys.stderr)
        return 2
    args.hosts = args.hosts or seed.host  # else check's default: the modelled lab
    args.profile = args.profile or "quick"
    code = check_command.run(args)
    if not (out / "check.json").is_file():
        return code  # the check could not start; it said why
    try:
        _label_and_store(out, seed, store)
        _judge(out, seed, studies, want_json, write=True)
    except (SeedError, DataFileError) as e:
        print(f"iowatch reproduce: {e}", file=sys.stderr)
        return 2
    return code


def _has_host(inventory_path: str | None, name: str) -> bool:
    """Whether the inventory has the host; a broken inventory is the check's to name."""
    try:
        inventory.load(inventory_path).host(name)
    except KeyError:
        return False
    except inventory.InventoryError:
        return True
    return True


def _label_and_store(out: Path, seed: Seed, store: bool) -> None:
    variants, _ = checked_variants(out, seed)
    for v in variants:
        for path in v.bundles:
            label_bundle(path, seed)
            if store:
                check_command.store_locally(path)


def _judge(check_dir: Path, seed: Seed, studies, want_json: bool, write: bool) -> int:
    """Print the claims judged on the check's variants (a stored check is only
    read); the check's exit status, from its check.json."""
    rep = judge_check_dir(check_dir, seed, studies)
    doc = rep.as_dict()
    if write:
        (check_dir / "reproduce.json").write_text(json.dumps(doc, indent=1) + "\n")
    if want_json:
        print(json.dumps(doc, indent=1))
    else:
        print(report(rep))
        if write:
            print(f"reproduce: details in {check_dir / 'reproduce.json'}")
    if rep.regressing_patches:
        return exit_status.REGRESSION
    return exit_status.of_states(rep.check_states)
