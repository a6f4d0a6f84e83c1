"""Collect real samples for the accuracy benchmark: A/A repetitions and throttled slowdowns.

Runs a small matrix of the quick profile (odirect-vs-readers,
xfs-smallfile-writeback, ext4-dio-randread; one repetition per run) on the
local target's loop devices under four conditions:

  aa      no throttle (A/A: the same kernel, the same machine, again and again)
  slow10  cgroup v1 blkio throttles found to cut the calibrated cells by 10%
  slow20  ... by 20%
  slow50  ... by 50%

Each repetition is one `iowatch run MATRIX --target localhost --reps 1`, started
by a tiny shell that first writes its own PID into the condition's blkio cgroup
(/sys/fs/cgroup/blkio/iowatch-accuracy-<cond>) and then execs iowatch, so iowatch
and its children (fio, fs_mark, mkfs) all run in that cgroup and nothing else
does. The conditions are interleaved round by round, in an order shuffled
within each round with a fixed seed, so that drift of the machine's load hits
every condition alike.

Which throttle: this host mounts cgroup v1 controllers, blkio among them, and a
cgroup2 hierarchy at /sys/fs/cgroup/unified whose cgroup.controllers offers no
`io` (a controller bound to v1 cannot be enabled in v2), so io.max is not
available here; blkio.throttle.{read,write}_{bps,iops}_device is what works. Its
rules are per device: write_bps and read_bps on the hdd loop device slow
odirect-vs-readers' writer (write.bw_kib_s) and readers (read.bw_kib_s), and
read_iops on the ssd loop device slows ext4-dio-randread (read.iops, of the ext4
and of the raw cell alike: the rule is calibrated on the cell with the lower
mean, the other gets what it gets and is marked so).

Calibration by feedback. A throttle is a ceiling, not a proportional slowdown:
the old rule, (1 - s) x the unthrottled median, cut the cells by 24-76% for
s = 10/20/50% (a right-skewed cell loses its upper tail). So now: N unthrottled
calibration runs (--calibration) give each calibrated cell's distribution; the
first rule is the ceiling c with mean(min(x, c)) / mean(x) = 1 - s on them (the
cut a constant-rate run would take); then in up to --max-steps steps,
--probes probe runs per condition (beside one unthrottled probe per round, which
keeps the reference mean current) measure the achieved slowdown, 1 - mean of
the probes at that rule / mean of all unthrottled probes, and every rule more
than --tolerance points off its target moves by a secant in log(rule) (see
next_rule). Probe runs run only the throttled studies. A condition whose rules
are not all within tolerance after the last step is collected at the probed
rules that came closest, and the output says so (calibration.conditions.<cond>.
within_tolerance false; each calibrated cell's within_tolerance says whether the
collection itself hit the target). The probes, the rules tried, the final rules
and the achieved slowdowns are in the output's "calibration". fs_mark's
writeback is done by kernel flusher threads that v1 blkio does not throttle: the
xfs-smallfile-writeback cells are collected under every condition all the same
and marked "throttled": false (they are the unchanged cells). The machine's
load (uptime, and whether a QEMU guest ran) at the start, after the calibration
and at the end, and the range of the 1-minute load before each run, are in
"machine".

The loop devices are attached once before the first run (`iowatch device
attach localhost`), and every `iowatch run` reuses them; their major:minor are
checked before each repetition and the rules rewritten if they changed. The
cgroups are removed and the loop devices detached at the end, also on a failure
or Ctrl-C. Samples: every group-level sample (job null) of the metrics each
study declares in its `metrics:` list, read from each repetition's bundle;
failed repetitions are skipped and counted.

As root, from the repository (about 50 minutes with --reps 20: 15-25 for the search):

    sudo .venv/bin/python bench/accuracy/collect.py --reps 20 --out tests/fixtures/accuracy/real-samples-calibrated.json
    sudo .venv/bin/python bench/accuracy/collect.py --reps 1 --calibration 2 --probes 1 --max-steps 2 --out /tmp/try.json
    sudo .venv/bin/python bench/accuracy/collect.py --reps 20 --images-on /dev/shm --out /tmp/in-memory.json

iowatch is run as `python -m iowatch.cli` from this checkout's src/ (PYTHONPATH),
so a worktree of another commit collects with its own code.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from iowatch import bundle, inventory, loopdev  # noqa: E402
from iowatch.studies import load_studies  # noqa: E402

STUDIES = ("odirect-vs-readers", "xfs-smallfile-writeback", "ext4-dio-randread")
SLOWDOWNS = {"slow10": 0.10, "slow20": 0.20, "slow50": 0.50}
CONDITIONS = ("aa", *SLOWDOWNS)
# The calibration's probe runs leave out the study no rule slows (it would only cost time).
PROBE_STUDIES = ("odirect-vs-readers", "ext4-dio-randread")
CGROUP_ROOT = Path("/sys/fs/cgroup/blkio")
INVENTORY = ROOT / "hardware-inventory.yml"
HDD, SSD = "loop-hdd", "loop-ssd"
# What each throttle is calibrated on: (study, device, filesystem or None for any, group, metric)
# -> (device whose rule it sets, rule file, unit factor from the metric to the rule's unit).
CALIBRATE = {
    ("odirect-vs-readers", HDD, None, "writer", "write.bw_kib_s"): (HDD, "write_bps_device", 1024),
    ("odirect-vs-readers", HDD, None, "readers", "read.bw_kib_s"): (HDD, "read_bps_device", 1024),
    ("ext4-dio-randread", SSD, None, "randread", "read.iops"): (SSD, "read_iops_device", 1),
}
UNTHROTTLED_STUDIES = {"xfs-smallfile-writeback": "fs_mark's writeback is issued by kernel flusher "
                       "threads, which cgroup v1 blkio does not throttle; its device has no rule"}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Collector:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        # --images-on: the loop devices' image files (and the bundles) go there. On a
        # tmpfs (/dev/shm) the loop devices do direct I/O to memory, and the noise is
        # the kernel's and the CPU's alone rather than also the disk under /tmp's.
        self.tmp = Path(tempfile.mkdtemp(prefix="iowatch-collect-", dir=args.images_on))
        self.images_fs = subprocess.run(["stat", "-f", "-c", "%T", str(self.tmp)],
                                        capture_output=True, text=True).stdout.strip()
        self.data_dir = self.tmp / "data"
        self.env = {**os.environ, "IOWATCH_DATA_DIR": str(self.data_dir),
                    "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"),
                                                                os.environ.get("PYTHONPATH")]))}
        self.iowatch = [sys.executable, "-m", "iowatch.cli"]
        self.matrix = self._write_matrix("accuracy-collect", STUDIES)
        self.probe_matrix = self._write_matrix("accuracy-probe", PROBE_STUDIES)
        self.loads: list[float] = []  # the 1-minute load average before each repetition
        self.cgroups: dict[str, Path] = {}
        self.attached = False
        self.majmin: dict[str, str] = {}      # loop device name -> "major:minor" the rules use
        self.rules: dict[str, dict[str, dict[str, int]]] = {}  # cond -> device -> rule file -> value
        self.declared = {s: {(m.group, m.metric): m.direction
                             for m in load_studies(ROOT / "jobs" / "studies")[s].metrics}
                         for s in STUDIES}
        # (study, device, filesystem, group, metric) -> condition -> samples, one per repetition
        self.samples: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        self.directions: dict[tuple, str] = {}
        self.failed: dict[str, int] = defaultdict(int)
        self.done: dict[str, int] = defaultdict(int)
        self.rep_seconds: dict[str, list[float]] = defaultdict(list)
        self.child: subprocess.Popen | None = None
        self.aa_ref: dict[tuple, list[float]] = defaultdict(list)  # unthrottled probe samples
        self.calibrated: dict[tuple[str, str], tuple[tuple, int]] = {}  # rule -> (cell key, unit)
        self.conditions_at: dict[str, dict] = {}  # load and other guests at start and end

    # -- set-up ------------------------------------------------------------

    def _write_matrix(self, name: str, studies: tuple[str, ...]) -> Path:
        jobs = self.tmp / "jobs"
        if not jobs.exists():
            jobs.mkdir()
            (jobs / "studies").symlink_to(ROOT / "jobs" / "studies")  # a matrix finds studies beside it
        matrix = jobs / f"{name}.yml"
        matrix.write_text(f"matrix: {name}\nprofile: quick\nreps: 1\nstudies:\n"
                          + "".join(f"  - study: {s}\n" for s in studies))
        return matrix

    def _iowatch(self, *argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([*self.iowatch, *argv], cwd=ROOT, env=self.env,
                              capture_output=True, text=True)

    def attach(self) -> None:
        self.attached = True  # detach even if attaching fails half-way
        r = self._iowatch("device", "attach", "localhost", "--inventory", str(INVENTORY))
        if r.returncode != 0:
            raise RuntimeError(f"iowatch device attach failed:\n{r.stdout}{r.stderr}")
        log("attached:\n" + r.stdout.strip())
        self.refresh_devices()

    def refresh_devices(self) -> bool:
        """Read the loop devices' numbers; True when they changed since the last look."""
        host = inventory.load(INVENTORY).host("localhost")
        by_image = {d.image: d.name for d in host.devices if d.is_image}
        now = {}
        for loop in loopdev.attached(self.data_dir):
            name = by_image.get(os.path.basename(loop.backing_file))
            if name:
                st = os.stat(loop.path)
                now[name] = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
        missing = {HDD, SSD} - set(now)
        if missing:
            raise RuntimeError(f"loop devices not attached: {sorted(missing)}")
        changed = now != self.majmin
        self.majmin = now
        return changed

    def make_cgroups(self) -> None:
        for cond in CONDITIONS:
            path = CGROUP_ROOT / f"iowatch-accuracy-{cond}"
            path.mkdir(exist_ok=True)
            self.cgroups[cond] = path

    def apply_rules(self, old: dict[str, str] | None = None) -> None:
        """Write each condition's rules; with `old` numbers, clear the rules of those first."""
        for cond, per_device in self.rules.items():
            for device, files in per_device.items():
                for fname, value in files.items():
                    f = self.cgroups[cond] / f"blkio.throttle.{fname}"
                    if old and old.get(device) and old[device] != self.majmin[device]:
                        f.write_text(f"{old[device]} 0\n")  # 0 removes the rule
                    f.write_text(f"{self.majmin[device]} {value}\n")

    # -- one repetition ----------------------------------------------------

    def run_rep(self, cond: str, label: str) -> bool:
        """One repetition of the full matrix in `cond`; its samples go to self.samples."""
        got = self.run_once(cond, label, self.matrix, set(self.directions) or None)
        if got is None:
            return False
        for key, (value, direction) in got.items():
            self.samples[key][cond].append(value)
            self.directions[key] = direction
        return True

    def run_once(self, cond: str, label: str, matrix: Path,
                 want: set | None) -> dict[tuple, tuple[float, str]] | None:
        """Run `matrix` once in `cond`'s cgroup: {cell key: (value, direction)}, or None
        when the repetition failed (a failed one gives no samples at all, so every
        condition's lists stay aligned by repetition)."""
        old = dict(self.majmin)
        if self.refresh_devices():
            log(f"loop devices changed {old} -> {self.majmin}: rules rewritten")
            self.apply_rules(old)
        self.loads.append(os.getloadavg()[0])
        out = self.tmp / "bundles" / label
        procs = self.cgroups[cond] / "cgroup.procs"
        cmd = ["sh", "-c", 'p="$1"; shift; echo $$ > "$p" && exec "$@"', "sh", str(procs),
               *self.iowatch, "run", str(matrix), "--target", "localhost",
               "--inventory", str(INVENTORY), "--reps", "1", "--out", str(out), "--no-progress"]
        t0 = time.monotonic()
        with open(self.tmp / f"{label}.log", "w") as logf:
            self.child = subprocess.Popen(cmd, cwd=ROOT, env=self.env, stdout=logf,
                                          stderr=subprocess.STDOUT)
            rc = self.child.wait()
            self.child = None
        seconds = time.monotonic() - t0
        self.rep_seconds[cond if matrix == self.matrix else "probe-" + cond].append(seconds)
        try:
            doc = bundle.load(out)
        except bundle.BundleError as e:
            log(f"{label}: exit {rc}, no readable bundle ({e}); see {self.tmp / (label + '.log')}")
            return None
        got = self._samples(doc)
        bad = [c["id"] for c in doc["cells"] if c["status"] not in ("passed", "skipped")]
        if rc not in (0, 1) or bad or not got or (want is not None and set(got) != want):
            log(f"{label}: exit {rc}, failed cells {bad or '-'}: skipped "
                f"(see {self.tmp / (label + '.log')})")
            return None
        log(f"{label}: {seconds:.0f} s, {len(got)} samples")
        return got

    def _samples(self, doc: dict) -> dict[tuple, tuple[float, str]]:
        return {key: (value, direction) for key, value, direction in declared_samples(doc, self.declared)}

    # -- calibration by feedback ------------------------------------------

    def _aa_mean(self, key: tuple) -> float:
        return statistics.mean(self.aa_ref[key])

    def calibrate(self) -> dict:
        """Search each condition's rules until the calibrated cells lose their target share.

        Returns the record of the search that goes into the output's "calibration"."""
        args, tol = self.args, self.args.tolerance / 100
        log(f"calibration: {args.calibration} unthrottled probe repetitions")
        for i in range(args.calibration):
            got = self.run_once("aa", f"cal{i + 1:02d}-aa", self.probe_matrix, set(self.aa_ref) or None)
            for key, (value, _) in (got or {}).items():
                self.aa_ref[key].append(value)
        for (study, device, fs, group, metric), (rule_dev, fname, unit) in CALIBRATE.items():
            cells = [k for k in self.aa_ref if k[0] == study and k[1] == device
                     and (fs is None or k[2] == fs) and k[3] == group and k[4] == metric]
            if not cells:
                raise RuntimeError(f"calibration gave no {study} {group} {metric} on {device}")
            # One rule per device: calibrate on the cell it slows least (the lowest mean).
            self.calibrated[(rule_dev, fname)] = (min(cells, key=self._aa_mean), unit)
        state = {}
        for cond, target in SLOWDOWNS.items():
            self.rules[cond] = defaultdict(dict)
            for (dev, fname), (key, unit) in self.calibrated.items():
                self.rules[cond][dev][fname] = max(1, round(ceiling_for(self.aa_ref[key], target) * unit))
            state[cond] = {"target_pct": -100 * target, "within_tolerance": False, "steps": 0,
                           "probes": {f"{dev} {fname}": [] for dev, fname in self.calibrated}}
        self.rules["aa"] = {}
        self.apply_rules()
        log(f"first rules (ceiling model on the calibration runs): {json.dumps(self.rules_shown())}")
        rng = random.Random(args.seed + 1)
        for step in range(1, args.max_steps + 1):
            searching = [c for c in SLOWDOWNS if not state[c]["within_tolerance"]]
            if not searching:
                break
            for p in range(args.probes):
                order = ["aa", *searching]  # an aa probe beside each round keeps the reference current
                rng.shuffle(order)
                for cond in order:
                    got = self.run_once(cond, f"step{step}-{p + 1}-{cond}", self.probe_matrix,
                                        set(self.aa_ref))
                    if got is None:
                        self.failed["probe"] += 1
                        continue
                    if cond == "aa":
                        for key, (value, _) in got.items():
                            self.aa_ref[key].append(value)
                        continue
                    for (dev, fname), (key, unit) in self.calibrated.items():
                        probes = state[cond]["probes"][f"{dev} {fname}"]
                        value = self.rules[cond][dev][fname]
                        if not probes or probes[-1]["rule"] != value:
                            probes.append({"step": step, "rule": value, "cell": "/".join(
                                str(k) for k in key), "samples": []})
                        probes[-1]["samples"].append(got[key][0])
            for cond in searching:
                target, ok = SLOWDOWNS[cond], True
                state[cond]["steps"] = step
                for (dev, fname), (key, unit) in self.calibrated.items():
                    probes = state[cond]["probes"][f"{dev} {fname}"]
                    if not probes:
                        ok = False
                        continue
                    for pr in probes:  # against the reference as it stands now
                        pr["achieved_pct"] = round(-100 * slowdown(pr["samples"], self.aa_ref[key]), 2)
                    achieved = -probes[-1]["achieved_pct"] / 100
                    if abs(achieved - target) <= tol:
                        continue
                    ok = False
                    points = [(pr["rule"], -pr["achieved_pct"] / 100) for pr in probes]
                    self.rules[cond][dev][fname] = next_rule(points, target, tol)
                state[cond]["within_tolerance"] = ok
                log(f"step {step} {cond}: " + ", ".join(
                    f"{name} {pr[-1]['rule']} -> {pr[-1]['achieved_pct']:+.1f}%"
                    for name, pr in state[cond]["probes"].items() if pr)
                    + (" (within tolerance)" if ok else f"; next {dict(self.rules[cond])}"))
            self.apply_rules()
        for cond, target in SLOWDOWNS.items():  # the rules collected with, and what the search saw
            st = state[cond]
            if not st["within_tolerance"]:
                # Out of steps: collect at the probed rule that came closest, not at an unprobed move.
                for (dev, fname) in self.calibrated:
                    probes = st["probes"][f"{dev} {fname}"]
                    if probes:
                        best = min(probes, key=lambda pr: abs(pr["achieved_pct"] + 100 * target))
                        self.rules[cond][dev][fname] = best["rule"]
                        probes.append(probes.pop(probes.index(best)))  # the last entry is the one used
                self.apply_rules()
            st["final_rules"] = {f"{dev} {fname}": self.rules[cond][dev][fname] for dev, fname in self.calibrated}
            st["search_achieved_pct"] = {
                name: (pr[-1]["achieved_pct"] if pr and pr[-1]["rule"] == st["final_rules"][name] else None)
                for name, pr in st["probes"].items()}
            if not st["within_tolerance"]:
                log(f"{cond}: not within +-{args.tolerance} points after {st['steps']} steps: "
                    f"collected at the last rules, marked with the slowdown achieved")
        return {
            "method": (f"feedback: first rules from a ceiling model of the {args.calibration} unthrottled "
                       "calibration runs (the rule c with mean(min(x, c)) / mean(x) = 1 - target), then "
                       f"up to {args.max_steps} steps of {args.probes} probe runs per condition, each round "
                       "beside one unthrottled probe run; after a step every rule whose calibrated cell is "
                       f"more than {args.tolerance} points off its target moves by a secant in log(rule) "
                       "through its last two probed values (the first move proportional, (1 - target) / "
                       "(1 - achieved)), kept inside the bracket of values already seen too low and too "
                       "high, at most a factor of 1.5 a step; a condition out of steps is collected at the probed rules that came closest"),
            "probe_matrix_studies": list(PROBE_STUDIES),
            "tolerance_points": args.tolerance,
            "calibrated_cells": {f"{dev} {fname}": "/".join(str(k) for k in key)
                                 for (dev, fname), (key, _) in self.calibrated.items()},
            "aa_reference": {"/".join(str(k) for k in key): v for key, v in self.aa_ref.items()},
            "conditions": state,
        }

    # -- the whole collection ----------------------------------------------

    def collect(self) -> dict:
        t0 = time.monotonic()
        self.conditions_at["start"] = machine_state()
        self.attach()
        self.make_cgroups()
        calibration = self.calibrate()
        log(f"calibrated rules: {json.dumps(self.rules_shown())}")
        self.conditions_at["after_calibration"] = machine_state()
        rng = random.Random(self.args.seed)
        for r in range(self.args.reps):
            order = list(CONDITIONS)
            rng.shuffle(order)
            for cond in order:
                if self.run_rep(cond, f"r{r + 1:02d}-{cond}"):
                    self.done[cond] += 1
                else:
                    self.failed[cond] += 1
        self.conditions_at["end"] = machine_state()
        return self.result(calibration, time.monotonic() - t0)

    def rules_shown(self) -> dict:
        return {cond: {f"{dev} ({self.majmin[dev]})": {f"blkio.throttle.{f}": v for f, v in files.items()}
                       for dev, files in per_device.items()}
                for cond, per_device in self.rules.items()}

    def result(self, calibration: dict, seconds: float) -> dict:
        cells = []
        calibrated_on = {key: f"{dev} {fname}" for (dev, fname), (key, _) in self.calibrated.items()}
        tol = self.args.tolerance
        for key in sorted(self.samples):
            study, device, fs, group, metric = key
            by_cond = self.samples[key]
            aa = by_cond.get("aa", [])
            change = {}
            for cond in SLOWDOWNS:
                v = by_cond.get(cond, [])
                change[cond] = (round((statistics.mean(v) / statistics.mean(aa) - 1) * 100, 2)
                                if v and aa and statistics.mean(aa) else None)
            throttled = study not in UNTHROTTLED_STUDIES
            cell = {"study": study, "device": device, "filesystem": fs, "group": group, "metric": metric,
                    "direction": self.directions[key], "throttled": throttled,
                    "calibrated_on": key in calibrated_on,
                    "samples": {c: by_cond.get(c, []) for c in CONDITIONS},
                    "calibration_samples": self.aa_ref.get(key, []),
                    "achieved_change_pct": change}
            if key in calibrated_on:
                # Whether the collection itself (not only the search's probes) hit the target.
                cell["rule"] = calibrated_on[key]
                cell["within_tolerance"] = {
                    cond: change[cond] is not None and abs(change[cond] + 100 * s) <= tol
                    for cond, s in SLOWDOWNS.items()}
            elif throttled:
                cell["not_calibrated"] = ("shares its device's rule with the calibrated cell "
                                          f"{', '.join(v for k, v in calibrated_on.items() if k[1] == device)}: "
                                          "its slowdown is whatever that rule gives it")
            if not throttled:
                cell["not_slowed"] = UNTHROTTLED_STUDIES[study]
            cells.append(cell)
        uname = platform.uname()
        return {
            "made_by": " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv]),
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "host": {"kernel": uname.release, "cpus": os.cpu_count(),
                     "iowatch_commit": _git_head()},
            "how": (
                "Real runs on this machine's loop devices (2 GiB sparse image files, direct I/O, "
                f"on {self.images_fs} at {self.tmp.parent}), "
                f"matrix of the quick profile with studies {', '.join(STUDIES)}; each repetition is one "
                "`iowatch run MATRIX --target localhost --reps 1`, run inside a cgroup v1 blkio cgroup of "
                "its condition (a shell writes its PID to cgroup.procs and execs iowatch, so fio, "
                "fs_mark and mkfs run there too). 'aa' has no throttle: repeated runs of one kernel. "
                "slowN sets blkio.throttle rules (write_bps and read_bps on the hdd loop device, "
                "read_iops on the ssd loop device) found by feedback: probe runs under candidate rules "
                "until the calibrated cell of each rule (odirect-vs-readers writer write.bw_kib_s and "
                "readers read.bw_kib_s; ext4-dio-randread read.iops of the cell with the lower mean) "
                f"lost N% +- {tol:g} points of its unthrottled mean (calibration.method says how). "
                "A throttle is a ceiling, not a proportional slowdown: achieved_change_pct is "
                "mean(slowed) / mean(aa) - 1 per cell in this collection, and within_tolerance says "
                "whether the calibrated cells hit their target here. fs_mark's writeback is done by "
                "kernel flusher threads that v1 blkio does not throttle, so the xfs-smallfile-writeback "
                "cells are unchanged cells (throttled: false). Conditions were interleaved round by "
                f"round in an order shuffled per round (seed {self.args.seed}). Samples are each "
                "repetition's group-level samples (job null) of the metrics the study declares; a "
                "repetition with any failed cell is left out of every cell and counted in "
                "failed_repetitions. The calibration's unthrottled runs are in calibration_samples, "
                "not in aa."),
            "reps_per_condition": self.args.reps,
            "completed_repetitions": dict(self.done),
            "failed_repetitions": {c: self.failed.get(c, 0) for c in ("probe", *CONDITIONS)},
            "mean_repetition_s": {c: round(statistics.mean(v), 1) for c, v in self.rep_seconds.items()},
            "wall_s": round(seconds),
            "machine": {**self.conditions_at, "images_on": {"dir": str(self.tmp.parent),
                                                           "filesystem": self.images_fs},
                        "load_1min_before_each_run": {
                            "min": min(self.loads), "median": statistics.median(self.loads),
                            "max": max(self.loads)} if self.loads else None},
            "calibration": calibration,
            # Declared metrics fio only reports per job (e.g. a latency percentile under
            # group_reporting): iowatch compare pairs group-level samples only, so none here.
            "declared_without_group_samples": sorted(
                f"{study} {group} {metric}" for study, wanted in self.declared.items()
                for group, metric in wanted
                if not any(k[0] == study and k[3] == group and k[4] == metric for k in self.samples)),
            "throttle": self.rules_shown(),
            "cells": cells,
        }

    # -- clean-up ------------------------------------------------------------

    def cleanup(self) -> None:
        if self.child and self.child.poll() is None:
            # iowatch unmounts and detaches what it attached on SIGTERM; give it time.
            self.child.send_signal(signal.SIGTERM)
            try:
                self.child.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.child.kill()
                self.child.wait()
        for cond, path in self.cgroups.items():
            for _ in range(30):
                pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
                if not pids:
                    break
                for pid in pids:  # only processes this collector started are in there
                    try:
                        os.kill(pid, signal.SIGTERM)
                    except ProcessLookupError:
                        pass
                time.sleep(1)
            try:
                path.rmdir()
            except OSError as e:
                print(f"could not remove {path}: {e}", file=sys.stderr)
        if self.attached:
            r = self._iowatch("device", "detach", "localhost", "--inventory", str(INVENTORY))
            if r.returncode != 0:
                print(f"iowatch device detach: {r.stdout}{r.stderr}", file=sys.stderr)
        if self.args.keep:
            log(f"kept {self.tmp}")
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)


