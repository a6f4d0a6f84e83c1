"""fio against a device model: its calibration targets, its open-unit knee
and its seek curve, measured through an NBD export on the host (fio's nbd
engine) or on a guest's block device (fio's libaio with direct I/O).

The tests (tests/mechanics) and bench/devmodels/run.py measure with these; the
guest proof runs the same jobs inside a guest, against the guest's disk.
"""
from __future__ import annotations

import json
import math
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

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
    model_us: float | None = None      # at depth 1: the model's own time a request (less_host)
    slowed: int = 1                    # measured with the model's time this many times longer (the
    host_ceiling: float | None = None  # host's own rate of the workload, a free export's, too close)

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


def _ramped(profile: Profile, t: Target) -> bool:
    """A disk's write cache answers at once until its extents are taken; the
    target is the rate after, so fio leaves the first seconds out (ramp_time)."""
    return t.rw == "randwrite" and profile.kind == "disk"


def _options(profile: Profile, t: Target) -> list[str]:
    options = [f"--rw={t.rw}", f"--bs={t.bs}", f"--iodepth={t.iodepth}", f"--size={t.size or '100%'}"]
    if _ramped(profile, t):
        options.append("--ramp_time=2")
    return options


def _measured(t: Target, job: dict) -> Measured:
    request_s = 1.0 / _value(job, t.rw, "iops") if t.iodepth == 1 else None
    return Measured(t.label, t.metric, _value(job, t.rw, t.metric), t.value, t.tolerance_pct, request_s)


def target(where: str, profile: Profile, t: Target, runtime_s: float = 4.0) -> Measured:
    """Target t measured through `where`, as fio saw it (less_host takes the
    host's share out of a depth-1 figure)."""
    return _measured(t, fio(where, *_options(profile, t), runtime_s=runtime_s))


def model_per_request_s(stats: dict) -> float:
    """The model's own time a request, arrival to due, at its own speed (the
    stats file nbdkit writes when it stops: nbdplugin's model_s over its
    requests, unstretched by the time scale)."""
    return stats["model_s"] / (stats.get("time_scale") or 1.0) / max(1, sum(stats["requests"].values()))


def less_host(m: Measured, model_s: float) -> Measured:
    """A depth-1 figure at the model's own time a request (model_per_request_s):
    at depth 1 a request's time through the export is the model's and the
    host's one after the other (the Python plugin, fio's nbd engine, how late
    the sleeping threads and fio woke), and the host's grows with its load,
    while a real card's link adds none of it. At depth 2 and more the requests
    in flight hide it: m is returned as it is."""
    if m.request_s is None:
        return m
    if model_s <= 0:
        raise RuntimeError(f"{m.label}: the model's stats give it no time a request")
    # One request size: IOPS and bandwidth both grow by the time a request no longer takes.
    return replace(m, value=m.value * m.request_s / model_s, model_us=model_s * 1e6)


# At depth 2 and more a target is measured with the model slowed (its figure
# scaled back) when the host's own rate of the workload, through a free export,
# is less than this many times the target: near its ceiling the host, not the
# model, sets the pace (a 1 MiB read through the Python plugin: 440-640 MB/s
# here against an SSD's 550).
HOST_HEADROOM = 3.0


def _through_model(profile: Profile, image: Path, directory: Path, seed: int, options: list[str],
                   runtime_s: float, what: str, time_scale: int = 1) -> tuple[dict, dict]:
    """fio with `options` through the model over `image` (its socket and stats
    file in `directory`): (fio's job, the stats file nbdkit wrote when it stopped)."""
    stats = directory / "stats.json"
    with export.serve(profile, image, directory / "model.sock", seed=seed, stats=stats,
                      time_scale=time_scale) as uri:
        job = fio(uri, *options, runtime_s=runtime_s)
    done = json.loads(stats.read_text())
    if sum(done["requests"].values()) == 0:
        raise RuntimeError(f"{profile.name} {what}: the model's stats count no request: fio did not "
                           f"reach the export")
    return job, done


