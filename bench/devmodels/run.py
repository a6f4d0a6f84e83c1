"""The virtual lab's device models measured with fio through their NBD exports
on this host: each profile's calibration targets beside the model's figure,
a flash card's open-unit knee and a disk's seek curve.

    .venv/bin/python bench/devmodels/run.py [PROFILE ...] [--runtime S]

At depth 1 a figure is read at the model's own time a request (the stats
file's model_s), with the figure as measured and the host's share printed
beside it; at depth 2 and more a workload the host itself carries at less than
three times the target (a free export, time_scale 0) is measured with the model
slowed and scaled back (iowatch.mechanics.probe.target_on_host). Each measurement
gets a fresh export (a fresh model), over a sparse 2 GiB image in a temporary
directory. Prints one line a figure; exits 1 when a
target the export can reach (not host_reachable: false) is out of its
tolerance (the figures are still printed).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from iowatch.mechanics import export, probe, profiles

CAPACITY = 2 << 30


def blank_image(profile, directory: Path) -> Path:
    """A fresh sparse image of CAPACITY for the profile's model to serve."""
    image = directory / f"{profile.name}.img"
    image.unlink(missing_ok=True)
    with open(image, "wb") as f:
        f.truncate(CAPACITY)
    return image


def exported(profile, directory: Path, seed: int = 1):
    return export.serve(profile, blank_image(profile, directory), directory / f"{profile.name}.sock", seed=seed,
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
                m, raw = probe.target_on_host(p, t, blank_image(p, Path(tmp)), Path(tmp), runtime_s=args.runtime)
                bad += t.host_reachable and not m.within
                flag = ("" if m.within else "not reachable through the export here (host_reachable: false)"
                        if not t.host_reachable else "OUT of ±%g%%" % m.tolerance_pct)
                print(f"{name:18s} {m.label:26s} {m.metric:8s} {m.value:10.2f} {m.target:10.2f} "
                      f"{m.off_pct:+7.1f}% {flag}"
                      + (f" ({words})" if (words := probe.host_share_words(m, raw)) else ""),
                      flush=True)
            if p.kind == "flash":
                with exported(p, Path(tmp)) as uri:
                    for m in probe.open_unit_knee(uri, p, range(1, 9)):
                        print(f"{name:18s} {'knee: ' + m.label:26s} {m.metric:8s} {m.value:10.2f}", flush=True)
            if p.kind == "disk":
                for m in probe.seek_curve_on_host(p, blank_image(p, Path(tmp)), Path(tmp), CAPACITY):
                    print(f"{name:18s} {'seek: ' + m.label:26s} {m.metric:8s} {m.value:10.2f} (as measured "
                          f"{m.request_s * 1e3:.2f})", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