def declared_samples(doc: dict, declared: dict[str, dict]) -> Iterator[tuple[tuple, float, str]]:
    """(cell key, value, direction) of every passed repetition's group-level sample
    (job null) of a metric its study declares; declared: {study: {(group, metric): direction}}."""
    for cell in doc["cells"]:
        wanted = declared.get(cell["study"])
        if cell["status"] != "passed" or wanted is None:
            continue
        for rep in cell["repetitions"]:
            if rep.get("status", "passed") != "passed":
                continue
            for s in rep["samples"]:
                if s.get("job") is None and (s["group"], s["metric"]) in wanted:
                    key = (cell["study"], cell["device"], cell["filesystem"], s["group"], s["metric"])
                    yield key, s["value"], wanted[(s["group"], s["metric"])]


def slowdown(slowed: list[float], aa: list[float]) -> float:
    """1 - mean(slowed) / mean(aa): the share a higher-is-better cell lost."""
    return 1 - statistics.mean(slowed) / statistics.mean(aa)


def ceiling_for(aa: list[float], target: float) -> float:
    """The ceiling c that would cut the mean of `aa` by `target` if each run gave min(x, c).

    A throttle caps a run's rate rather than scaling it, so (1 - target) x the median
    (the old rule) cut right-skewed cells by far more than the target; this is only the
    first guess of the search (a run's rate is not constant, so the real cut differs).
    Bisection by hand: a monotone function of one variable on ten numbers."""
    mean = statistics.mean(aa)
    lo, hi = 0.0, max(aa)
    for _ in range(60):
        c = (lo + hi) / 2
        if 1 - statistics.mean(min(x, c) for x in aa) / mean > target:
            lo = c
        else:
            hi = c
    return (lo + hi) / 2