def target_on_host(profile: Profile, t: Target, image: Path, directory: Path, *, seed: int = 1,
                   runtime_s: float = 4.0) -> tuple[Measured, Measured]:
    """Target t through nbdkit on this host, over `image` (sockets and the stats
    file in `directory`): (the figure less the host's share, as measured). At
    depth 1 the figure is at the model's own time a request (less_host), but
    for a target fio ramps up to (_ramped), as measured. At
    depth 2 and more a free export of the same image first runs the workload
    (half the runtime): within HOST_HEADROOM of the target, the host's own rate,
    the model runs that much slower and its figure is scaled back."""
    options = _options(profile, t)
    scale, ceiling = 1, None
    if t.iodepth > 1:
        with export.serve(profile, image, directory / "free.sock", time_scale=0) as free:
            ceiling = _value(fio(free, *options, runtime_s=runtime_s / 2), t.rw, t.metric)
        if ceiling < HOST_HEADROOM * t.value:
            scale = math.ceil(HOST_HEADROOM * t.value / ceiling)
    job, stats = _through_model(profile, image, directory, seed, options, runtime_s, t.label, scale)
    raw = _measured(t, job)
    if scale > 1:
        return replace(raw, value=raw.value * scale, slowed=scale, host_ceiling=ceiling), raw
    if _ramped(profile, t):
        return raw, raw  # the model's time covers the ramp's cached writes too: as measured
    return less_host(raw, model_per_request_s(stats)), raw


def host_share_words(m: Measured, raw: Measured) -> str:
    """What target_on_host took out, as the test and the bench print it ("" for nothing)."""
    if m.slowed > 1:
        return (f"measured with the model slowed {m.slowed} times ({raw.value:.2f}) and scaled back: "
                f"the host itself carries {m.host_ceiling:.2f} {m.metric} of this workload")
    if m.model_us is None:
        return ""
    return (f"as measured {raw.value:.2f} ({raw.off_pct:+.1f}%): the host added "
            f"{(m.request_s * 1e6 - m.model_us):.0f} us to the model's {m.model_us:.0f} us a request")


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


SEEK_DISTANCES = (0.001, 0.01, 0.1, 1 / 3, 0.9)


def _seek_options(capacity: int, share: float) -> list[str]:
    """A 4 KiB read at depth 1 that alternates between two places `share` of the
    disk apart (fio's zoned access: two 4 KiB zones, zone_skip the distance)."""
    skip = max(4096, int(capacity * share) // 4096 * 4096 - 4096)
    return ["--rw=read", "--bs=4k", "--iodepth=1", "--zonemode=strided", "--zonesize=4k", "--zonerange=4k",
            f"--zoneskip={skip}", f"--size={capacity}"]


def _clat_ms(job: dict) -> float:
    return job["read"]["clat_ns"]["mean"] / 1e6


def seek_curve(where: str, capacity: int, distances: tuple[float, ...] = SEEK_DISTANCES,
               runtime_s: float = 3.0) -> list[Measured]:
    """A disk's mean time for a 4 KiB read that alternates between two places
    a share of the disk apart: the seek at that distance plus half a rotation
    on average (as fio saw it: a guest's disk, or an export)."""
    return [Measured(f"{share:.3f} of the disk", "ms",
                     _clat_ms(fio(where, *_seek_options(capacity, share), runtime_s=runtime_s)))
            for share in distances]


def seek_curve_on_host(profile: Profile, image: Path, directory: Path, capacity: int,
                       distances: tuple[float, ...] = SEEK_DISTANCES, *, seed: int = 1,
                       runtime_s: float = 3.0) -> list[Measured]:
    """The seek curve through nbdkit on this host, at the model's own time a
    read (a depth-1 figure, as less_host): request_s is the time as measured."""
    out = []
    for share in distances:
        job, stats = _through_model(profile, image, directory, seed, _seek_options(capacity, share), runtime_s,
                                    f"seek {share:.3f}")
        model_s = model_per_request_s(stats)
        out.append(Measured(f"{share:.3f} of the disk", "ms", model_s * 1e3, request_s=_clat_ms(job) / 1e3,
                            model_us=model_s * 1e6))
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
