"""fio against a device model: its calibration targets, its open-unit knee
and its seek curve, measured through an NBD export on the host (fio's nbd
engine) or on a guest's block device (fio's libaio with direct I/O).

The tests (tests/mechanics) and bench/devmodels/run.py measure with these; the
guest proof runs the same jobs inside a guest, against the guest's disk.
"""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass

from iowatch.mechanics import export
from iowatch.mechanics.profiles import Profile, Target


@dataclass(frozen=True)
class Measured:
    label: str
    metric: str
    value: float
    target: float | None = None
    tolerance_pct: float | None = None
    request_s: float | None = None     # at depth 1: the mean time a request took, as measured
    export_us: float | None = None     # what the export itself cost a request, taken out (less_host)
    late_us: float | None = None       # how late the export's threads woke a request, taken out

    @property
    def off_pct(self) -> float | None:
        return None if self.target is None else 100.0 * (self.value / self.target - 1.0)

    @property
    def within(self) -> bool:
        return self.target is None or abs(self.off_pct) <= self.tolerance_pct


def _engine(where: str) -> list[str]:
    """fio options to reach a device: an NBD URI (host) or a /dev path (guest)."""
    if where.startswith("nbd"):
        return ["--ioengine=nbd", f"--uri={where}"]
    return ["--ioengine=libaio", "--direct=1", f"--filename={where}"]


