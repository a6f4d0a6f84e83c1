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

Usage: sudo .venv/bin/python bench/runner/run.py [--reps N] [--matrix FILE]
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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--matrix", default=str(ROOT / "jobs/smoke.yml"))
    ap.add_argument("--reps", type=int, default=None, help="override the matrix's repetitions")
    ap.add_argument("--runs", type=int, default=2, help="how many times to run the matrix")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/runner: needs root (loop devices, mkfs, mount)", file=sys.stderr)
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="iowatch-bench-runner-"))
    env = dict(os.environ, IOWATCH_DATA_DIR=str(scratch / "data"))
    print(f"bench/runner: {Path(args.matrix).name} on localhost loop devices, {os.cpu_count()} cores")
    print(f"{'run':>4} {'wall s':>8} {'in tools s':>11} {'writeback s':>12} {'overhead':>9} "
          f"{'(+writeback)':>13}   overhead by phase (s)")
    rows = []
    try:
        for i in range(1, args.runs + 1):
            out = scratch / f"bundle-{i}"
            argv = [IOWATCH, "run", args.matrix, "--target", "localhost",
                    "--inventory", str(ROOT / "hardware-inventory.yml"), "--out", str(out),
                    "--no-progress"] + (["--reps", str(args.reps)] if args.reps else [])
            t0 = time.perf_counter()
            r = subprocess.run(argv, env=env, capture_output=True, text=True)
            wall = time.perf_counter() - t0
            if r.returncode not in (0, 1):
                print(r.stdout, r.stderr, file=sys.stderr)
                return 1
            runner = json.loads((out / "bundle.json").read_text())["environment"]["runner"]
            tools = runner["tool_s"]
            # Bundles of runners before it was split out count it as the phase writeback_sync.
            writeback = runner.get("workload_writeback_s", 0.0)
            phases = dict(runner["phases_s"])
            phases["process start, planning, loop attach/detach"] = round(
                wall - tools - writeback - sum(phases.values()), 3)
            shown = ", ".join(f"{k} {v:.2f}" for k, v in sorted(phases.items(), key=lambda kv: -kv[1]))
            overhead = 100 * (wall - tools - writeback) / wall
            rows.append(overhead)
            print(f"{i:>4} {wall:>8.2f} {tools:>11.2f} {writeback:>12.2f} {overhead:>8.1f}% "
                  f"{100 * (wall - tools) / wall:>12.1f}%   {shown}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("(the first run also makes the sparse image files; overhead = (wall - tools - writeback) / wall,"
          " (+writeback) = (wall - tools) / wall)")
    later = sorted(rows[1:])
    if later:
        print(f"overhead of runs 2..{len(rows)}: median {later[len(later) // 2]:.1f}%, "
              f"min {later[0]:.1f}%, max {later[-1]:.1f}% (goal: under 3%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
