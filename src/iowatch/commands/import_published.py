"""iowatch import-published: store the studies' published numbers as published runs.

Each published result set of a study (one kernel label on one device class)
becomes a bundle with `published: true` and one repetition (n = 1), so the
dashboard and compare show the seed's numbers beside measured ones. The run
UUID is derived from the content, so importing again stores nothing twice.
"""
from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

from iowatch import paths, resources
from iowatch.bundle import BundleWriter
from iowatch.local_store import store_bundles
from iowatch.studies import Study, load_studies
from iowatch.yamlfile import DataFileError

NAMESPACE = uuid.UUID("5b0f5f8e-43c6-4a5c-9f57-8a3f2f1d7c11")


def register(sub):
    p = sub.add_parser("import-published", help="store the studies' published results",
                       description="Store every study's published results as published runs "
                                   "(n = 1): into the local store, or to --server.")
    p.add_argument("studies", metavar="STUDIES_DIR", nargs="?", default=None,
                   help="a directory of study files (default: $IOWATCH_STUDIES, else the studies "
                        "iowatch ships)")
    p.add_argument("--server", default=None, help="upload to this server instead of the local store")
    p.add_argument("--token", default=None, help="agent token for --server")
    p.add_argument("--out", default=None, help="where to write the bundles "
                   "(default $IOWATCH_DATA_DIR/published)")
    p.set_defaults(func=run)


def published_bundles(study: Study, out: Path) -> list[Path]:
    dirs = []
    fs = study.filesystems[0]
    for entry in study.published:
        samples = entry.samples()
        content = json.dumps([study.slug, entry.as_given], sort_keys=True)
        run_id = str(uuid.uuid5(NAMESPACE, content))
        d = out / study.slug / run_id
        cls = entry.device_class
        excerpt = "\n".join([f"study: {study.slug} ({study.seed})",
                             f"source: {study.source}", f"label: {entry.label}",
                             f"kernel: {entry.kernel}", f"setup: {entry.setup or ''}", ""]
                            + [f"{r.metric} [{r.group}]: {r.as_published}"
                               for r in entry.results]) + "\n"
        w = BundleWriter(d, run_id=run_id, kernel={"release": entry.kernel[:200]},
                         host={"name": "published", "kind": "published"},
                         devices=[{"name": f"published-{cls}", "class": cls}],
                         environment={"setup": entry.setup, "seed": study.seed,
                                      "source": study.source},
                         published=True, label=entry.label)
        w.add_repetition(f"{study.slug}/published-{cls}/{fs}", study.slug, 1, samples,
                         {"published.txt": excerpt.encode()}, device=f"published-{cls}",
                         filesystem=fs, params={"published": True})
        w.close("passed")
        dirs.append(d)
    return dirs


def run(args) -> int:
    try:
        studies = load_studies(resources.studies_dir(args.studies))
    except DataFileError as e:
        print(f"iowatch import-published: {e}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else paths.data_dir() / "published"
    dirs = [d for s in studies.values() for d in published_bundles(s, out)]
    print(f"import-published: {len(dirs)} published result sets from {len(studies)} studies")
    if args.server:
        from iowatch.upload import Spool, upload
        outcomes = upload([str(d) for d in dirs], args.server, args.token or "",
                          Spool(paths.spool_dir()))
        for o in outcomes:
            print(f"{o.state}: run {o.run_id}: {o.detail}")
        return 0 if all(o.state in ("sent", "already-stored") for o in outcomes) else 1
    return store_bundles([str(d) for d in dirs])
