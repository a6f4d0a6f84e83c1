"""iowatch import-lkp: LKP-tests result roots as runs, so `iowatch compare` reads LKP history.

Each testbox and kernel commit becomes a bundle (iowatch.lkp.importer) that
is stored like a run's: into this machine's store, or uploaded to --server.
The run id comes from the result roots, so importing again stores nothing twice.
"""
from __future__ import annotations

import sys
from pathlib import Path

from iowatch import paths, resources
from iowatch.yamlfile import DataFileError


def register(sub):
    p = sub.add_parser(
        "import-lkp", help="store LKP-tests result roots as runs",
        description="Read LKP result roots (/lkp/result/<suite>/<params>/<testbox>/<rootfs>/"
                    "<kconfig>/<compiler>/<commit>/<N>/ with job.yaml, env.yaml and stats.json, or "
                    "the <commit> directory's matrix.json), map LKP's numbers onto iowatch's "
                    "metrics, and store a bundle per testbox and commit in the local store or "
                    "on --server. Any directory above result roots may be given.")
    p.add_argument("roots", nargs="+", metavar="RESULT_ROOT")
    p.add_argument("--out", default=None,
                   help="where to write the bundles (default $IOWATCH_DATA_DIR/lkp-import)")
    p.add_argument("--device-class", default=None,
                   choices=("sdcard", "emmc", "ssd", "ssd-raid0", "hdd", "nvme"),
                   help="the disk's device class (default: from the job's disk: 1HDD, 1SSD, 1NVMe)")
    p.add_argument("--host-kind", default="bare-metal", choices=("bare-metal", "qemu", "local"),
                   help="what the LKP testbox was (default bare-metal)")
    p.add_argument("--label", default=None, help="a label for these kernels, such as 'base'")
    p.add_argument("--studies", default=None, metavar="DIR",
                   help="study files an LKP job may be the translation of (default: iowatch's)")
    p.add_argument("--no-store", action="store_true", help="only write the bundles")
    p.add_argument("--server", default=None, metavar="URL", help="upload instead of the local store")
    p.add_argument("--token", default=None, help="agent token for --server")
    p.set_defaults(func=run)


def run(args) -> int:
    from iowatch.lkp.importer import import_roots
    from iowatch.lkp.result_root import ResultRootError
    from iowatch.studies import load_studies

    try:
        studies = load_studies(resources.studies_dir(args.studies))
        out = Path(args.out) if args.out else paths.data_dir() / "lkp-import"
        dirs = import_roots(args.roots, out, studies=studies, device_class_override=args.device_class,
                            host_kind=args.host_kind, label=args.label)
    except (ResultRootError, DataFileError) as e:
        print(f"iowatch import-lkp: {e}", file=sys.stderr)
        return 2
    from iowatch.bundle import load
    for d in dirs:
        doc = load(d)
        reps = sum(len(c["repetitions"]) for c in doc["cells"])
        print(f"bundle {d} (run {doc['run_id']}, {doc['host']['name']}, kernel "
              f"{doc['kernel']['release']}): {len(doc['cells'])} cells, {reps} iterations")
        for c in doc["cells"]:
            print(f"  {c['id']}")
    if args.no_store:
        return 0
    if args.server:
        from iowatch.upload import Spool, upload
        outcomes = upload([str(d) for d in dirs], args.server, args.token or "", Spool(paths.spool_dir()))
        for o in outcomes:
            print(f"upload: {o.state}: run {o.run_id}: {o.detail}")
        return 0 if all(o.state in ("sent", "already-stored") for o in outcomes) else 1
    from iowatch.local_store import store_bundles
    return 1 if store_bundles([str(d) for d in dirs]) else 0
