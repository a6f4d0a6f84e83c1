"""Collect real samples for the accuracy benchmark in the virtual lab: A/A boots and
QEMU-throttled slowdowns of a built kernel's guest.

bench/accuracy/collect.py does this on the local target's loop devices with
cgroup v1 blkio rules; this is its virtual-lab half. Each boot is one guest of
the same bzImage (iowatch.vlab.boot_and_run, under TCG here, KVM on a lab host)
whose `vlab` disks carry the condition's QEMU block throttling, running
`iowatch run MATRIX --target vlab --reps K` inside (K = --reps-per-boot):

  aa      the inventory's own emulation (A/A: one kernel, booted again and again)
  slow10  QEMU throttling ceilings meant to cut the calibrated cells by 10%
  slow20  ... by 20%
  slow50  ... by 50%

The matrix is the quick profile of ext4-dio-randread (the ssd disk vssd, ext4
and raw) and odirect-vs-readers (the hdd disk vhdd, ext4). Which throttle:
`throttling.iops-read` on vssd slows the random reads (read.iops, calibrated on
the cell with the lower mean), `throttling.iops-write` and `throttling.bps-read`
on vhdd slow the direct writer (write.bw_kib_s, 4 KiB writes; a bps-write
ceiling at its 300 KiB/s slowed mkfs's journal zeroing to minutes) and the
buffered readers (read.bw_kib_s). vhdd keeps the inventory's own 150 IOPS limit under every
condition, split into 150 read and 150 write IOPS (QEMU takes no total limit
beside a read or write one). QEMU applies the limits to the guest's requests at the disk, below
the guest kernel, so they slow every process of the guest alike; the guest
kernel's cgroup v2 io.max (CONFIG_BLK_DEV_THROTTLING is in kernels/config) would
do the same from inside, at the cost of a wrapper around iowatch in the guest.

Calibration is one step, not collect.py's feedback search: each probe is a boot
(15-25 s under TCG before the matrix starts), so --calibration unthrottled boots
give each calibrated cell's distribution and the rule is the ceiling c with
mean(min(x, c)) / mean(x) = 1 - s on them (collect.ceiling_for). What the rules
really did is measured, not assumed: achieved_change_pct per cell, and
bench/accuracy/run.py groups real slowdowns by the size they reached.

The conditions are interleaved round by round in an order shuffled per round
(--seed). Each sample keeps the boot it came from (boot_of_samples), so the
share of the noise that lies between boots (a check compares a boot of the base
with a boot of the patch) can be read off: between_boot_share per cell.

As root, from the repository, after `./scripts/setup.sh --kernel` and a build
(`iowatch kernel build --base debian-base`):

    sudo .venv/bin/python bench/accuracy/collect_vlab.py --kernel BUILD_ARTIFACTS \\
        --rounds 8 --reps-per-boot 2 --out tests/fixtures/accuracy/real-samples-vlab.json
    sudo .venv/bin/python bench/accuracy/collect_vlab.py --kernel BUILD_ARTIFACTS \\
        --rounds 1 --calibration 1 --out /tmp/try.json

Recorded A/A boots of several device classes for bench/accuracy's whole-boot
draws (--matrix classes, MATRICES; no throttles, so no calibration boots):

    sudo .venv/bin/python bench/accuracy/collect_vlab.py --kernel BUILD_ARTIFACTS \\
        --matrix classes --conditions aa --rounds 20 --reps-per-boot 3 \\
        --out tests/fixtures/accuracy/real-boots-vlab.json

The output has collect.py's layout (cells with samples per condition), so
bench/accuracy/run.py reads both.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import shutil
import signal
import statistics
import sys
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from collect import (_git_head, _interrupt, ceiling_for, declared_samples,  # noqa: E402
                     machine_state, write_output)
from iowatch import bundle, inventory, vlab  # noqa: E402
from iowatch.studies import load_studies  # noqa: E402

# The matrices a collection can run: {name: matrix entries as a matrix file has them}.
# ssd-hdd is the collection of real-samples-vlab.json (A/A and throttled
# slowdowns); classes is the A/A collection of recorded boots
# (real-boots-vlab.json): a deciding cell or two of the sd card, the ssd and
# the hdd, each boot running them all. Timed in one boot here under TCG, a
# repetition took: the sd card 11-14 s, the ssd's raw device 6-7 s and its
# ext4 9 s, the hdd 10-12 s, the canary 6-7 s, the eMMC 33-39 s
# (f2fs-dio-write: QEMU's SD card emulation, of which vemmc is a second one)
# and the RAID0 44-46 s (xfs-smallfile-writeback), beside about 35 s of boot
# and start a boot. The eMMC and the RAID0 would triple a boot's time and
# ext4 adds a quarter: left out, so that 20 boots of 3 repetitions take under
# an hour. The canary comes with every matrix (iowatch.studies.with_canaries).
MATRICES = {
    "ssd-hdd": [
        {"study": "ext4-dio-randread", "device_classes": ["ssd"], "filesystems": ["ext4", "raw"]},
        {"study": "odirect-vs-readers", "device_classes": ["hdd"], "filesystems": ["ext4"]},
    ],
    "classes": [
        {"study": "f2fs-dio-write", "device_classes": ["sdcard"], "filesystems": ["f2fs"]},
        {"study": "ext4-dio-randread", "device_classes": ["ssd"], "filesystems": ["raw"]},
        {"study": "odirect-vs-readers", "device_classes": ["hdd"], "filesystems": ["ext4"]},
    ],
}
SLOWDOWNS = {"slow10": 0.10, "slow20": 0.20, "slow50": 0.50}
CONDITIONS = ("aa", *SLOWDOWNS)
INVENTORY = ROOT / "hardware-inventory.yml"
SSD, HDD = "vssd", "vhdd"
# (study, device, group, metric) -> (device whose QEMU throttle it sets, option, unit
# factor from the metric to the option's unit).
CALIBRATE = {
    ("ext4-dio-randread", SSD, "randread", "read.iops"): (SSD, "iops-read", 1),
    # The writer's 4 KiB direct writes: a write IOPS ceiling. A bps-write one slowed mkfs
    # too (it zeroes the journal: minutes at the writer's 300 KiB/s).
    ("odirect-vs-readers", HDD, "writer", "write.bw_kib_s"): (HDD, "iops-write", 1 / 4),
    ("odirect-vs-readers", HDD, "readers", "read.bw_kib_s"): (HDD, "bps-read", 1024),
}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class VlabCollector:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.bzimage = _bzimage(Path(args.kernel))
        # The guest sees the host's root read-only and this directory read-write
        # (its /tmp is its own), so the matrix, inventories and bundles live here.
        self.work = Path(args.work) if args.work else vlab.vlab_dir() / time.strftime(
            "accuracy-%Y%m%d-%H%M%S")
        self.work.mkdir(parents=True, exist_ok=True)
        (self.work / "jobs").mkdir(exist_ok=True)
        studies = self.work / "jobs" / "studies"
        if not studies.exists():
            studies.symlink_to(ROOT / "jobs" / "studies")
        self.matrix = self.work / "jobs" / "accuracy-vlab.yml"
        entries = MATRICES[args.matrix]
        self.matrix.write_text(yaml.safe_dump({"matrix": "accuracy-vlab", "profile": "quick",
                                               "reps": args.reps_per_boot, "studies": entries},
                                              sort_keys=False))
        loaded = load_studies(ROOT / "jobs" / "studies")
        self.studies = [e["study"] for e in entries] + [s for s in loaded if loaded[s].canary]
        self.declared = {s: {(m.group, m.metric): m.direction for m in loaded[s].metrics}
                         for s in self.studies}
        self.conditions = [c for c in CONDITIONS if c in args.conditions]
        self.base_devices = self._base_devices()
        self.rules: dict[str, dict[str, dict[str, int]]] = {"aa": {}}
        self.samples: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        self.boots_of: dict[tuple, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
        self.calibration: dict[tuple, list[float]] = defaultdict(list)
        self.directions: dict[tuple, str] = {}
        self.boots: list[dict] = []
        self.failed: dict[str, int] = defaultdict(int)
        self.done: dict[str, int] = defaultdict(int)

    def _base_devices(self) -> list[dict]:
        """The vlab host's devices of the matrix's classes as the inventory has
        them, their filesystems cut to those the matrix runs on them."""
        vlab_host = yaml.safe_load(INVENTORY.read_text())["all"]["children"]["virtual"]["hosts"]["vlab"]
        runs_on: dict[str, set[str]] = defaultdict(set)  # device class -> its filesystems
        for e in MATRICES[self.args.matrix]:
            for c in e["device_classes"]:
                runs_on[c].update(e["filesystems"])
        devices = [dict(d) for d in vlab_host["iowatch_devices"] if d["class"] in runs_on]
        for d in devices:
            d["filesystems"] = [fs for fs in d["filesystems"] if fs in runs_on[d["class"]]]
            d["qemu"] = dict(d.get("qemu") or {})
            throttle = dict(d["qemu"].get("throttle") or {})
            # QEMU refuses a total limit beside a read or write one: the conditions'
            # iops-write needs vhdd's 150 IOPS split into 150 read and 150 write, in
            # every condition alike (aa included).
            for kind in ("iops", "bps"):
                total = throttle.pop(f"{kind}-total", None)
                if total is not None:
                    throttle.update({f"{kind}-read": total, f"{kind}-write": total})
            if throttle:
                d["qemu"]["throttle"] = throttle
        return devices

    def _inventory(self, cond: str) -> Path:
        """An inventory whose vlab host carries `cond`'s throttling on top of its own."""
        devices = []
        for d in self.base_devices:
            throttle = dict(d["qemu"].get("throttle", {}))
            for option, value in self.rules[cond].get(d["name"], {}).items():
                # A rule only ever lowers the inventory's own limit.
                throttle[option] = min(value, throttle.get(option, value))
            d = {**d, "qemu": {**d["qemu"], **({"throttle": throttle} if throttle else {})}}
            devices.append(d)
        doc = {"all": {"children": {"virtual": {"hosts": {"vlab": {
            "ansible_connection": "local", "iowatch_kind": "qemu", "iowatch_devices": devices}}}}}}
        path = self.work / f"inventory-{cond}.yml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path

    # -- one boot ---------------------------------------------------------------

    def boot(self, cond: str, label: str) -> dict[tuple, list[float]] | None:
        """Boot the kernel with `cond`'s disks and run the matrix: {cell key: samples}."""
        inv = self._inventory(cond)
        host = inventory.load(inv).host("vlab")
        shared = self.work / label
        if shared.exists():
            shutil.rmtree(shared)
        out = shared / "bundle"
        cmd = vlab.guest_run_command(str(self.matrix), host, inv, out, profile="quick",
                                     reps=self.args.reps_per_boot, kernel_commit=None, label=label)
        # The guest runs this tree's iowatch, not the one the venv's script was
        # installed from (an editable install of another checkout, edited meanwhile).
        cmd[2:3] = [f"PYTHONPATH={ROOT / 'src'}", sys.executable, "-m", "iowatch.cli"]
        t0 = time.monotonic()
        result = vlab.boot_and_run(self.bzimage, host, cmd, shared, shared / "console.log",
                                   memory=self.args.memory, cpus=self.args.cpus, run_timeout=1800)
        wall = time.monotonic() - t0
        record = {"label": label, "condition": cond, "accel": result.accel, "boot_s": result.boot_s,
                  "wall_s": round(wall, 1), "status": result.status, "load_1min": os.getloadavg()[0]}
        self.boots.append(record)
        if result.status != "passed" or not (out / bundle.MANIFEST).is_file():
            record["reason"] = result.reason or f"the guest exited {result.exit_code} without a bundle"
            log(f"{label}: {result.status}: {record['reason']} (console {shared / 'console.log'})")
            return None
        doc = bundle.load(out)
        bad = [c["id"] for c in doc["cells"] if c["status"] not in ("passed", "skipped")]
        got = self._samples(doc)
        if bad or not got:
            record["reason"] = f"failed cells {bad}" if bad else "no samples"
            log(f"{label}: {record['reason']}: left out (bundle {out})")
            return None
        log(f"{label}: {result.accel} boot {result.boot_s or 0:.0f} s, wall {wall:.0f} s, "
            f"{sum(len(v) for v in got.values())} samples")
        return got

    def _samples(self, doc: dict) -> dict[tuple, list[float]]:
        got: dict[tuple, list[float]] = defaultdict(list)
        for key, value, direction in declared_samples(doc, self.declared):
            got[key].append(value)
            self.directions[key] = direction
        return got

    # -- the collection -------------------------------------------------------

    def calibrate(self) -> dict:
        log(f"calibration: {self.args.calibration} unthrottled boots")
        for i in range(self.args.calibration):
            for key, values in (self.boot("aa", f"cal{i + 1:02d}-aa") or {}).items():
                self.calibration[key].extend(values)
        chosen = {}
        for (study, device, group, metric), (dev, option, unit) in CALIBRATE.items():
            cells = [k for k in self.calibration if k[0] == study and k[1] == device
                     and k[3] == group and k[4] == metric]
            if not cells:
                raise RuntimeError(f"the calibration boots gave no {study} {group} {metric} on {device}")
            key = min(cells, key=lambda k: statistics.mean(self.calibration[k]))
            chosen[f"{dev} {option}"] = "/".join(str(k) for k in key)
            for cond, target in SLOWDOWNS.items():
                value = max(1, round(ceiling_for(self.calibration[key], target) * unit))
                self.rules.setdefault(cond, {}).setdefault(dev, {})[option] = value
        log(f"rules (ceiling model): {json.dumps(self.rules)}")
        return {"method": (f"one step: the ceiling c with mean(min(x, c)) / mean(x) = 1 - target on the "
                           f"samples of {self.args.calibration} unthrottled calibration boots of the "
                           "calibrated cell (no feedback search: each probe is a boot)"),
                "calibrated_cells": chosen,
                "aa_reference": {"/".join(str(k) for k in key): v for key, v in self.calibration.items()}}

    def collect(self) -> dict:
        t0 = self.t0 = time.monotonic()
        at = self.at = {"start": machine_state()}
        if self.conditions == ["aa"]:
            # Recorded boots alone: no throttle to set, so no calibration boots.
            calibration = self.calibration_record = {"method": "none: A/A boots only",
                                                     "calibrated_cells": {}}
        else:
            calibration = self.calibration_record = self.calibrate()
            at["after_calibration"] = machine_state()
        rng = random.Random(self.args.seed)
        for r in range(self.args.rounds):
            order = list(self.conditions)
            rng.shuffle(order)
            for cond in order:
                got = self.boot(cond, f"r{r + 1:02d}-{cond}")
                if got is None:
                    self.failed[cond] += 1
                    continue
                self.done[cond] += 1
                boot_index = len(self.boots) - 1
                for key, values in got.items():
                    self.samples[key][cond].extend(values)
                    self.boots_of[key][cond].extend([boot_index] * len(values))
        at["end"] = machine_state()
        return self.result(calibration, at, time.monotonic() - t0)

    def result(self, calibration: dict, at: dict, seconds: float) -> dict:
        calibrated = set(calibration["calibrated_cells"].values())
        cells = []
        for key in sorted(self.samples):
            by_cond, aa = self.samples[key], self.samples[key].get("aa", [])
            change = {cond: (round((statistics.mean(by_cond[cond]) / statistics.mean(aa) - 1) * 100, 2)
                             if by_cond.get(cond) and aa else None) for cond in SLOWDOWNS}
            name = "/".join(str(k) for k in key)
            cells.append({
                "study": key[0], "device": key[1], "filesystem": key[2], "group": key[3],
                "metric": key[4], "direction": self.directions[key],
                "throttled": any(self.rules.get(c, {}).get(key[1]) for c in SLOWDOWNS),
                "calibrated_on": name in calibrated,
                "samples": {c: by_cond.get(c, []) for c in self.conditions},
                "boot_of_samples": {c: self.boots_of[key].get(c, []) for c in self.conditions},
                "between_boot_share": between_boot_share(by_cond.get("aa", []),
                                                         self.boots_of[key].get("aa", [])),
                "calibration_samples": self.calibration.get(key, []),
                "achieved_change_pct": change,
                **({} if name in calibrated or self.conditions == ["aa"] else {
                    "not_calibrated": "shares its disk's throttle with the calibrated cell: "
                                      "its slowdown is whatever that rule gives it"}),
            })
        walls = defaultdict(list)
        for b in self.boots:
            if b["status"] == "passed":
                walls[b["condition"]].append(b["wall_s"])
        uname = platform.uname()
        return {
            "made_by": " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv]),
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "host": {"kernel": uname.release, "cpus": os.cpu_count(), "iowatch_commit": _git_head()},
            "guest": {"bzimage": str(self.bzimage), "memory": self.args.memory, "cpus": self.args.cpus,
                      "accel": sorted({b["accel"] for b in self.boots})},
            "how": (
                "Real runs in the virtual lab: each boot is a QEMU guest of one bzImage (virtme-ng, "
                "the host's root over 9p) with the inventory's vlab disks "
                + "; ".join(f"{d['name']} ({d['class']}, {d['qemu'].get('bus', 'virtio-blk')}"
                            f"{', throttle ' + json.dumps(d['qemu']['throttle']) if d['qemu'].get('throttle') else ''})"
                            for d in self.base_devices)
                + " (a total IOPS or bps limit split into equal read and write ones, which QEMU takes "
                "beside the conditions' read or write ones), running `iowatch run` of the quick profile "
                f"of the matrix {self.args.matrix} ({json.dumps(MATRICES[self.args.matrix])}, and the "
                f"canary) with {self.args.reps_per_boot} repetitions per boot. "
                "'aa' boots the inventory's disks as they are: repeated boots of one kernel. slowN adds "
                "QEMU block throttling (iops-read on vssd, iops-write and bps-read on vhdd) set by a "
                "ceiling model on the calibration boots (calibration.method); achieved_change_pct is "
                "mean(slowed) / mean(aa) - 1 per cell in this collection. Conditions were interleaved "
                f"round by round in an order shuffled per round (seed {self.args.seed}). Samples are each "
                "repetition's group-level samples (job null) of the metrics the study declares; a boot "
                "with a failed cell is left out and counted in failed_boots. boot_of_samples gives the "
                "index into boots of each sample (every cell of one boot has the same index); "
                "between_boot_share is the share of the aa variance "
                "that lies between boots (one-way ANOVA estimate, 0 when the boots differ less than "
                "the repetitions inside them)."),
            "matrix": {"name": self.args.matrix, "studies": MATRICES[self.args.matrix]},
            "conditions": self.conditions,
            "reps_per_condition": {c: n * self.args.reps_per_boot for c, n in self.done.items()},
            "reps_per_boot": self.args.reps_per_boot,
            "completed_boots": dict(self.done),
            "failed_boots": {c: self.failed.get(c, 0) for c in self.conditions},
            "mean_boot_wall_s": {c: round(statistics.mean(v), 1) for c, v in walls.items()},
            "wall_s": round(seconds),
            "machine": at,
            "calibration": calibration,
            "throttle": {cond: {dev: {f"throttling.{k}": v for k, v in opts.items()}
                                for dev, opts in per.items()} for cond, per in self.rules.items()},
            "boots": self.boots,
            "cells": cells,
        }


