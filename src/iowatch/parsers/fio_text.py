"""Parser of fio's human-readable output, both generations, and of its lines quoted alone.

Mailing-list posts (the seeds) quote fio's "normal" output, often just a group
line such as `WRITE: io=163840KB, aggrb=5125KB/s, ...`. This parser reads
whole outputs and such bare lines into the same samples the JSON parser makes.

Two generations of format:
- before fio 2.17: `WRITE: io=…KB, aggrb=…KB/s, minb=…, maxb=…, mint=…msec, maxt=…msec`,
  per job `write: io=…, bw=…, iops=…, runt=…msec`; KB/MB/GB mean KiB/MiB/GiB.
- fio 2.17 and 3.x: `WRITE: bw=…MiB/s (…MB/s), …-… (…), io=…MiB (…MB), run=…-…msec`,
  per job `write: IOPS=…, BW=…MiB/s (…MB/s)(…MiB/…msec)`; the parenthesised SI
  figures repeat the IEC ones and are ignored.

Figures are what fio printed, so they carry its display rounding. fio 2's
decimals are not decimal fractions: its num2str printed the remainder in
1/1024ths, shortened by rounding up (1684 MiB + 215/1024 prints "1684.3MB/s"),
so such a figure is only good to one unit of its prefix.

fio's unified_rw_reporting prints a "mixed" direction (`MIXED:` group lines,
`mixed:` job lines) that is read like the others. With unified_rw_reporting=both
fio 3.33 prints the job's mixed line as zeros (`mixed: IOPS=0, BW=0 (0)(0B/41msec)`):
such a line gives no job samples, only its group line does.

A line of a known kind that does not read as such, or a figure no tool prints
(past 2^64), is a ParseError naming the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from iowatch.parsers.fio_run import (DirectionStats, GroupStats, disk_samples,
                                     group_samples, job_labels, job_samples,
                                     members_label)
from iowatch.samples import JobFailure, ParseError, ParseResult, plausible, storable_name

# Multipliers to KiB. Old fio's KB/MB/GB/TB are binary; fio 3's IEC units are
# KiB/MiB/GiB/TiB and its lowercase "kB" (SI) is 1000 bytes.
_SIZE_KIB = {
    "B": 1 / 1024, "KB": 1, "KIB": 1, "MB": 1024, "MIB": 1024, "GB": 1024**2, "GIB": 1024**2,
    "TB": 1024**3, "TIB": 1024**3, "PB": 1024**4, "PIB": 1024**4,
}
_COUNT_SUFFIX = {"": 1, "k": 1e3, "K": 1e3, "m": 1e6, "M": 1e6, "g": 1e9, "G": 1e9}
_TIME_US = {"nsec": 1e-3, "usec": 1.0, "msec": 1e3}

_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"   # thousands separators allowed
_SIZE_RE = re.compile(rf"^({_NUMBER})\s*([KMGTP]i?B|kB|B)$")
_COUNT_RE = re.compile(rf"^({_NUMBER})([kKmMgG]?)$")
_MSEC_RE = re.compile(r"^\s*(\d+)\s*msec$")

_GROUP_HEADER = re.compile(r"^Run status group (\d+) \(all jobs\):")
_GROUP_LINE = re.compile(r"^\s*(READ|WRITE|TRIM|MIXED):\s+(?=io=|bw=)(.*)$")
_NEW_GROUP_FIELDS = re.compile(
    r"^bw=(\S+) \([^)]*\), (\S+?)-(\S+) \([^)]*\), io=(\S+) \([^)]*\), run=(\d+)-(\d+)msec\s*$")
_JOB_HEADER = re.compile(
    r"^(?P<name>.+?): \(groupid=(?P<group>\d+), jobs=\d+\): err=\s*(?P<err>\d+)"
    r"(?: \((?P<msg>.*)\))?: pid=(?P<pid>\d+)")
_OLD_JOB_LINE = re.compile(r"^\s+(read|write|trim|mixed)\s*: (io=.*)$")
_NEW_JOB_LINE = re.compile(
    r"^\s+(read|write|trim|mixed): IOPS=(\S+), BW=(\S+) \([^)]*\)\((\S+)/(\d+)msec\)")
_LATENCY = re.compile(
    # fio pads small figures ("stdev= 9.24"): %5.02f
    r"^\s+(slat|clat|lat) \((nsec|usec|msec)\): "
    r"min=\s*(\S+), max=\s*(\S+), avg=\s*(\S+), stdev=\s*(\S+)\s*$")
_PERCENTILE_HEADER = re.compile(r"^\s+clat percentiles \((nsec|usec|msec)\):")
_PERCENTILE = re.compile(r"(\d+\.\d+)th=\[\s*(\S+?)\]")
_CPU = re.compile(r"^\s+cpu\s+: usr=([\d.]+)%, sys=([\d.]+)%, ctx=(\d+), majf=(\d+), minf=(\d+)")
_EXPECTED_CPU = "a fio cpu line: 'cpu : usr=P%, sys=P%, ctx=N, majf=N, minf=N'"
_DISK = re.compile(r"^\s*(\S+): (ios=\d+/\d+,.*)$")
_PID_ERROR = re.compile(r"^fio: pid=(\d+), err=(\d+)/(.*)$")
_VERSION = re.compile(r"^fio-(\d+\.\d+\S*)\s*$")


_NUMBER_RE = re.compile(rf"^(?:{_NUMBER})$")


def _number(s: str) -> float:
    """A decimal figure as fio prints it; ValueError for anything else or one past 2^64."""
    if not _NUMBER_RE.match(s):
        raise ValueError(s)
    value = float(s.replace(",", ""))
    if not plausible(value):
        raise ValueError(s)
    return value


def _message(s: str) -> str:
    """fio's error text, kept as a failure's message: what a store cannot hold is replaced, and cut."""
    return re.sub("[\x00\ud800-\udfff]", "\ufffd", s)[:1000]


def _small_int(s: str) -> int:
    """An error number or a pid: ValueError past what either can be."""
    if len(s) > 10 or int(s) >= 2**31:
        raise ValueError(s)
    return int(s)


def size_kib(s: str) -> float:
    """'131072KB', '1024.0MB', '1984KiB', '2,968KB', '512B' -> KiB."""
    m = _SIZE_RE.match(s.strip())
    if not m:
        raise ValueError(s)
    unit = m.group(2)
    factor = 1000 / 1024 if unit == "kB" else _SIZE_KIB[unit.upper()]
    return _number(m.group(1)) * factor


def rate_kib_s(s: str) -> float:
    """'5125KB/s', '1684.3MB/s', '26.5MiB/s', '2,968KB/s' -> KiB/s."""
    s = s.strip()
    if s == "0":
        return 0.0  # fio prints a zero rate bare: 'BW=0 (0)'
    if not s.endswith("/s"):
        raise ValueError(s)
    return size_kib(s[:-2])


def count(s: str) -> float:
    """'842', '13.9k' -> a plain number (fio scales counts by 1000)."""
    m = _COUNT_RE.match(s.strip())
    if not m:
        raise ValueError(s)
    return _number(m.group(1)) * _COUNT_SUFFIX[m.group(2)]


def msec(s: str) -> float:
    m = _MSEC_RE.match(s)
    if not m:
        raise ValueError(s)
    return _number(m.group(1))


def _fields(s: str) -> dict[str, str]:
    """'io=1KB, aggrb=2,968KB/s' -> {'io': '1KB', 'aggrb': '2,968KB/s'}."""
    out = {}
    for part in re.split(r",\s+(?=[a-z_]+=)", s.strip()):
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(part)
        out[key.strip()] = value.strip()
    return out


@dataclass
class _Job:
    group: str
    name: str
    error: int
    message: str
    pid: int
    directions: dict[str, DirectionStats] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)


class _Reader:
    """One pass over the lines; state says which job and group we are in."""

    def __init__(self, path: str):
        self.path = path
        self.version: str | None = None
        self.jobs: list[_Job] = []
        self.groups: list[tuple[str, str, GroupStats]] = []   # (group, ddir, stats)
        self.disks: list[tuple[str, dict[str, float]]] = []
        self.pid_errors: list[tuple[int, int, str]] = []
        self.job: _Job | None = None
        self.ddir: str | None = None          # the job's direction being read
        self.percentile_scale: float | None = None
        self.group: str | None = None         # set by "Run status group N"
        self.bare_group: list[str] | None = None  # directions seen in the current headerless group
        self.next_bare = 0

    def fail(self, lineno: int, expected: str, found: str):
        raise ParseError(self.path, lineno, expected, found.strip())

    def read(self, text: str) -> None:
        for lineno, line in enumerate(text.splitlines(), 1):
            self.line(lineno, line)

    def line(self, lineno: int, line: str) -> None:
        if self.percentile_scale is not None:
            if line.lstrip().startswith("|"):
                self.percentiles(lineno, line)
                return
            self.percentile_scale = None

        if m := _GROUP_LINE.match(line):
            self.group_line(lineno, m.group(1).lower(), m.group(2))
            return
        self.bare_group = None  # any other line ends a run of headerless group lines
        if not line.strip():
            self.group = None
            return
        if m := _GROUP_HEADER.match(line):
            if not storable_name(m.group(1)):
                self.fail(lineno, "a fio group header: 'Run status group N (all jobs):'", line)
            self.group, self.job = m.group(1), None
        elif m := _JOB_HEADER.match(line):
            try:
                if not (storable_name(m["name"]) and storable_name(m["group"])):
                    raise ValueError(m["name"])
                self.job = _Job(m["group"], m["name"], _small_int(m["err"]), _message(m["msg"] or ""),
                                _small_int(m["pid"]))
            except ValueError:
                self.fail(lineno, "a fio job header: 'NAME: (groupid=N, jobs=N): err= N: pid=N'", line)
            self.jobs.append(self.job)
            self.ddir = None
        elif m := _VERSION.match(line):
            self.version = m.group(1)
        elif m := _PID_ERROR.match(line):
            try:
                self.pid_errors.append((_small_int(m.group(1)), _small_int(m.group(2)),
                                        _message(m.group(3))))
            except ValueError:
                self.fail(lineno, "a fio error line: 'fio: pid=N, err=N/MESSAGE'", line)
        elif m := _DISK.match(line):
            self.disk(lineno, m.group(1), m.group(2))
        elif self.job is not None:
            self.job_line(lineno, line)

    def group_line(self, lineno: int, ddir: str, rest: str) -> None:
        expected = ("a fio group line: 'io=SIZE, aggrb=RATE, minb=RATE, maxb=RATE, "
                    "mint=Nmsec, maxt=Nmsec' or 'bw=RATE (…), RATE-RATE (…), io=SIZE (…), run=N-Nmsec'")
        try:
            if rest.startswith("io="):
                f = _fields(rest)
                g = GroupStats(io_kib=size_kib(f["io"]), bw_kib_s=rate_kib_s(f["aggrb"]),
                               bw_min_kib_s=rate_kib_s(f["minb"]), bw_max_kib_s=rate_kib_s(f["maxb"]),
                               runtime_min_ms=msec(f["mint"]), runtime_max_ms=msec(f["maxt"]))
            else:
                m = _NEW_GROUP_FIELDS.match(rest)
                if not m:
                    raise ValueError(rest)
                g = GroupStats(io_kib=size_kib(m.group(4)), bw_kib_s=rate_kib_s(m.group(1)),
                               bw_min_kib_s=rate_kib_s(m.group(2)), bw_max_kib_s=rate_kib_s(m.group(3)),
                               runtime_min_ms=_number(m.group(5)), runtime_max_ms=_number(m.group(6)))
        except (KeyError, ValueError):
            self.fail(lineno, expected, f"{ddir.upper()}: {rest}")
        if self.group is not None:
            group = self.group
        else:
            # A line quoted without its "Run status group" header: each run of
            # such lines is a group of its own, numbered in order of appearance.
            if self.bare_group is None or ddir in self.bare_group:
                self.bare_group = []
                self.next_bare += 1
            self.bare_group.append(ddir)
            group = str(self.next_bare - 1)
        self.groups.append((group, ddir, g))

    def job_line(self, lineno: int, line: str) -> None:
        job = self.job
        if m := _OLD_JOB_LINE.match(line):
            self.ddir = m.group(1)
            try:
                f = _fields(m.group(2))
                job.directions[self.ddir] = DirectionStats(
                    io_kib=size_kib(f["io"]), bw_kib_s=rate_kib_s(f["bw"]),
                    iops=count(f["iops"]), runtime_ms=msec(f["runt"]))
            except (KeyError, ValueError):
                self.fail(lineno, "a fio job line: 'DIR: io=SIZE, bw=RATE, iops=N, runt=Nmsec'", line)
        elif m := _NEW_JOB_LINE.match(line):
            self.ddir = m.group(1)
            try:
                job.directions[self.ddir] = DirectionStats(
                    io_kib=size_kib(m.group(4)), bw_kib_s=rate_kib_s(m.group(3)),
                    iops=count(m.group(2)), runtime_ms=_number(m.group(5)))
            except ValueError:
                self.fail(lineno, "a fio job line: 'DIR: IOPS=N, BW=RATE (…)(SIZE/Nmsec)'", line)
        elif (m := _LATENCY.match(line)) and self.ddir in job.directions:
            scale = _TIME_US[m.group(2)]
            try:
                stats = tuple(count(v) * scale for v in m.group(3, 4, 5, 6))
            except ValueError:
                self.fail(lineno, "a fio latency line: 'KIND (UNIT): min=N, max=N, avg=N, stdev=N'", line)
            job.directions[self.ddir].latency_us[m.group(1)] = stats
        elif (m := _PERCENTILE_HEADER.match(line)) and self.ddir in job.directions:
            self.percentile_scale = _TIME_US[m.group(1)]
        elif m := _CPU.match(line):
            try:
                job.cpu = dict(zip(("usr_pct", "sys_pct", "ctx", "majf", "minf"),
                                   map(_number, m.groups())))
            except ValueError:
                self.fail(lineno, _EXPECTED_CPU, line)

    def percentiles(self, lineno: int, line: str) -> None:
        target = self.job.directions[self.ddir].clat_percentiles_us
        try:
            for p, value in _PERCENTILE.findall(line):
                target[_number(p)] = count(value) * self.percentile_scale
        except ValueError:
            self.fail(lineno, "a fio percentile line: '| P.PPth=[N], P.PPth=[N], …'", line)

    def disk(self, lineno: int, device: str, rest: str) -> None:
        """`vda: ios=0/0, merge=0/0, ticks=0/0, in_queue=0, util=0.00%` and md's aggr* figures."""
        try:
            if not storable_name(device):
                raise ValueError(device)
            f = _fields(rest)
            own, members = {}, {}
            for prefix, target in (("", own), ("aggr", members)):
                if f"{prefix}ios" not in f:
                    continue
                for key, name in (("ios", "ios"), ("merge", "merges"), ("ticks", "ticks")):
                    read, write = f[f"{prefix}{key}"].split("/")
                    target[f"read_{name}"], target[f"write_{name}"] = _number(read), _number(write)
                target["in_queue"] = _number(f[f"{prefix}in_queue"])
                target["util"] = _number(f[f"{prefix}util"].removesuffix("%"))
        except (KeyError, ValueError):
            self.fail(lineno, "a fio disk line: 'DEV: ios=R/W, merge=R/W, ticks=R/W, "
                              "in_queue=N, util=P%'", f"{device}: {rest}")
        self.disks.append((device, own))
        if members:
            self.disks.append((members_label(device), members))


