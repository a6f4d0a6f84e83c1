"""bench/kernel: clean build, incremental build per patch, boot and matrix time
per variant, for one series on this machine.

Runs `iowatch check` on kernels/series/e2e-slow-ext4-dio (or reads the
check.json of one that ran, with --from) and prints the figures. With --clean
the build directory and ccache are emptied first, so variant 0 is a clean
build. Goal: an incremental build under 10% of a clean one.

Usage: .venv/bin/python bench/kernel/run.py [--clean] [--from CHECK_JSON]
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IOWATCH = str(Path(sys.executable).parent / "iowatch")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--from", dest="source", default=None, help="a check.json to read")
    ap.add_argument("--clean", action="store_true", help="empty the build dir and ccache first")
    ap.add_argument("--matrix", default=str(ROOT / "jobs/e2e.yml"))
    args = ap.parse_args()
    if args.source:
        path = Path(args.source)
    else:
        if args.clean:
            from iowatch.kernel.source import cache_dir
            for d in ("build", "ccache"):
                shutil.rmtree(cache_dir() / d, ignore_errors=True)
        out = Path(tempfile.mkdtemp(prefix="iowatch-bench-kernel-"))
        subprocess.run([IOWATCH, "check", "--series", str(ROOT / "kernels/series/e2e-slow-ext4-dio"),
                        "--base", "debian-base", "--matrix", args.matrix, "--out", str(out),
                        "--no-store"])
        path = out / "check.json"
    s = json.loads(path.read_text())
    print(f"bench/kernel: series {s['series']} on {s['base'][:12]}")
    print(f"{'variant':>8} {'status':>12} {'build s':>8} {'kind':>12} {'accel':>6} {'boot s':>7} {'matrix s':>9}")
    clean = None
    for v in s["variants"]:
        kind = "incremental" if v["incremental"] else "clean"
        if not v["incremental"] and v["build_s"] is not None and clean is None:
            clean = v["build_s"]
        print(f"{v['index']:>8} {v['status']:>12} {v['build_s'] or 0:>8.0f} {kind:>12} "
              f"{v['accel'] or '-':>6} {v['boot_s'] or 0:>7.0f} {v['matrix_s'] or 0:>9.0f}")
    incs = [v["build_s"] for v in s["variants"] if v["incremental"] and v["build_s"]]
    if clean and incs:
        print(f"incremental build {sum(incs) / len(incs):.0f} s on average = "
              f"{100 * sum(incs) / len(incs) / clean:.1f}% of the clean build ({clean:.0f} s); goal < 10%")
    elif incs:
        print("every variant built incrementally (run with --clean for the clean-build figure)")
    print("phases: " + ", ".join(f"{k} {v:.0f} s" for k, v in s["phases_s"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