def fio(where: str, *options: str, runtime_s: float = 4.0) -> dict:
    """One fio run; its first job's JSON (group_reporting merges many jobs)."""
    # fio at the model's priority too: on a busy host a woken client of normal
    # priority adds its own wait to every request at depth 1 (a 1 MiB sequential
    # read measured 126 MB/s of the model's 204 at a load of 3.6).
    argv = [*export.priority(), "fio", "--name=probe", *_engine(where), "--time_based",
            f"--runtime={runtime_s:g}", "--randseed=2026", "--group_reporting", "--output-format=json",
            *options]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"fio {' '.join(argv[1:])} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout[done.stdout.index("{"):])["jobs"][0]


def _value(job: dict, rw: str, metric: str) -> float:
    side = job["read" if "read" in rw else "write"]
    return side["iops"] if metric == "iops" else side["bw_bytes"] / 1e6


def _options(profile: Profile, t: Target) -> list[str]:
    options = [f"--rw={t.rw}", f"--bs={t.bs}", f"--iodepth={t.iodepth}", f"--size={t.size or '100%'}"]
    if t.rw == "randwrite" and profile.kind == "disk":
        # The write cache answers at once until its extents are taken; the target is the rate after.
        options.append("--ramp_time=2")
    return options


def export_cost_s(free: str, profile: Profile, t: Target, runtime_s: float = 4.0) -> float:
    """What the export itself costs one request of target t at depth 1: the
    mean time a request takes through `free`, an export of the same image
    whose model costs nothing (export.serve with time_scale 0)."""
    return 1.0 / _value(fio(free, *_options(profile, t), runtime_s=runtime_s), t.rw, "iops")


def target(where: str, profile: Profile, t: Target, runtime_s: float = 4.0) -> Measured:
    """Target t measured through `where`, as fio saw it (less_host takes the
    host's share out of a depth-1 figure)."""
    job = fio(where, *_options(profile, t), runtime_s=runtime_s)
    request_s = 1.0 / _value(job, t.rw, "iops") if t.iodepth == 1 else None
    return Measured(t.label, t.metric, _value(job, t.rw, t.metric), t.value, t.tolerance_pct, request_s)


def late_per_request_s(stats: dict) -> float:
    """How late, on average, the export's threads woke a request (the stats
    file nbdkit writes when it stops: nbdplugin's late_s over its requests)."""
    return stats.get("late_s", 0.0) / max(1, sum(stats["requests"].values()))


def less_host(m: Measured, t: Target, export_s: float, late_s: float) -> Measured:
    """A depth-1 figure with the host's share of each request taken out: what
    the export itself costs (export_cost_s) and how late its sleeping threads
    woke (the stats file's late_s over its requests). At depth 1 a request's
    time is the device's and these one after the other, and they grow with the
    host's load, while a real card's link adds neither. At depth 2 and more the
    requests in flight hide them already: m is returned as it is."""
    if m.request_s is None:
        return m
    device_s = m.request_s - export_s - late_s
    if device_s <= 0:
        raise RuntimeError(f"{t.label}: a request took {m.request_s * 1e6:.0f} us, no more than the host's "
                           f"own {(export_s + late_s) * 1e6:.0f} us: the host is too busy to measure it")
    # One request size: IOPS and bandwidth both grow by the time a request no longer takes.
    return Measured(m.label, m.metric, m.value * m.request_s / device_s, m.target, m.tolerance_pct, m.request_s,
                    export_us=export_s * 1e6, late_us=late_s * 1e6)


def open_unit_knee(where: str, profile: Profile, writers: range = range(1, 9), bs: str = "16k",
                   runtime_s: float = 3.0) -> list[Measured]:
    """A flash card's aggregate write bandwidth with 1, 2, ... sequential
    writers, each in an allocation unit of its own: flat up to the number of
    units the card keeps open, then falling (flashbench --open-au)."""
    au = int(profile.params["au_bytes"])
    out = []
    for n in writers:
        job = fio(where, "--rw=write", f"--bs={bs}", "--iodepth=1", f"--numjobs={n}",
                  f"--size={au}", f"--offset_increment={4 * au}", runtime_s=runtime_s)
        out.append(Measured(f"{n} writer{'s' if n > 1 else ''}, {bs}", "bw_mb_s", _value(job, "write", "bw_mb_s")))
    return out


def seek_curve(where: str, capacity: int, distances: tuple[float, ...] = (0.001, 0.01, 0.1, 1 / 3, 0.9),
               runtime_s: float = 3.0) -> list[Measured]:
    """A disk's mean time for a 4 KiB read that alternates between two places
    a share of the disk apart (fio's zoned access: two 4 KiB zones, zone_skip
    the distance): the seek at that distance plus half a rotation on average."""
    out = []
    for share in distances:
        skip = max(4096, int(capacity * share) // 4096 * 4096 - 4096)
        job = fio(where, "--rw=read", "--bs=4k", "--iodepth=1", "--zonemode=strided", "--zonesize=4k", "--zonerange=4k",
                  f"--zoneskip={skip}", f"--size={capacity}", runtime_s=runtime_s)
        ms = job["read"]["clat_ns"]["mean"] / 1e6
        out.append(Measured(f"{share:.3f} of the disk", "ms", ms))
    return out


# What item 2 of the device models' measurement asks of every class, at depth 1 and 32.
CLASS_TABLE = [(rw, bs, qd) for rw, bs in (("read", "1m"), ("write", "1m"), ("randread", "4k"), ("randwrite", "4k"))
               for qd in (1, 32)]


def device_table(where: str, profile: Profile, capacity: int, runtime_s: float = 4.0) -> list[Measured]:
    """The class table of one device (sequential 1 MiB and random 4 KiB, read
    and write, depth 1 and 32), its calibration targets, and its knee (flash) or
    seek curve (disk)."""
    out = []
    for rw, bs, qd in CLASS_TABLE:
        metric = "bw_mb_s" if bs == "1m" else "iops"
        options = [f"--rw={rw}", f"--bs={bs}", f"--iodepth={qd}", "--size=256m" if bs == "1m" else "--size=100%"]
        job = fio(where, *options, runtime_s=runtime_s)
        out.append(Measured(f"{rw} {bs} QD{qd}", metric, _value(job, rw, metric)))
    out += [target(where, profile, t, runtime_s) for t in profile.targets]
    if profile.kind == "flash":
        # 4 KiB writes: behind QEMU's sd-card a block costs the emulation about 0.17 ms under
        # TCG, so the unit switch (ms) shows best against small writes
        out += open_unit_knee(where, profile, range(1, profile.params["open_aus"] + 3), bs="4k",
                              runtime_s=runtime_s)
    if profile.kind == "disk":
        out += seek_curve(where, capacity, runtime_s=runtime_s)
    return out


def main(argv: list[str] | None = None) -> int:
    """`python -m iowatch.mechanics.probe --host H [--inventory F] --out FILE`:
    run inside a guest of a host with modelled devices, measures each modelled
    device (not a RAID0's members: they are the array's) from the guest's side
    of its driver, after the one device-safety check, and writes the table."""
    import argparse
    import os

    from iowatch import inventory, safety
    from iowatch.vlab import guest_path
    from iowatch.mechanics import profiles

    ap = argparse.ArgumentParser(prog="python -m iowatch.mechanics.probe")
    ap.add_argument("--host", required=True)
    ap.add_argument("--inventory", default=None)
    ap.add_argument("--out", required=True)
    ap.add_argument("--runtime", type=float, default=4.0)
    ap.add_argument("--devices", default="", help="comma-separated device names (default: every modelled one)")
    args = ap.parse_args(argv)
    host = inventory.load(args.inventory).host(args.host)
    wanted = set(filter(None, args.devices.split(",")))
    table = {}
    for dev in host.devices:
        name = (dev.qemu or {}).get("model")
        if not name or dev.members or (wanted and dev.name not in wanted):
            continue
        path = guest_path(host, dev)
        verdict = safety.check(host, path)
        if not verdict.allowed:
            raise SystemExit(f"probe: {dev.name} ({path}): refused: {verdict.reason}")
        profile = profiles.get(name)
        with open(f"/sys/class/block/{os.path.basename(os.path.realpath(path))}/size") as f:
            capacity = int(f.read()) * 512           # in 512-byte sectors, whatever the device's own
        rows = device_table(path, profile, capacity, args.runtime)
        table[dev.name] = {"model": name, "stands_for": profile.stands_for,
                           "rows": [m.__dict__ for m in rows]}
        for m in rows:
            tgt = f" target {m.target:g} ({m.off_pct:+.1f}%)" if m.target is not None else ""
            print(f"probe: {dev.name} {m.label}: {m.value:.2f} {m.metric}{tgt}", flush=True)
    with open(args.out, "w") as f:
        json.dump(table, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
