"""iowatch import-reproductions: store kept seed reproductions as the lab's runs.

Each seed-NNN directory under DIR (default tests/fixtures/reproductions) is
the output directory of one `iowatch reproduce` (check.json and each
variant's bundles, labelled with the post's side they stand for). Its bundles
go into the store as measured runs, so the Published results page judges each
seed's claims on a real 6.12 lab beside the post's numbers. Each run is stored
as the claim judge reads it (iowatch.claims.seeds.judge_check_dir): a ratio study's
ratio made again per repetition pair (iowatch.ratio) from the recorded
repetitions, in a copy under --out; the kept files are not changed. A new seed-NNN
directory is picked up as it is; a run already stored is stored once (the
bundle's run UUID); a directory that cannot be used is refused with the file
at fault, and nothing is stored. A reproduction made without the platform
canary (before it ran in every boot) is said to be so.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

from iowatch import bundle, paths, resources
from iowatch import ratio as fs_ratio
from iowatch.local_store import store_bundles
from iowatch.claims.seeds import KeptReproduction, SeedError, kept_dirs, load_kept
from iowatch.studies import Study, load_studies
from iowatch.yamlfile import DataFileError

DEFAULT_DIR = Path("tests") / "fixtures" / "reproductions"


def register(sub):
    p = sub.add_parser("import-reproductions", help="store the kept seed reproductions' runs",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("root", metavar="DIR", nargs="?", default=str(DEFAULT_DIR),
                   help=f"a directory of seed-NNN reproduction directories (default {DEFAULT_DIR})")
    p.add_argument("--out", default=None, help="where the copies to store are written "
                   "(default $IOWATCH_DATA_DIR/kept-reproductions)")
    p.set_defaults(func=run)


def kept_reproductions(root: Path, studies: dict[str, Study]) -> list[KeptReproduction]:
    """Every seed-* directory under root, each checked whole (SeedError names the file)."""
    return [load_kept(d, studies) for d in kept_dirs(root)]


def stored_bundles(kept: list[KeptReproduction], studies: dict[str, Study], out: Path) -> list[Path]:
    """Each kept run copied under out/SEED_DIR/ as the claim judge reads it (its
    ratio derived again): the bundle directories to store."""
    dirs = []
    for k in kept:
        for _, path in k.bundles:
            dest = out / k.check_dir.name / path.relative_to(k.check_dir)
            shutil.copytree(path, dest, dirs_exist_ok=True)
            bundle.write_manifest(dest, fs_ratio.derive(bundle.load(path), studies))
            dirs.append(dest)
    return dirs


def run(args) -> int:
    try:
        studies = load_studies(resources.studies_dir())
        kept = kept_reproductions(Path(args.root), studies)
    except (SeedError, DataFileError) as e:
        print(f"iowatch import-reproductions: {e}", file=sys.stderr)
        return 2
    for k in kept:
        print(f"import-reproductions: {k.check_dir.name}: seed {k.seed.number} "
              f"({k.seed.study.slug}), {len(k.bundles)} runs of {len({i for i, _ in k.bundles})} "
              f"variants" + ("" if k.with_canary else "; made without a canary (no run measured "
                             "the platform: its verdicts cannot say it held)"))
    if not kept:
        print(f"import-reproductions: no seed-* directory under {args.root}")
        return 0
    out = Path(args.out) if args.out else paths.data_dir() / "kept-reproductions"
    return store_bundles([str(d) for d in stored_bundles(kept, studies, out)])
