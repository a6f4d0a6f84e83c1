"""LKP's stat names onto iowatch's metric table: the one mapping, as data.

LKP's parsers (programs/fio/parse, programs/fsmark/parse, GNU time) write
flat names such as fio.write_bw_MBps; each row here says which iowatch metric
(iowatch.metrics) it is and the factor that converts its unit. Stats with no
row (fio.latency_*%, vmstat, interrupts, ...) stay in the raw result root,
which the bundle keeps. docs/lab.md shows this table.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from iowatch.metrics import METRICS
from iowatch.samples import Sample


@dataclass(frozen=True)
class Row:
    pattern: str  # LKP's stat name, a regular expression; its groups fill `metric`
    metric: str  # iowatch's metric, "{0}" etc. from the pattern's groups
    factor: float  # LKP's value times this is iowatch's
    group: str  # which job group: "fio" (fio's group 0), "fsmark", or "run" (the tool's process)
    note: str


# fio's JSON gives bw in KiB/s; LKP divides by 1024 and calls it MBps (MiB/s).
# Its latencies come from fio's *_ns objects: nanoseconds, whatever the name says.
ROWS: tuple[Row, ...] = (
    Row(r"fio\.(read|write)_bw_MBps", "{0}.bw_kib_s", 1024, "fio", "MiB/s -> KiB/s"),
    Row(r"fio\.(read|write)_iops", "{0}.iops", 1, "fio", "IO/s"),
    Row(r"fio\.(read|write)_clat_mean_ns", "{0}.clat_mean_us", 1e-3, "fio", "ns -> us"),
    Row(r"fio\.(read|write)_clat_stddev", "{0}.clat_stddev_us", 1e-3, "fio",
        "ns (fio's clat_ns) -> us"),
    Row(r"fio\.(read|write)_clat_(90|95|99)%_ns", "{0}.clat_p{1}_us", 1e-3, "fio", "ns -> us"),
    Row(r"fio\.(read|write)_slat_mean_us", "{0}.slat_mean_us", 1e-3, "fio",
        "named _us but holds fio's slat_ns mean: ns -> us"),
    Row(r"fio\.(read|write)_slat_stddev", "{0}.slat_stddev_us", 1e-3, "fio",
        "ns (fio's slat_ns) -> us"),
    Row(r"fsmark\.files_per_sec", "fsmark.files_per_s", 1, "fsmark", "files/s"),
    Row(r"fsmark\.app_overhead", "fsmark.app_overhead_us", 1, "fsmark", "us"),
    # GNU time around the benchmark's run script (LKP's <program>.time).
    Row(r"(?:fio|fsmark)\.time\.elapsed_time", "wall_s", 1, "run", "s"),
    Row(r"(?:fio|fsmark)\.time\.user_time", "cpu.user_s", 1, "run", "s"),
    Row(r"(?:fio|fsmark)\.time\.system_time", "cpu.sys_s", 1, "run", "s"),
)
_COMPILED = tuple((re.compile(r.pattern), r) for r in ROWS)

for _row in ROWS:  # every target must be in the metric table (checked once, at import)
    for _d in ("read", "write"):
        for _p in ("90", "95", "99"):
            _name = _row.metric.format(_d, _p)
            assert _name in METRICS, f"lkp mapping names {_name}, not in iowatch.metrics"


def metric_for(stat: str) -> tuple[str, float, str] | None:
    """(iowatch metric, factor, group kind) for one LKP stat name, or None."""
    for rx, row in _COMPILED:
        m = rx.fullmatch(stat)
        if m:
            return row.metric.format(*m.groups()), row.factor, row.group
    return None


def samples(stats: dict[str, float], groups: dict[str, str]) -> list[Sample]:
    """The mapped samples of one LKP iteration. `groups` is the study's
    (fio group id "0" or "fsmark" -> group name); the tool's wall and CPU go to
    the group the native runner gives them ("run" for fio, the fs_mark group)."""
    out = []
    for stat, value in stats.items():
        hit = metric_for(stat)
        if hit is None or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        metric, factor, kind = hit
        if kind == "fio":
            group = groups.get("0", "fio")
        elif kind == "fsmark":
            group = groups.get("fsmark", "fsmark")
        else:
            group = groups.get("fsmark", "fsmark") if stat.startswith("fsmark.") else "run"
        out.append(Sample.of(metric, value * factor, group))
    return out


def table() -> list[tuple[str, str, str]]:
    """(LKP stat, iowatch metric, conversion) for the docs."""
    return [(r.pattern.replace("\\", ""), r.metric, r.note) for r in ROWS]