def between_boot_share(values: list[float], boots: list[int]) -> float | None:
    """The share of the variance of `values` between the boots they came from:
    the one-way random-effects ANOVA estimate s_b^2 / (s_b^2 + s_w^2), with
    s_b^2 = (MSB - MSW) / k for k values a boot, floored at 0."""
    groups: dict[int, list[float]] = defaultdict(list)
    for v, b in zip(values, boots):
        groups[b].append(v)
    sizes = {len(g) for g in groups.values()}
    if len(groups) < 2 or len(sizes) != 1 or sizes == {1}:
        return None
    k = sizes.pop()
    grand = statistics.mean(values)
    msb = k * sum((statistics.mean(g) - grand) ** 2 for g in groups.values()) / (len(groups) - 1)
    msw = sum(sum((v - statistics.mean(g)) ** 2 for v in g) for g in groups.values()) / (
        len(groups) * (k - 1))
    between = max(0.0, (msb - msw) / k)
    return round(between / (between + msw), 3) if between + msw else None


def _bzimage(path: Path) -> Path:
    image = path / "bzImage" if path.is_dir() else path
    if not image.is_file():
        sys.exit(f"{path}: no bzImage there; build one with `iowatch kernel build --base debian-base` "
                 "and pass its artifacts directory")
    return image


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kernel", required=True, help="a bzImage, or a build's artifacts directory")
    p.add_argument("--matrix", choices=sorted(MATRICES), default="ssd-hdd",
                   help="the cells each boot runs (MATRICES; default ssd-hdd)")
    p.add_argument("--conditions", default=",".join(CONDITIONS),
                   help="comma-separated conditions to boot (default all; 'aa' alone: "
                        "recorded A/A boots, no calibration)")
    p.add_argument("--rounds", type=int, default=8, help="boots per condition (default 8)")
    p.add_argument("--reps-per-boot", type=int, default=2, help="repetitions in each boot (default 2)")
    p.add_argument("--calibration", type=int, default=2, help="unthrottled calibration boots (default 2)")
    p.add_argument("--seed", type=int, default=2026, help="seed of the per-round order")
    p.add_argument("--memory", default="2G", help="guest memory (default 2G)")
    p.add_argument("--cpus", type=int, default=2, help="guest CPUs (default 2)")
    p.add_argument("--work", default=None, help="where the guests' bundles and consoles go "
                   "(default: a new directory in the virtual lab's data directory; kept)")
    p.add_argument("--out", required=True, help="the JSON file to write")
    args = p.parse_args()
    args.conditions = args.conditions.split(",")
    unknown = set(args.conditions) - set(CONDITIONS)
    if unknown or "aa" not in args.conditions:
        p.error(f"--conditions: {', '.join(CONDITIONS)}, with aa among them (not {args.conditions})")
    if os.geteuid() != 0:
        sys.exit("needs root: the guest makes filesystems and runs fio on its disks")
    signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM writes what was collected, as Ctrl-C does
    c = VlabCollector(args)
    try:
        doc = c.collect()
    except (KeyboardInterrupt, vlab.GuestStopped):
        # SIGTERM in a boot reaches us as the guest's GuestStopped (vlab stops the guest first).
        print(f"interrupted; the boots so far are in {c.work}", file=sys.stderr)
        if getattr(c, "calibration_record", None) and c.samples:
            # The rounds done so far are a collection too, with fewer repetitions.
            c.at["end"] = machine_state()
            write_output(Path(args.out), c.result(c.calibration_record, c.at, time.monotonic() - c.t0))
        return 130
    write_output(Path(args.out), doc)
    log(f"the boots' bundles and consoles are in {c.work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