def first_line(text: str) -> tuple[int | None, str]:
    """(number, start) of the first non-blank line: what an error message shows."""
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip():
            return lineno, line.strip()[:60]
    return None, ""


def parse(text: str, path: str = "<stdin>") -> ParseResult:
    reader = _Reader(path)
    reader.read(text)
    if not (reader.jobs or reader.groups or reader.disks or reader.pid_errors):
        lineno, found = first_line(text)
        raise ParseError(path, lineno, "fio text output (a job section, a 'READ:'/'WRITE:' "
                         "group line or disk stats)", found)
    result = ParseResult(tool="fio", tool_version=reader.version)

    labels = job_labels([(j.group, j.name) for j in reader.jobs])
    iops: dict[tuple[str, str], float] = {}
    for job, label in zip(reader.jobs, labels):
        if job.error:
            result.failures.append(JobFailure(job.group, label, job.error, job.message))
            continue
        result.samples += job_samples(job.group, label, job.directions, job.cpu)
        for ddir, d in job.directions.items():
            if d.io_kib > 0 or d.iops > 0:  # fio's zero mixed line (unified_rw_reporting=both) is no count
                iops[job.group, ddir] = iops.get((job.group, ddir), 0) + d.iops
    # A job that failed before it started has no section, only fio's pid line.
    reported = {j.pid for j in reader.jobs}
    for pid, error, message in reader.pid_errors:
        if pid not in reported:
            result.failures.append(JobFailure("?", f"pid {pid}", error, message))

    for group, ddir, g in reader.groups:
        # fio's group line has no IOPS: the sum of the group's jobs, when they are here.
        g.iops = iops.get((group, ddir))
        result.samples += group_samples(group, ddir, g)
    for device, stats in reader.disks:
        result.samples += disk_samples(device, stats)
    return result
