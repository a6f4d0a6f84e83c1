"""The one table of metric names, units and directions.

Every sample iowatch stores names a metric from this table. Names are dotted
and end in their unit; the direction says whether a higher or a lower value is
better, or that the metric is information only (never a verdict on its own).
Parsers, the ingest API and the statistics all look metrics up here.
"""

from __future__ import annotations

from dataclasses import dataclass

HIGHER = "higher"
LOWER = "lower"
INFO = "info"
DIRECTIONS = (HIGHER, LOWER, INFO)


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    direction: str
    description: str
    # Every metric iowatch knows is a count, a rate, a size or a time: a
    # negative value can only come from a broken parser or agent.
    nonnegative: bool = True


# fio's default completion-latency percentiles, as (fio's key, our suffix).
FIO_PERCENTILES = (
    (1.0, "p1"), (5.0, "p5"), (10.0, "p10"), (20.0, "p20"), (30.0, "p30"),
    (40.0, "p40"), (50.0, "p50"), (60.0, "p60"), (70.0, "p70"), (80.0, "p80"),
    (90.0, "p90"), (95.0, "p95"), (99.0, "p99"), (99.5, "p99_5"),
    (99.9, "p99_9"), (99.95, "p99_95"), (99.99, "p99_99"),
)

# "mixed": fio's unified_rw_reporting, reads and writes reported as one direction;
# its metrics are named and judged like the others.
FIO_DIRECTIONS = ("read", "write", "trim", "mixed")
LATENCY_KINDS = ("slat", "clat", "lat")


def _fio_direction_metrics(ddir: str) -> list[Metric]:
    m = [
        Metric(f"{ddir}.bw_kib_s", "KiB/s", HIGHER,
               f"{ddir} bandwidth: the group's total io over its longest runtime (fio's aggrb), or one job's bw"),
        Metric(f"{ddir}.bw_min_kib_s", "KiB/s", HIGHER,
               f"slowest job's {ddir} bandwidth in the group (fio's minb)"),
        Metric(f"{ddir}.bw_max_kib_s", "KiB/s", HIGHER,
               f"fastest job's {ddir} bandwidth in the group (fio's maxb)"),
        Metric(f"{ddir}.iops", "IO/s", HIGHER, f"{ddir} I/O operations per second"),
        Metric(f"{ddir}.io_kib", "KiB", INFO, f"amount of {ddir} I/O done"),
        Metric(f"{ddir}.runtime_ms", "ms", INFO, f"{ddir} runtime of a job"),
        Metric(f"{ddir}.runtime_min_ms", "ms", LOWER,
               f"shortest {ddir} runtime of a job in the group (fio's mint)"),
        Metric(f"{ddir}.runtime_max_ms", "ms", LOWER,
               f"longest {ddir} runtime of a job in the group (fio's maxt)"),
    ]
    for kind in LATENCY_KINDS:
        for stat in ("min", "max", "mean", "stddev"):
            m.append(Metric(f"{ddir}.{kind}_{stat}_us", "us", LOWER,
                            f"{ddir} {kind} {stat}"))
    for _, suffix in FIO_PERCENTILES:
        m.append(Metric(f"{ddir}.clat_{suffix}_us", "us", LOWER,
                        f"{ddir} completion latency, {suffix[1:].replace('_', '.')}th percentile"))
    return m


