"""Collect real samples for the accuracy benchmark: A/A repetitions and throttled slowdowns.

Runs a small matrix of the quick profile (odirect-vs-readers,
xfs-smallfile-writeback, ext4-dio-randread; one repetition per run) on the
local target's loop devices under four conditions:

  aa      no throttle (A/A: the same kernel, the same machine, again and again)
  slow10  cgroup v1 blkio throttle at 90% of the calibrated median
  slow20  ... at 80%
  slow50  ... at 50%

Each repetition is one `iowatch run MATRIX --target localhost --reps 1`, started
by a tiny shell that first writes its own PID into the condition's blkio cgroup
(/sys/fs/cgroup/blkio/iowatch-accuracy-<cond>) and then execs iowatch, so iowatch
and its children (fio, fs_mark, mkfs) all run in that cgroup and nothing else
does. The conditions are interleaved round by round, in an order shuffled
within each round with a fixed seed, so that drift of the machine's load hits
every condition alike.

Calibration: 5 unthrottled repetitions first; per device the medians of the
writer's write.bw_kib_s and the readers' read.bw_kib_s (odirect-vs-readers on
the hdd loop device) and of read.iops of ext4-dio-randread (group randread on
the ssd loop device; the lower of its ext4 and raw cells' medians) give the
throttles: for slowdown s, write_bps and read_bps on the hdd loop device and
read_iops on the ssd loop device are set to (1 - s) x those medians. A throttle
is a ceiling, not a proportional slowdown, so the output records the slowdown
each cell actually got (mean slowed / mean aa - 1). fs_mark's writeback is done
by kernel flusher threads that v1 blkio does not throttle: the
xfs-smallfile-writeback cells are collected under every condition all the same
and marked "throttled": false (they are the unchanged cells).

The loop devices are attached once before the first run (`iowatch device
attach localhost`), and every `iowatch run` reuses them; their major:minor are
checked before each repetition and the rules rewritten if they changed. The
cgroups are removed and the loop devices detached at the end, also on a failure
or Ctrl-C. Samples: every group-level sample (job null) of the metrics each
study declares in its `metrics:` list, read from each repetition's bundle;
failed repetitions are skipped and counted.

As root, from the repository (takes 30-45 minutes with --reps 30):

    sudo .venv/bin/python bench/accuracy/collect.py --reps 30 --out tests/fixtures/accuracy/real-samples.json
    sudo .venv/bin/python bench/accuracy/collect.py --reps 2 --out /tmp/try.json   # a quick try

iowatch is run as `python -m iowatch.cli` from this checkout's src/ (PYTHONPATH),
so a worktree of another commit collects with its own code.
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
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from iowatch import bundle, inventory, loopdev  # noqa: E402
from iowatch.studies import load_studies  # noqa: E402

STUDIES = ("odirect-vs-readers", "xfs-smallfile-writeback", "ext4-dio-randread")
SLOWDOWNS = {"slow10": 0.10, "slow20": 0.20, "slow50": 0.50}
CONDITIONS = ("aa", *SLOWDOWNS)
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
        self.tmp = Path(tempfile.mkdtemp(prefix="iowatch-collect-"))
        self.data_dir = self.tmp / "data"
        self.env = {**os.environ, "IOWATCH_DATA_DIR": str(self.data_dir),
                    "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"),
                                                                os.environ.get("PYTHONPATH")]))}
        self.iowatch = [sys.executable, "-m", "iowatch.cli"]
        self.matrix = self._write_matrix()
        self.cgroups: dict[str, Path] = {}
        self.attached = False
        self.majmin: dict[str, str] = {}      # loop device name -> "major:minor" the rules use
        self.rules: dict[str, dict[str, dict[str, int]]] = {}  # cond -> device -> rule file -> value
        self.declared = {s: {(m["group"], m["metric"]): m["direction"]
                             for m in load_studies(ROOT / "jobs" / "studies")[s].data["metrics"]}
                         for s in STUDIES}
        # (study, device, filesystem, group, metric) -> condition -> samples, one per repetition
        self.samples: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        self.directions: dict[tuple, str] = {}
        self.failed: dict[str, int] = defaultdict(int)
        self.done: dict[str, int] = defaultdict(int)
        self.rep_seconds: dict[str, list[float]] = defaultdict(list)
        self.child: subprocess.Popen | None = None

    # -- set-up ------------------------------------------------------------

    def _write_matrix(self) -> Path:
        jobs = self.tmp / "jobs"
        jobs.mkdir()
        (jobs / "studies").symlink_to(ROOT / "jobs" / "studies")  # a matrix finds studies beside it
        matrix = jobs / "accuracy-collect.yml"
        matrix.write_text("matrix: accuracy-collect\nprofile: quick\nreps: 1\nstudies:\n"
                          + "".join(f"  - study: {s}\n" for s in STUDIES))
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
        old = dict(self.majmin)
        if self.refresh_devices():
            log(f"loop devices changed {old} -> {self.majmin}: rules rewritten")
            self.apply_rules(old)
        out = self.tmp / "bundles" / label
        procs = self.cgroups[cond] / "cgroup.procs"
        cmd = ["sh", "-c", 'p="$1"; shift; echo $$ > "$p" && exec "$@"', "sh", str(procs),
               *self.iowatch, "run", str(self.matrix), "--target", "localhost",
               "--inventory", str(INVENTORY), "--reps", "1", "--out", str(out), "--no-progress"]
        t0 = time.monotonic()
        with open(self.tmp / f"{label}.log", "w") as logf:
            self.child = subprocess.Popen(cmd, cwd=ROOT, env=self.env, stdout=logf,
                                          stderr=subprocess.STDOUT)
            rc = self.child.wait()
            self.child = None
        seconds = time.monotonic() - t0
        self.rep_seconds[cond].append(seconds)
        try:
            doc = bundle.load(out)
        except bundle.BundleError as e:
            log(f"{label}: exit {rc}, no readable bundle ({e}); see {self.tmp / (label + '.log')}")
            return False
        got = self._samples(doc)
        want = {k for k in self.directions} if self.directions else None
        # A repetition counts when every cell passed; a failed one gives no samples at all,
        # so every condition's lists stay aligned by repetition.
        bad = [c["id"] for c in doc["cells"] if c["status"] not in ("passed", "skipped")]
        if rc not in (0, 1) or bad or not got or (want is not None and set(got) != want):
            log(f"{label}: exit {rc}, failed cells {bad or '-'}: skipped "
                f"(see {self.tmp / (label + '.log')})")
            return False
        for key, (value, direction) in got.items():
            self.samples[key][cond].append(value)
            self.directions[key] = direction
        log(f"{label}: {seconds:.0f} s, {len(got)} samples")
        return True

    def _samples(self, doc: dict) -> dict[tuple, tuple[float, str]]:
        got = {}
        for cell in doc["cells"]:
            if cell["status"] != "passed" or cell["study"] not in self.declared:
                continue
            wanted = self.declared[cell["study"]]
            for rep in cell["repetitions"]:
                if rep.get("status", "passed") != "passed":
                    continue
                for s in rep["samples"]:
                    if s.get("job") is None and (s["group"], s["metric"]) in wanted:
                        key = (cell["study"], cell["device"], cell["filesystem"], s["group"], s["metric"])
                        got[key] = (s["value"], wanted[(s["group"], s["metric"])])
        return got

    # -- calibration -------------------------------------------------------

    def calibrate(self) -> dict:
        medians = {}
        for (study, device, fs, group, metric), (rule_dev, fname, unit) in CALIBRATE.items():
            per_cell = [statistics.median(by_cond["calibration"]) for k, by_cond in self.samples.items()
                        if k[0] == study and k[1] == device and (fs is None or k[2] == fs)
                        and k[3] == group and k[4] == metric and by_cond["calibration"]]
            if not per_cell:
                raise RuntimeError(f"calibration gave no {study} {group} {metric} on {device}")
            medians[(rule_dev, fname)] = min(per_cell) * unit
        for cond, s in SLOWDOWNS.items():
            self.rules[cond] = defaultdict(dict)
            for (rule_dev, fname), m in medians.items():
                self.rules[cond][rule_dev][fname] = max(1, int(round((1 - s) * m)))
        self.rules["aa"] = {}
        self.apply_rules()
        return {f"{dev} {fname}": m for (dev, fname), m in medians.items()}

    # -- the whole collection ----------------------------------------------

    def collect(self) -> dict:
        t0 = time.monotonic()
        self.attach()
        self.make_cgroups()
        log(f"calibration: {self.args.calibration} unthrottled repetitions")
        for i in range(self.args.calibration):
            if not self.run_rep("aa", f"cal{i + 1:02d}-aa"):
                self.failed["calibration"] += 1
        # The calibration samples are kept apart: they ran before the interleaved rounds.
        for by_cond in self.samples.values():
            by_cond["calibration"] = by_cond.pop("aa", [])
        medians = self.calibrate()
        log(f"calibrated medians: {medians}; rules: {json.dumps(self.rules_shown())}")
        rng = random.Random(self.args.seed)
        for r in range(self.args.reps):
            order = list(CONDITIONS)
            rng.shuffle(order)
            for cond in order:
                if self.run_rep(cond, f"r{r + 1:02d}-{cond}"):
                    self.done[cond] += 1
                else:
                    self.failed[cond] += 1
        return self.result(medians, time.monotonic() - t0)

    def rules_shown(self) -> dict:
        return {cond: {f"{dev} ({self.majmin[dev]})": {f"blkio.throttle.{f}": v for f, v in files.items()}
                       for dev, files in per_device.items()}
                for cond, per_device in self.rules.items()}

    def result(self, medians: dict, seconds: float) -> dict:
        cells = []
        throttled_keys = {(s, d, g, m) for (s, d, _, g, m) in CALIBRATE}
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
                    "calibrated_on": (study, device, group, metric) in throttled_keys,
                    "samples": {c: by_cond.get(c, []) for c in CONDITIONS},
                    "calibration_samples": by_cond.get("calibration", []),
                    "achieved_change_pct": change}
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
                "Real runs on this machine's loop devices (2 GiB sparse image files, direct I/O), "
                f"matrix of the quick profile with studies {', '.join(STUDIES)}; each repetition is one "
                "`iowatch run MATRIX --target localhost --reps 1`, run inside a cgroup v1 blkio cgroup of "
                "its condition (a shell writes its PID to cgroup.procs and execs iowatch, so fio, "
                "fs_mark and mkfs run there too). 'aa' has no throttle: repeated runs of one kernel. "
                "slowN sets blkio.throttle rules at (1 - N%) of the medians of "
                f"{self.args.calibration} unthrottled calibration repetitions run first: write_bps and "
                "read_bps on the hdd loop device (odirect-vs-readers writer write.bw_kib_s and readers "
                "read.bw_kib_s) and read_iops on the ssd loop device (ext4-dio-randread read.iops, the "
                "lower of the ext4 and raw cells' medians). A throttle is a ceiling, not a proportional "
                "slowdown: achieved_change_pct is mean(slowed) / mean(aa) - 1 per cell. fs_mark's "
                "writeback is done by kernel flusher threads that v1 blkio does not throttle, so the "
                "xfs-smallfile-writeback cells are unchanged cells (throttled: false). Conditions were "
                f"interleaved round by round in an order shuffled per round (seed {self.args.seed}). "
                "Samples are each repetition's group-level samples (job null) of the metrics the study "
                "declares; a repetition with any failed cell is left out of every cell and counted in "
                "failed_repetitions. The calibration repetitions are in calibration_samples, not in aa."),
            "reps_per_condition": self.args.reps,
            "completed_repetitions": dict(self.done),
            "failed_repetitions": {c: self.failed.get(c, 0) for c in ("calibration", *CONDITIONS)},
            "mean_repetition_s": {c: round(statistics.mean(v), 1) for c, v in self.rep_seconds.items()},
            "wall_s": round(seconds),
            "calibration_medians": medians,
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


def _git_head() -> str | None:
    r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or None


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reps", type=int, default=30, help="repetitions per condition (default 30)")
    p.add_argument("--calibration", type=int, default=5, help="unthrottled calibration repetitions")
    p.add_argument("--seed", type=int, default=2024, help="seed of the per-round order")
    p.add_argument("--out", required=True, help="the JSON file to write")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (bundles, logs)")
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
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
