"""The virtual lab's device models measured with fio through their NBD exports
on this host: each profile's calibration targets beside the model's figure,
a flash card's open-unit knee and a disk's seek curve.

    .venv/bin/python bench/devmodels/run.py [PROFILE ...] [--runtime S]

At depth 1 the host's share of a request is taken out and printed: the
export's own cost (measured through a free export of the same image, time_scale
0) and how late its threads woke (the stats file's late_s). Each measurement
gets a fresh export (a fresh model), over a sparse 2 GiB image in a temporary
directory. Prints one line a figure; exits 1 when a
target the export can reach (not host_reachable: false) is out of its
tolerance (the figures are still printed).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from iowatch.mechanics import export, probe, profiles

CAPACITY = 2 << 30


def exported(profile, directory: Path, seed: int = 1, time_scale: float = 1.0):
    image = directory / f"{profile.name}.img"
    image.unlink(missing_ok=True)
    with open(image, "wb") as f:
        f.truncate(CAPACITY)
    return export.serve(profile, image, directory / f"{profile.name}.sock", seed=seed, time_scale=time_scale,
                        stats=directory / "stats.json")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profiles", nargs="*")
    ap.add_argument("--runtime", type=float, default=4.0)
    args = ap.parse_args(argv)
    names = args.profiles or sorted(profiles.load())
    bad = 0
    print(f"bench/devmodels: fio through nbdkit on this host, load {os.getloadavg()[0]:.1f}")
    print(f"{'profile':18s} {'workload':26s} {'metric':8s} {'model':>10s} {'target':>10s} {'off':>8s}")
    with tempfile.TemporaryDirectory(prefix="iowatch-devmodels-") as tmp:
        for name in names:
            p = profiles.get(name)
            print(f"# {name}: {p.stands_for}")
            for t in p.targets:
                export_s = 0.0
                if t.iodepth == 1:      # the export's own cost a request, measured on a free export
                    with exported(p, Path(tmp), time_scale=0) as free:
                        export_s = probe.export_cost_s(free, p, t, runtime_s=args.runtime / 2)
                with exported(p, Path(tmp)) as uri:
                    raw = probe.target(uri, p, t, runtime_s=args.runtime)
                stats = json.loads((Path(tmp) / "stats.json").read_text())
                m = probe.less_host(raw, t, export_s, probe.late_per_request_s(stats))
                bad += t.host_reachable and not m.within
                flag = ("" if m.within else "not reachable through the export here (host_reachable: false)"
                        if not t.host_reachable else "OUT of ±%g%%" % m.tolerance_pct)
                print(f"{name:18s} {m.label:26s} {m.metric:8s} {m.value:10.2f} {m.target:10.2f} "
                      f"{m.off_pct:+7.1f}% {flag}"
                      + (f" (as measured {raw.value:.2f}, less the export's own {m.export_us:.0f} us and "
                         f"{m.late_us:.0f} us of late wake-ups a request)" if m.export_us is not None else ""),
                      flush=True)
            if p.kind == "flash":
                with exported(p, Path(tmp)) as uri:
                    for m in probe.open_unit_knee(uri, p, range(1, 9)):
                        print(f"{name:18s} {'knee: ' + m.label:26s} {m.metric:8s} {m.value:10.2f}", flush=True)
            if p.kind == "disk":
                with exported(p, Path(tmp)) as uri:
                    for m in probe.seek_curve(uri, CAPACITY):
                        print(f"{name:18s} {'seek: ' + m.label:26s} {m.metric:8s} {m.value:10.2f}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
