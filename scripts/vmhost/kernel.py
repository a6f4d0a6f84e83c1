"""Build the lab-host variants of a series (default kernels/series/e2e-failures)
with kernels/config/lab-host.config added to the virtual lab's fragments, and
print them as JSON. A variant already built from the same commit and .config is
reused. Run with IOWATCH_DATA_DIR set to keep this build directory apart from
the virtual lab's (its .config differs, so sharing one would rebuild both)."""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from iowatch.kernel import build, series, source

REPO = Path(__file__).resolve().parents[2]

LAB_HOST_FRAGMENT = REPO / "kernels/config/lab-host.config"
# Leaves out what the VM's boot does not use, so a cold build fits in an hour on 2 cores.
VM_FRAGMENT = Path(__file__).with_name("vm.config")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--series", default=str(REPO / "kernels/series/e2e-failures"))
    ap.add_argument("--base", default=source.BASE_TAG)
    ap.add_argument("--jobs", type=int)
    ap.add_argument("--config-base", choices=build.CONFIG_BASES, default="vng",
                    help="vng (a distribution-like base, the kernel role's test) or allnoconfig "
                         "(the virtual lab's small base: lab-host.config adds what Debian's boot "
                         "needs; a clean build about 3x faster, the stand-in lab's)")
    args = ap.parse_args()
    tree = source.open_source(None)
    plan = build.make_variants(tree, args.base, series.load_series(args.series, tree))
    fragments = build.default_fragments() + [LAB_HOST_FRAGMENT, VM_FRAGMENT]
    # A lab host boots Debian with systemd from a disk: lab-host.config holds what
    # that needs, on either base.
    config = build.configure(plan, fragments, base=args.config_base)
    config_hash = hashlib.sha256(config.read_bytes()).hexdigest()
    out = []
    for v in plan.variants:
        meta = build.cache_dir() / "artifacts" / plan.series.name / f"{v.index:02d}-{v.commit[:12]}" / "meta.json"
        old = json.loads(meta.read_text()) if v.commit and meta.is_file() else {}
        if old.get("status") == "built" and old.get("config_hash") == config_hash:
            v.status, v.artifacts, v.release = "built", str(meta.parent), old["release"]
        elif v.status != "apply-failed":
            build.build_variant(plan, v, args.jobs)
        print(f"variant {v.index} ({v.label}): {v.status} {v.release or ''} "
              f"{'' if v.build_s is None else f'in {v.build_s} s'}", file=sys.stderr, flush=True)
        out.append({"index": v.index, "label": v.label, "status": v.status, "release": v.release,
                    "commit": v.commit, "artifacts": v.artifacts, "subject": v.subject})
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
