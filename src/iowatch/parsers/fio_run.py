"""What fio's JSON and text outputs have in common: the shape of a run's samples.

Both fio parsers read their format into the records below (numbers already in
iowatch's units: KiB, KiB/s, ms, µs) and hand them to the functions here, so a
job's or a group's samples are laid out in one place whichever format they came
from: the metric names, which directions count, and how repeated job names are
told apart.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from iowatch.metrics import FIO_DIRECTIONS, FIO_PERCENTILES, LATENCY_KINDS
from iowatch.samples import Sample

DISK_GROUP = "disk"

# fio's clat percentile (e.g. 99.5) -> our metric suffix (e.g. "p99_5").
_PERCENTILE_SUFFIX = {p: suffix for p, suffix in FIO_PERCENTILES}


@dataclass
class DirectionStats:
    """One job's numbers for one data direction (read, write or trim)."""
    io_kib: float
    bw_kib_s: float
    iops: float
    runtime_ms: float
    # kind ("slat", "clat", "lat") -> (min, max, mean, stddev) in µs
    latency_us: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)
    # fio's percentile (99.0) -> completion latency in µs
    clat_percentiles_us: dict[float, float] = field(default_factory=dict)


@dataclass
class GroupStats:
    """One direction of a "Run status group" line, as fio prints it."""
    io_kib: float
    bw_kib_s: float          # aggrb
    bw_min_kib_s: float      # minb
    bw_max_kib_s: float      # maxb
    runtime_min_ms: float    # mint
    runtime_max_ms: float    # maxt
    iops: float | None = None  # not on fio's line: the sum of the group's jobs, when known


def percentile_suffix(percentile: float) -> str | None:
    """Our suffix for one of fio's default percentiles; None for any other."""
    for p, suffix in _PERCENTILE_SUFFIX.items():
        if abs(p - percentile) < 1e-6:
            return suffix
    return None


def job_labels(jobs: list[tuple[str, str]]) -> list[str]:
    """Label each (group, jobname) so no two jobs of a group share a label.

    numjobs=N without group_reporting gives N jobs of one name: all of them,
    the first included, become name#1 … name#N in the order fio lists them.
    """
    counts = Counter(jobs)
    seen: Counter = Counter()
    labels = []
    for key in jobs:
        group, name = key
        if counts[key] > 1:
            seen[key] += 1
            labels.append(f"{name}#{seen[key]}")
        else:
            labels.append(name)
    return labels


def job_samples(group: str, job: str, directions: dict[str, DirectionStats],
                cpu: dict[str, float]) -> list[Sample]:
    """The samples of one job: per direction that did I/O, then its CPU use."""
    out = []
    for ddir in FIO_DIRECTIONS:
        d = directions.get(ddir)
        if d is None or not (d.io_kib > 0 or d.iops > 0):
            continue  # an unused direction's zeros are not measurements
        out += [Sample.of(f"{ddir}.bw_kib_s", d.bw_kib_s, group, job),
                Sample.of(f"{ddir}.iops", d.iops, group, job),
                Sample.of(f"{ddir}.io_kib", d.io_kib, group, job),
                Sample.of(f"{ddir}.runtime_ms", d.runtime_ms, group, job)]
        for kind in LATENCY_KINDS:
            stats = d.latency_us.get(kind)
            # fio reports all-zero slat for sync engines: it measured nothing.
            if stats is None or not any(stats[:3]):
                continue
            for stat, value in zip(("min", "max", "mean", "stddev"), stats):
                out.append(Sample.of(f"{ddir}.{kind}_{stat}_us", value, group, job))
        for percentile, value in sorted(d.clat_percentiles_us.items()):
            suffix = percentile_suffix(percentile)
            if suffix is not None:
                out.append(Sample.of(f"{ddir}.clat_{suffix}_us", value, group, job))
    for name in ("usr_pct", "sys_pct", "ctx", "majf", "minf"):
        if name in cpu:
            out.append(Sample.of(f"cpu.{name}", cpu[name], group, job))
    return out


def group_samples(group: str, ddir: str, g: GroupStats) -> list[Sample]:
    """The group-level (job None) samples of one direction of a group."""
    out = [Sample.of(f"{ddir}.io_kib", g.io_kib, group),
           Sample.of(f"{ddir}.bw_kib_s", g.bw_kib_s, group),
           Sample.of(f"{ddir}.bw_min_kib_s", g.bw_min_kib_s, group),
           Sample.of(f"{ddir}.bw_max_kib_s", g.bw_max_kib_s, group),
           Sample.of(f"{ddir}.runtime_min_ms", g.runtime_min_ms, group),
           Sample.of(f"{ddir}.runtime_max_ms", g.runtime_max_ms, group)]
    if g.iops is not None:
        out.append(Sample.of(f"{ddir}.iops", g.iops, group))
    return out


# Our device metric -> fio's name for it, in the JSON and in the text's
# "Disk stats" line (text keys are split into read/write by their "a/b" form).
DISK_METRICS = (
    ("device.read_ios", "read_ios"), ("device.write_ios", "write_ios"),
    ("device.read_merges", "read_merges"), ("device.write_merges", "write_merges"),
    ("device.read_ticks_ms", "read_ticks"), ("device.write_ticks_ms", "write_ticks"),
    ("device.in_queue_ms", "in_queue"), ("device.util_pct", "util"),
)


def disk_samples(device: str, stats: dict[str, float]) -> list[Sample]:
    """Samples of one device from fio's disk_util names (read_ios, util, …)."""
    return [Sample.of(metric, stats[key], DISK_GROUP, device)
            for metric, key in DISK_METRICS if key in stats]


def members_label(device: str) -> str:
    """Job label of the aggr_* figures fio prints for an md/dm device.

    They are the members' stats averaged over the members (util: the busiest
    member's); each member also has its own entry under its own name.
    """
    return f"{device}/members"