def _device_metrics() -> list[Metric]:
    m = []
    # device.*: the device under test; device.members.*: the disks under a stacked
    # device (md's members) summed, where a plug's merges show (iowatch.diskstats).
    for prefix, of in (("device", "the device"), ("device.members", "the array's member disks")):
        for ddir in ("read", "write"):
            m += [
                Metric(f"{prefix}.{ddir}_ios", "count", LOWER,
                       f"{ddir} requests completed by {of} (same work in fewer IOs is better)"),
                Metric(f"{prefix}.{ddir}_merges", "count", INFO,
                       f"{ddir} requests merged before dispatch to {of}"),
                Metric(f"{prefix}.{ddir}_ticks_ms", "ms", LOWER, f"time {of} spent on {ddir}s"),
                Metric(f"{prefix}.{ddir}_iops", "IO/s", LOWER,
                       f"physical {ddir} requests per second of {of} during the workload "
                       "(from /proc/diskstats)"),
                Metric(f"{prefix}.{ddir}_bw_kib_s", "KiB/s", HIGHER,
                       f"physical {ddir} bandwidth of {of} during the workload (from /proc/diskstats)"),
                Metric(f"{prefix}.{ddir}_kib", "KiB", INFO, f"KiB {ddir} at {of}"),
                Metric(f"{prefix}.{ddir}_kib_per_io", "KiB", HIGHER,
                       f"average size of a {ddir} request at {of} (the same work in larger "
                       "requests is better)"),
            ]
    m += [
        Metric("device.in_queue_ms", "ms", LOWER, "time requests spent queued at the device"),
        Metric("device.util_pct", "%", INFO, "share of the run the device was busy"),
    ]
    return m


def _cpu_metrics() -> list[Metric]:
    return [
        Metric("cpu.usr_pct", "%", LOWER, "user CPU of a fio job"),
        Metric("cpu.sys_pct", "%", LOWER, "system CPU of a fio job"),
        Metric("cpu.ctx", "count", INFO, "context switches of a fio job"),
        Metric("cpu.majf", "count", INFO, "major page faults of a fio job"),
        Metric("cpu.minf", "count", INFO, "minor page faults of a fio job"),
        Metric("cpu.user_s", "s", LOWER, "user CPU time of the workload"),
        Metric("cpu.sys_s", "s", LOWER, "system CPU time of the workload"),
        Metric("wall_s", "s", LOWER, "wall-clock time of the workload"),
    ]


# fs_mark -v prints min/avg/max microseconds per system call.
FSMARK_SYSCALLS = ("creat", "write", "fsync", "sync", "close", "unlink")


def _fsmark_metrics() -> list[Metric]:
    m = [
        Metric("fsmark.files_per_s", "files/s", HIGHER, "files created per second"),
        Metric("fsmark.app_overhead_us", "us", LOWER,
               "time fs_mark spent outside file-writing system calls"),
        Metric("fsmark.fs_use_pct", "%", INFO, "file system use when the iteration ended"),
        Metric("fsmark.files", "count", INFO, "files written so far (fs_mark's Count)"),
        Metric("fsmark.file_size_bytes", "bytes", INFO, "size of each file"),
    ]
    for call in FSMARK_SYSCALLS:
        for stat in ("min", "avg", "max"):
            m.append(Metric(f"fsmark.{call}_{stat}_us", "us", LOWER, f"{call}() time, {stat}"))
    return m


def _script_metrics() -> list[Metric]:
    # Scripted workloads (such as the f2fs checkpoint study) time their steps.
    return [
        Metric("sync.time_ms", "ms", LOWER, "time of a timed sync (a checkpoint write)"),
        Metric("step.time_ms", "ms", LOWER, "time of one timed step of a scripted workload"),
        Metric("ratio.fs_to_raw", "ratio", HIGHER, "file system result over raw-device result"),
        # Published by the f2fs checkpoint study's seed (measured inside the kernel).
        Metric("f2fs.nat_flush_ms", "ms", LOWER, "time to flush NAT entries during a checkpoint"),
        Metric("f2fs.nat_blocks_accessed", "count", INFO, "NAT blocks accessed during a checkpoint"),
        Metric("f2fs.nat_blocks_read", "count", INFO, "NAT blocks read from disk during a checkpoint"),
    ]


def _build_table() -> dict[str, Metric]:
    table: dict[str, Metric] = {}
    for metric in (
        [m for d in FIO_DIRECTIONS for m in _fio_direction_metrics(d)]
        + _device_metrics() + _cpu_metrics() + _fsmark_metrics() + _script_metrics()
    ):
        assert metric.name not in table, f"metric {metric.name} declared twice"
        assert metric.direction in DIRECTIONS
        table[metric.name] = metric
    return table


METRICS: dict[str, Metric] = _build_table()


class UnknownMetric(KeyError):
    def __str__(self) -> str:
        return f"unknown metric {self.args[0]!r}: not in iowatch.metrics.METRICS"


def lookup(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise UnknownMetric(name) from None
