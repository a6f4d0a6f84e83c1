"""Device counters from /proc/diskstats, sampled around a workload.

Device-level counts show what the file system made of the work. Counts are
steadier than times under emulation, so every run records them, with the
average size of a write (device.write_kib_per_io), which does not move with
the run's length or the machine's load.

A stacked device (md RAID0) counts the bios submitted to it, before the block
layer merges them: a plug (seed 004's mechanism, blk_start_plug in
wb_writeback) merges adjacent requests in the member disks' queues, so only
the members' counters see it, and the array's write ticks include the time a
bio waited in the plug. For such a device the members' counters are
recorded too, summed, as device.members.* (member_names).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from iowatch.samples import Sample

SECTOR_BYTES = 512  # /proc/diskstats counts 512-byte sectors whatever the device's block size


@dataclass(frozen=True)
class DiskStats:
    name: str
    read_ios: int
    read_merges: int
    read_sectors: int
    read_ticks_ms: int
    write_ios: int
    write_merges: int
    write_sectors: int
    write_ticks_ms: int
    in_flight: int
    io_ticks_ms: int
    in_queue_ms: int


def parse(text: str) -> dict[str, DiskStats]:
    stats = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) < 14:
            continue
        n = list(map(int, f[3:14]))
        stats[f[2]] = DiskStats(f[2], *n)
    return stats


def read(name: str, text: str | None = None) -> DiskStats:
    text = text if text is not None else open("/proc/diskstats").read()
    stats = parse(text)
    if name not in stats:
        raise KeyError(f"device {name!r} is not in /proc/diskstats")
    return stats[name]


def member_names(name: str, sys_block: Path = Path("/sys/block")) -> list[str]:
    """The disks under a stacked device (/sys/block/NAME/slaves: md's members),
    sorted; [] for a plain disk."""
    return sorted(p.name for p in (sys_block / name / "slaves").glob("*"))


def _delta(before: DiskStats, after: DiskStats) -> dict[str, int]:
    return {f: getattr(after, f) - getattr(before, f) for f in DiskStats.__dataclass_fields__
            if f != "name"}


def _counts(d: dict[str, int], prefix: str, group: str, seconds: float) -> list[Sample]:
    out = []
    for ddir in ("read", "write"):
        kib = d[f"{ddir}_sectors"] * SECTOR_BYTES / 1024
        ios = d[f"{ddir}_ios"]
        out += [
            Sample.of(f"{prefix}.{ddir}_ios", ios, group),
            Sample.of(f"{prefix}.{ddir}_merges", d[f"{ddir}_merges"], group),
            Sample.of(f"{prefix}.{ddir}_ticks_ms", d[f"{ddir}_ticks_ms"], group),
            Sample.of(f"{prefix}.{ddir}_kib", kib, group),
            Sample.of(f"{prefix}.{ddir}_iops", ios / seconds, group),
            Sample.of(f"{prefix}.{ddir}_bw_kib_s", kib / seconds, group),
        ]
        if ios:
            out.append(Sample.of(f"{prefix}.{ddir}_kib_per_io", kib / ios, group))
    return out


def samples(before: DiskStats, after: DiskStats, seconds: float, group: str,
            members: tuple[list[DiskStats], list[DiskStats]] = ([], [])) -> list[Sample]:
    """The device metrics of one workload run, as group-level samples; with
    `members` (before, after: a stacked device's disks), their counters summed
    as device.members.*."""
    d = _delta(before, after)
    seconds = max(seconds, 1e-9)
    out = _counts(d, "device", group, seconds)
    out.append(Sample.of("device.in_queue_ms", d["in_queue_ms"], group))
    out.append(Sample.of("device.util_pct", min(100.0, d["io_ticks_ms"] / (seconds * 10)), group))
    if members[0]:
        deltas = [_delta(b, a) for b, a in zip(*members)]
        summed = {k: sum(x[k] for x in deltas) for k in deltas[0]}
        out += _counts(summed, "device.members", group, seconds)
    return out
