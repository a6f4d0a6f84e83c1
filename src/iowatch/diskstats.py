"""Device counters from /proc/diskstats, sampled around a workload.

Device-level counts show what the file system made of the work: the XFS
writeback study's win is best seen as physical write IOPS (jobs/studies/xfs-smallfile-writeback.yml).
Counts are steadier than times under emulation, so every run records them.
"""
from __future__ import annotations

from dataclasses import dataclass

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


def samples(before: DiskStats, after: DiskStats, seconds: float, group: str) -> list[Sample]:
    """The device metrics of one workload run, as group-level samples."""
    d = {f: getattr(after, f) - getattr(before, f) for f in DiskStats.__dataclass_fields__ if f != "name"}
    seconds = max(seconds, 1e-9)
    out = []
    for ddir in ("read", "write"):
        kib = d[f"{ddir}_sectors"] * SECTOR_BYTES / 1024
        out += [
            Sample.of(f"device.{ddir}_ios", d[f"{ddir}_ios"], group),
            Sample.of(f"device.{ddir}_merges", d[f"{ddir}_merges"], group),
            Sample.of(f"device.{ddir}_ticks_ms", d[f"{ddir}_ticks_ms"], group),
            Sample.of(f"device.{ddir}_kib", kib, group),
            Sample.of(f"device.{ddir}_iops", d[f"{ddir}_ios"] / seconds, group),
            Sample.of(f"device.{ddir}_bw_kib_s", kib / seconds, group),
        ]
    out.append(Sample.of("device.in_queue_ms", d["in_queue_ms"], group))
    out.append(Sample.of("device.util_pct", min(100.0, d["io_ticks_ms"] / (seconds * 10)), group))
    return out
