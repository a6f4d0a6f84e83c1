"""bench/runner: the runner's own overhead on the smoke matrix.

Runs `iowatch run jobs/smoke.yml --target localhost` (as root, on loop devices
under a scratch IOWATCH_DATA_DIR) and prints the wall time of the whole
command, the time spent inside fio and fs_mark, the workload's own writeback,
the overhead share (wall - tools - writeback) / wall, and where the overhead
goes by phase. Goal: under 3%.

"writeback" is the sync of the filesystem under test right after the tool
exits: it writes what the workload left dirty (fs_mark -S0 syncs nothing), it
lies inside the measured window (the device counters and their rates cover
it; xfs-smallfile-writeback counts it in its device writes), so it is measured
time, not runner overhead. It is shown as its own column, never added to the
tools' time, and the overhead counting it too is printed beside.

Per repetition it also prints the overhead in seconds beside the tools' time:
the overhead of a fresh filesystem per repetition (mkfs, mount, the unmount
that writes the workload's metadata in place) is a fixed cost per repetition,
so its share falls as the repetitions get longer. The last line says how long
a repetition must be for this run's overhead to stay under 3%.

With --image-size the local target's loop images are made that large (a
copy of the inventory under the scratch directory; the images are sparse),
so that a full-profile matrix fits: bench/runner/full-fio.yml runs the fio
studies at the seeds' sizes, 10 s and 60 s repetitions.

Usage: sudo .venv/bin/python bench/runner/run.py [--reps N] [--matrix FILE|NAME] [--profile quick|full]
       sudo .venv/bin/python bench/runner/run.py --matrix bench/runner/full-fio.yml --image-size 12GiB
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IOWATCH = str(Path(sys.executable).parent / "iowatch")


def _with_image_size(text: str, size: str) -> str:
    """The inventory with every loop image's size set to `size` (the safety check
    reads the same declared devices, only larger images back them)."""
    import yaml

    doc = yaml.safe_load(text)
    for host in doc["all"]["children"]["local"]["hosts"].values():
        for device in host["iowatch_devices"]:
            if "image" in device:
                device["size"] = size
    return yaml.safe_dump(doc, sort_keys=False)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--matrix", default="smoke",
                    help="a matrix or study file, or the name of one iowatch ships (default smoke)")
    ap.add_argument("--profile", choices=["quick", "full"], default=None,
                    help="the studies' profile (default: the matrix's)")
    ap.add_argument("--reps", type=int, default=None, help="override the matrix's repetitions")
    ap.add_argument("--runs", type=int, default=2, help="how many times to run the matrix")
    ap.add_argument("--image-size", default=None, metavar="SIZE",
                    help="make the local target's loop images this large (e.g. 12GiB) for a "
                         "full-profile matrix (default: the inventory's 2GiB)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/runner: needs root (loop devices, mkfs, mount)", file=sys.stderr)
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="iowatch-bench-runner-"))
    # The studies iowatch ships, also for a matrix file kept outside jobs/ (full-fio.yml).
    env = dict(os.environ, IOWATCH_DATA_DIR=str(scratch / "data"),
               IOWATCH_STUDIES=os.environ.get("IOWATCH_STUDIES", str(ROOT / "jobs" / "studies")))
    inventory = ROOT / "hardware-inventory.yml"
    if args.image_size:
        inventory = scratch / "hardware-inventory.yml"
        inventory.write_text(_with_image_size((ROOT / "hardware-inventory.yml").read_text(),
                                              args.image_size))
    print(f"bench/runner: {args.matrix}{' (' + args.profile + ' profile)' if args.profile else ''} "
          f"on localhost loop devices{' of ' + args.image_size if args.image_size else ''}, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    print(f"{'run':>4} {'wall s':>8} {'in tools s':>11} {'writeback s':>12} {'overhead':>9} "
          f"{'(+writeback)':>13}   overhead by phase (s)")
    rows = []
    try:
        for i in range(1, args.runs + 1):
            out = scratch / f"bundle-{i}"
            argv = [IOWATCH, "run", args.matrix, "--target", "localhost",
                    "--inventory", str(inventory), "--out", str(out),
                    "--no-progress"] + (["--reps", str(args.reps)] if args.reps else []) \
                + (["--profile", args.profile] if args.profile else [])
            t0 = time.perf_counter()
            r = subprocess.run(argv, env=env, capture_output=True, text=True)
            wall = time.perf_counter() - t0
            if r.returncode not in (0, 1):
                print(r.stdout, r.stderr, file=sys.stderr)
                return 1
            doc = json.loads((out / "bundle.json").read_text())
            runner = doc["environment"]["runner"]
            reps = sum(len(c["repetitions"]) for c in doc["cells"])
            tools = runner["tool_s"]
            # Bundles of runners before it was split out count it as the phase writeback_sync.
            writeback = runner.get("workload_writeback_s", 0.0)
            phases = dict(runner["phases_s"])
            phases["process start, planning, bundle"] = round(
                wall - tools - writeback - sum(phases.values()), 3)
            shown = ", ".join(f"{k} {v:.2f}" for k, v in sorted(phases.items(), key=lambda kv: -kv[1]))
            overhead = 100 * (wall - tools - writeback) / wall
            rows.append((overhead, (wall - tools - writeback) / max(reps, 1), (tools + writeback) / max(reps, 1)))
            print(f"{i:>4} {wall:>8.2f} {tools:>11.2f} {writeback:>12.2f} {overhead:>8.1f}% "
                  f"{100 * (wall - tools) / wall:>12.1f}%   {shown}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("(the first run also makes the sparse image files; overhead = (wall - tools - writeback) / wall,"
          " (+writeback) = (wall - tools) / wall)")
    later = sorted(rows[1:])
    if later:
        pct, per_rep, measured = later[len(later) // 2]
        print(f"overhead of runs 2..{len(rows)}: median {pct:.1f}%, "
              f"min {later[0][0]:.1f}%, max {later[-1][0]:.1f}% (goal: under 3%)")
        print(f"per repetition (median run): {per_rep:.2f} s of overhead beside {measured:.2f} s measured; "
              f"under 3% needs repetitions of at least {per_rep * 97 / 3:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
