"""bench/kernel: what a guest kernel costs on this machine, old base beside new.

Two parts, each printed as a table:

- `--bases allnoconfig vng` (the default): for each config base on the same
  Debian 6.12 tree, in a build directory of its own with ccache off, the
  configure time, the clean build's time and object count, the incremental
  build after a one-file patch (patch 2 of kernels/series/e2e-slow-ext4-dio,
  fs/ext4/file.c), and the boot of the bzImage under TCG to the guest's first
  command (the virtual lab's qemu host, `true` as the command). Goals: the new
  base's clean build at least 3x faster than the old, at most 1,200 objects.
- `--check cold|warm`: `iowatch check` of kernels/series/e2e-slow-ext4-dio with
  one study (jobs/e2e.yml) and the phases it prints: cold with a new data
  directory (the source unpacked, nothing built, ccache empty), warm with the
  one the cold run left. Goals: cold <= 30 min to the verdict, warm <= 10 min.
  `--from CHECK_JSON` prints the same table from a check that already ran.

Usage:
  .venv/bin/python bench/kernel/run.py [--bases allnoconfig vng] [--jobs N]
  .venv/bin/python bench/kernel/run.py --check cold --data-dir DIR
  .venv/bin/python bench/kernel/run.py --check warm --data-dir DIR
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
SERIES = ROOT / "kernels/series/e2e-slow-ext4-dio"
ONE_FILE_PATCH = sorted(SERIES.glob("0002-*.patch"))[0]
VLAB_HOST = "vlab"  # the inventory's virtual-lab host: its emulated disks are attached


def bench_bases(bases: list[str], jobs: int, keep: bool) -> int:
    from iowatch.kernel import build, source
    tree = source.debian_source()
    root = source.cache_dir() / "bench-kernel"
    work = root / "src"
    if not (work / ".git").exists():
        root.mkdir(parents=True, exist_ok=True)
        source.git(tree, "worktree", "prune")
        source.git(tree, "worktree", "add", "-f", "--detach", str(work), source.BASE_TAG)
    rows = []
    for base in bases:
        source.git(work, "checkout", "-q", "-f", source.BASE_TAG)
        out = root / f"build-{base}"
        shutil.rmtree(out, ignore_errors=True)
        t0 = time.monotonic()
        build.make_config(work, out, build.default_fragments(), base=base)
        configure_s = time.monotonic() - t0
        clean_s, steps = _make(work, out, jobs)
        # Objects: the .o files the clean build left (kernel and host tools such as
        # objtool); steps: kbuild's compile, assemble, link and archive lines.
        objects = sum(1 for _ in out.rglob("*.o"))
        source.git(work, "apply", str(ONE_FILE_PATCH))
        incremental_s, inc_steps = _make(work, out, jobs)
        source.git(work, "checkout", "-q", "-f", source.BASE_TAG)
        image = out / "arch/x86/boot/bzImage"
        rows.append({"base": base, "configure_s": configure_s, "clean_s": clean_s,
                     "steps": steps, "objects": objects, "incremental_s": incremental_s,
                     "incremental_steps": inc_steps, "bzimage_kib": image.stat().st_size // 1024,
                     "boot_s": _boot(image)})
        print(json.dumps(rows[-1]), flush=True)
        if not keep:
            shutil.rmtree(out, ignore_errors=True)
    print(f"\nbench/kernel: config bases on Debian 6.12 ({source.BASE_TAG}), make -j{jobs}, "
          "ccache off")
    print(f"{'base':>12} {'configure s':>12} {'clean s':>8} {'steps':>6} {'objects':>8} "
          f"{'1-file s':>9} {'bzImage KiB':>12} {'TCG boot s':>11}")
    for r in rows:
        boot = f"{r['boot_s']:.1f}" if r["boot_s"] is not None else "failed"
        print(f"{r['base']:>12} {r['configure_s']:>12.0f} {r['clean_s']:>8.0f} {r['steps']:>6} "
              f"{r['objects']:>8} "
              f"{r['incremental_s']:>9.0f} {r['bzimage_kib']:>12} {boot:>11}")
    by = {r["base"]: r for r in rows}
    if "allnoconfig" in by and "vng" in by:
        new, old = by["allnoconfig"], by["vng"]
        ratio = old["clean_s"] / new["clean_s"]
        print(f"clean build {ratio:.1f}x faster ({old['clean_s']:.0f} s -> {new['clean_s']:.0f} s; "
              f"goal >= 3x: {'met' if ratio >= 3 else 'NOT met'}); objects {old['objects']} -> "
              f"{new['objects']} (goal <= 1,200: {'met' if new['objects'] <= 1200 else 'NOT met'})")
    return 0


def _make(work: Path, out: Path, jobs: int) -> tuple[float, int]:
    from iowatch.kernel import build
    env = dict(os.environ, CCACHE_DISABLE="1")
    t0 = time.monotonic()
    proc = subprocess.run(["make", "-C", str(work), f"O={out}", f"-j{jobs}", "bzImage"], env=env,
                          capture_output=True, text=True)
    elapsed = time.monotonic() - t0
    if proc.returncode:
        sys.exit(f"bench/kernel: make in {out} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return elapsed, sum(1 for line in proc.stdout.splitlines() if build.is_object_step(line))


def _boot(image: Path) -> float | None:
    """Seconds from QEMU's start to the guest's first command, as the virtual lab boots."""
    from iowatch import inventory
    from iowatch.vlab import boot_and_run
    host = inventory.load(inventory.default_path()).host(VLAB_HOST)
    shared = Path(tempfile.mkdtemp(prefix="iowatch-bench-boot-"))
    try:
        result = boot_and_run(image, host, ["true"], shared, shared / "console.log")
        return result.boot_s if result.status == "passed" else None
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def bench_check(kind: str, data_dir: Path | None, source_json: Path | None) -> int:
    if source_json is None:
        if data_dir is None:
            sys.exit("bench/kernel: --check needs --data-dir (cold: a new one; warm: the cold run's)")
        if kind == "cold" and data_dir.exists() and any(data_dir.iterdir()):
            sys.exit(f"bench/kernel: --check cold wants an empty data dir; {data_dir} is not")
        data_dir.mkdir(parents=True, exist_ok=True)
        out = Path(tempfile.mkdtemp(prefix=f"iowatch-bench-check-{kind}-"))
        env = dict(os.environ, IOWATCH_DATA_DIR=str(data_dir))
        env.pop("CCACHE_DIR", None)  # the data dir's own ccache: empty when cold
        t0 = time.monotonic()
        subprocess.run([IOWATCH, "check", "--series", str(SERIES), "--base", "debian-base",
                        "--matrix", str(ROOT / "jobs/e2e.yml"), "--out", str(out), "--no-store",
                        "--no-progress"], env=env)
        wall = time.monotonic() - t0
        source_json = out / "check.json"
    else:
        wall = None
    s = json.loads(source_json.read_text())
    print(f"bench/kernel: {kind} check of {s['series']} on {s['base'][:12]} ({source_json})")
    print(f"{'variant':>8} {'status':>12} {'build s':>8} {'kind':>12} {'accel':>6} {'boot s':>7} "
          f"{'matrix s':>9}")
    for v in s["variants"]:
        kind_v = "incremental" if v["incremental"] else "clean"
        print(f"{v['index']:>8} {v['status']:>12} {v['build_s'] or 0:>8.0f} {kind_v:>12} "
              f"{v['accel'] or '-':>6} {v['boot_s'] or 0:>7.0f} {v['matrix_s'] or 0:>9.0f}")
    print("phases: " + ", ".join(f"{k} {v:.0f} s" for k, v in s["phases_s"].items()))
    total = s["phases_s"].get("total", wall)
    if wall is not None:
        print(f"wall time of `iowatch check` {wall / 60:.1f} min (the source unpacked inside it "
              "when cold)")
    goal = 30 if kind == "cold" else 10
    if total is not None:
        print(f"{kind}: {total / 60:.1f} min to the verdict (goal <= {goal} min: "
              f"{'met' if total <= goal * 60 else 'NOT met'})")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--bases", nargs="+", default=["allnoconfig", "vng"])
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--keep", action="store_true", help="keep the bench's build directories")
    ap.add_argument("--check", choices=("cold", "warm"))
    ap.add_argument("--data-dir", type=Path)
    ap.add_argument("--from", dest="source", type=Path, help="a check.json to read")
    args = ap.parse_args()
    if args.check or args.source:
        return bench_check(args.check or "recorded", args.data_dir, args.source)
    return bench_bases(args.bases, args.jobs, args.keep)


if __name__ == "__main__":
    sys.exit(main())
