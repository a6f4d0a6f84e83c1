"""bench/lkp: one study both ways on the same loop device, numbers side by side.

Runs the study with iowatch's own runner (`iowatch run`) and through
LKP-tests (`iowatch run --harness lkp`), each --reps repetitions, on the
same declared device of the local target (a loop device over an image under
a scratch IOWATCH_DATA_DIR), then prints each group-level metric's median
and range both ways and their ratio. Both bundles are kept (--keep) for
`iowatch compare NATIVE LKP`.

What differs besides the harness, and is printed under the table: LKP makes
the filesystem with its own mkfs and mount options (its reproduce.sh), runs
fio through fio-setup-basic (fallocate=posix, iodepth and file layout of its
own), and iowatch's device counters cover the whole `lkp run` (mkfs, setup,
workload, unmount) where the native runner's cover the workload alone.

Usage: sudo LKP_SRC=/opt/lkp-tests .venv/bin/python bench/lkp/side_by_side.py
       [--study jobs/studies/ext4-dio-randread.yml] [--cell ext4-dio-randread/loop-ssd/ext4] [--reps 5]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IOWATCH = str(Path(sys.executable).parent / "iowatch")
SHOWN_PREFIXES = ("read.", "write.", "fsmark.", "wall_s", "cpu.user_s", "cpu.sys_s", "device.")


def run(study: str, cell: str, reps: int, out: Path, data: Path, harness: str) -> None:
    env = dict(os.environ, IOWATCH_DATA_DIR=str(data))
    cmd = [IOWATCH, "run", study, "--target", "localhost", "--inventory", str(ROOT / "hardware-inventory.yml"),
           "--cells", cell, "--reps", str(reps), "--out", str(out), "--no-progress", "--harness", harness]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    print(done.stdout.strip().splitlines()[1], file=sys.stderr)


def values(bundle_dir: Path) -> tuple[dict, dict]:
    sys.path.insert(0, str(ROOT / "src"))
    from iowatch import bundle
    doc = bundle.load(bundle_dir)
    (cell,) = [c for c in doc["cells"] if c["status"] != "skipped"]
    found: dict[tuple[str, str], list[float]] = {}
    for rep in cell["repetitions"]:
        for s in rep["samples"]:
            if s.get("job") is None and s["metric"].startswith(SHOWN_PREFIXES):
                found.setdefault((s["group"], s["metric"]), []).append(s["value"])
    return found, cell


def fmt(xs: list[float] | None) -> str:
    if not xs:
        return "-"
    return f"{statistics.median(xs):,.4g} ({min(xs):,.4g}-{max(xs):,.4g})"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--study", default=str(ROOT / "jobs/studies/ext4-dio-randread.yml"))
    ap.add_argument("--cell", default="ext4-dio-randread/loop-ssd/ext4")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--keep", default=None, help="keep both bundles under this directory")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (loop devices, mkfs, mount, lkp run)")
    scratch = Path(tempfile.mkdtemp(prefix="iowatch-lkp-bench-"))
    keep = Path(args.keep) if args.keep else scratch
    try:
        data = scratch / "data"
        native, lkp = keep / "native", keep / "lkp"
        run(args.study, args.cell, args.reps, native, data, "native")
        run(args.study, args.cell, args.reps, lkp, data, "lkp")
        a, ca = values(native)
        b, cb = values(lkp)
        print(f"{args.cell}, {args.reps} repetitions each way, same loop device; median (min-max)")
        print(f"| group | metric | iowatch run | --harness lkp | lkp / native |")
        print("|---|---|---|---|---|")
        for key in sorted(set(a) | set(b)):
            ratio = (f"{statistics.median(b[key]) / statistics.median(a[key]):.2f}"
                     if a.get(key) and b.get(key) and statistics.median(a[key]) else "-")
            print(f"| {key[0]} | {key[1]} | {fmt(a.get(key))} | {fmt(b.get(key))} | {ratio} |")
        print(f"mkfs/mount: native {ca.get('mkfs_options')!r}/{ca.get('mount_options')!r}; "
              f"lkp {cb.get('mkfs_options')!r}/{cb.get('mount_options')!r}")
        print("device.* under lkp: the whole `lkp run` (mkfs, setup, workload, unmount); native: the workload")
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