def next_rule(points: list[tuple[int, float]], target: float, tol: float) -> int:
    """The next rule to probe from the (rule, achieved slowdown) points so far, the last current.

    A secant in log(rule) through the last two distinct rules when the slope has the
    right sign (a higher rule slows less), else a proportional move; kept inside the
    bracket of rules already seen slowing too much (below) and too little (above) and
    within a factor of 1.5 of the current rule. Written here rather than taken from
    scipy.optimize: the root finders there call the function themselves, and each
    call here is minutes of noisy measurement that must be logged and interleaved."""
    rule, achieved = points[-1]
    new = None
    for prev, prev_achieved in reversed(points[:-1]):
        if prev != rule:
            slope = (achieved - prev_achieved) / (math.log(rule) - math.log(prev))
            if slope < 0:
                new = rule * math.exp((target - achieved) / slope)
            break
    if new is None:
        new = rule * (1 - target) / max(1 - achieved, 0.05)
    new = min(max(new, rule / 1.5), rule * 1.5)
    lo = max((r for r, a in points if a > target + tol), default=None)   # slowed too much
    hi = min((r for r, a in points if a < target - tol), default=None)   # slowed too little
    if lo is not None and hi is not None and not lo < new < hi:
        new = math.sqrt(lo * hi)
    elif lo is not None and new <= lo:
        new = lo * 1.2
    elif hi is not None and new >= hi:
        new = hi / 1.2
    return max(1, round(new))


def machine_state() -> dict:
    """The load and whether a QEMU guest runs: the collection shares the machine."""
    guests = subprocess.run(["pgrep", "-c", "-f", "qemu-system"], capture_output=True, text=True)
    return {"utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
            "qemu_processes": int(guests.stdout.strip() or 0)}


def _git_head() -> str | None:
    r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or None


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reps", type=int, default=30, help="repetitions per condition (default 30)")
    p.add_argument("--calibration", type=int, default=6,
                   help="unthrottled calibration runs before the search (default 6)")
    p.add_argument("--tolerance", type=float, default=3.0,
                   help="points of slowdown the calibrated cells may miss their target by (default 3)")
    p.add_argument("--probes", type=int, default=4, help="probe runs per condition and step (default 4)")
    p.add_argument("--max-steps", type=int, default=4, help="search steps at most (default 4)")
    p.add_argument("--seed", type=int, default=2024, help="seed of the per-round order")
    p.add_argument("--out", required=True, help="the JSON file to write")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (bundles, logs)")
    p.add_argument("--images-on", default=None, metavar="DIR",
                   help="where the loop devices' image files live (default: the temp dir, "
                        "$TMPDIR or /tmp); /dev/shm puts them in memory")
    args = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root: loop devices, mkfs, mounts and blkio cgroups")
    if not (CGROUP_ROOT / "blkio.throttle.write_bps_device").exists():
        sys.exit(f"no cgroup v1 blkio throttling at {CGROUP_ROOT}")
    # SIGTERM takes the same way out as Ctrl-C, through the finally below.
    signal.signal(signal.SIGTERM, _interrupt)
    c = Collector(args)
    try:
        doc = c.collect()
    except KeyboardInterrupt:
        print("interrupted: cleaning up", file=sys.stderr)
        return 130
    finally:
        c.cleanup()
    write_output(Path(args.out), doc)
    return 0


def write_output(out: Path, doc: dict) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    log(f"wrote {out}")


if __name__ == "__main__":
    sys.exit(main())
