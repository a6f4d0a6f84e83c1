"""Parser of fio's JSON output (--output-format=json and json+), fio 2.x and 3.x.

Reads one fio JSON document (text fio printed before or after it, such as
warnings or the normal output of --output-format=normal,json, is skipped) into
samples: per job, per job group (computed from the jobs exactly as fio computes
its "Run status group" line) and per disk. The two generations differ in units:
fio 2.x writes latencies in µs under clat/slat/lat and `io_bytes` in KiB; fio 3
writes nanoseconds under clat_ns/slat_ns/lat_ns and has `io_kbytes` beside a
true `io_bytes`.

Every value read is checked for its type and range (a number fio can print:
finite, from 0 to 2^64); one that is not is a ParseError naming its place in
the document, such as jobs[1].write.clat_ns.mean.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from iowatch.metrics import FIO_DIRECTIONS, LATENCY_KINDS
from iowatch.parsers.fio_run import (DISK_METRICS, DirectionStats, GroupStats, disk_samples,
                                     group_samples, job_labels, job_samples,
                                     members_label)
from iowatch.samples import JobFailure, ParseError, ParseResult, plausible, storable_name


def find_json_start(text: str) -> int | None:
    """Offset of the first line that opens a JSON object, or None."""
    offset = 0
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("{"):
            return offset + len(line) - len(line.lstrip())
        offset += len(line)
    return None


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _found_at(text: str, offset: int) -> str:
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    return text[line_start:line_end if line_end >= 0 else len(text)].strip()[:60]


def _int_token(digits: str) -> int | float:
    """A JSON integer; one too long for any 64-bit counter becomes a float (inf)
    for the range check to refuse, not Python's int-conversion limit error."""
    return int(digits) if len(digits) <= 40 else float(digits)


def load(text: str, path: str) -> dict:
    """The fio JSON document inside text; ParseError names the failing line."""
    start = find_json_start(text)
    if start is None:
        raise ParseError(path, None, "fio JSON output (a line starting with '{')",
                         text.strip().splitlines()[0][:60] if text.strip() else "")
    try:
        doc, _end = json.JSONDecoder(parse_int=_int_token).raw_decode(text, start)
    except json.JSONDecodeError as e:
        found = _found_at(text, e.pos) if e.pos < len(text) else "end of input"
        raise ParseError(path, e.lineno, f"fio JSON ({e.msg})", found) from None
    except RecursionError:
        # fio's documents are a few levels deep; Python's decoder gives up far past that.
        raise ParseError(path, _line_of(text, start),
                         "fio JSON (this document is nested too deep to be fio's)",
                         _found_at(text, start)) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        keys = ", ".join(list(doc)[:6]) if isinstance(doc, dict) else type(doc).__name__
        raise ParseError(path, _line_of(text, start),
                         "a fio JSON object with a 'jobs' list", keys)
    return doc


_REQUIRED = object()


def _shown(value) -> str:
    """A found value for a message: containers by their type (a deep one has no repr)."""
    if isinstance(value, (dict, list)):
        return f"a JSON {'object' if isinstance(value, dict) else 'array'}"
    return "null" if value is None else json.dumps(value) if isinstance(value, (bool, str)) else repr(value)


class _Reader:
    """Typed access to the document's values: a wrong type, a missing required key
    or an impossible figure is a ParseError naming where in the document it is."""

    def __init__(self, path: str):
        self.path = path

    def fail(self, where: str, expected: str, value=_REQUIRED):
        raise ParseError(self.path, None, f"{expected} at {where}",
                         "no such key" if value is _REQUIRED else _shown(value))

    def obj(self, value, where: str) -> dict:
        if not isinstance(value, dict):
            self.fail(where, "a JSON object", value)
        return value

    def number(self, d: dict, key: str, where: str, default=_REQUIRED) -> int | float:
        """d[key] as fio prints a figure; default when the key is absent (none: required)."""
        value = d.get(key, default)
        if value is _REQUIRED:
            self.fail(f"{where}.{key}", "a number")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not plausible(value):
            self.fail(f"{where}.{key}", "a number from 0 to 2^64", value)
        return value

    def integer(self, d: dict, key: str, where: str, default=_REQUIRED, bits: int = 31) -> int:
        """d[key] as fio prints a count (%llu): whole, 0 <= value < 2^bits; a float here
        would make the group line's integer arithmetic overflow."""
        value = d.get(key, default)
        if value is _REQUIRED:
            self.fail(f"{where}.{key}", "an integer")
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**bits:
            self.fail(f"{where}.{key}", f"an integer from 0 to 2^{bits}", value)
        return value

    def string(self, d: dict, key: str, where: str, default: str | None) -> str | None:
        value = d.get(key, default)
        if value is not default and not isinstance(value, str):
            self.fail(f"{where}.{key}", "a string", value)
        return value

    def name(self, d: dict, key: str, where: str) -> str:
        """A job's or a device's name: it labels samples, so it must be storable."""
        value = self.string(d, key, where, "?")
        if not storable_name(value):
            self.fail(f"{where}.{key}", "a name of at most 256 characters, without NUL or lone surrogates", value)
        return value


@dataclass
class _Ddir:
    """One job's numbers for one direction, as read: what the samples and the group line need."""
    stats: DirectionStats
    io_bytes: int   # as fio wrote it: KiB in fio 2, bytes in fio 3
    total_ios: int
    fio3: bool

    @property
    def did_io(self) -> bool:
        return self.io_bytes > 0 or self.total_ios > 0


def _direction(r: _Reader, d: dict, where: str) -> _Ddir:
    fio3 = "io_kbytes" in d
    io_bytes = r.integer(d, "io_bytes", where, 0, bits=64)
    # fio 3: io_bytes are bytes and io_kbytes KiB; fio 2: io_bytes are KiB.
    io_kib = r.integer(d, "io_kbytes", where, bits=64) if fio3 else io_bytes
    stats = DirectionStats(io_kib=io_kib, bw_kib_s=r.integer(d, "bw", where, 0, bits=64),
                           iops=r.number(d, "iops", where, 0),
                           runtime_ms=r.integer(d, "runtime", where, 0, bits=64))
    for kind in LATENCY_KINDS:
        if f"{kind}_ns" in d:
            key, scale = f"{kind}_ns", 1000.0
        elif kind in d:
            key, scale = kind, 1.0
        else:
            continue
        lat = r.obj(d[key], f"{where}.{key}")
        stats.latency_us[kind] = tuple(r.number(lat, k, f"{where}.{key}", 0) / scale
                                       for k in ("min", "max", "mean", "stddev"))
        if kind == "clat" and "percentile" in lat:
            at = f"{where}.{key}.percentile"
            for p, value in r.obj(lat["percentile"], at).items():
                try:
                    percentile = float(p)
                except ValueError:
                    percentile = -1.0
                if not 0 <= percentile <= 100:
                    r.fail(at, "percentiles such as \"99.000000\" as keys", p)
                # fio 2 adds a "0.00": 0 entry after the real ones.
                if percentile > 0:
                    stats.clat_percentiles_us[percentile] = r.number(lat["percentile"], p, at) / scale
    return _Ddir(stats, io_bytes, r.integer(d, "total_ios", where, 0, bits=64), fio3)


def _group_stats(ddirs: list[_Ddir]) -> GroupStats | None:
    """A group's line for one direction, with fio's integer arithmetic.

    fio 3 (stat.c, __show_run_stats) works in bytes: each job's bw is
    io_bytes * 1000 / runtime, the group's aggrb is the summed io_bytes * 1000
    over the longest runtime. fio 2 did the same in KiB, so its minb can be a
    KiB/s below the job's own bw, as its text shows.
    """
    ran = [d for d in ddirs if d.stats.runtime_ms > 0 and d.did_io]
    if not ran:
        return None
    # fio 2's io_bytes are KiB; fio 3's are bytes.
    unit = 1024 if ran[0].fio3 else 1
    ios = [d.io_bytes for d in ran]
    runtimes = [d.stats.runtime_ms for d in ran]
    bws = [io * 1000 // rt for io, rt in zip(ios, runtimes)]
    return GroupStats(
        io_kib=sum(ios) / unit,
        bw_kib_s=(sum(ios) * 1000 // max(runtimes)) / unit,
        bw_min_kib_s=min(bws) / unit, bw_max_kib_s=max(bws) / unit,
        runtime_min_ms=min(runtimes), runtime_max_ms=max(runtimes),
        iops=sum(d.stats.iops for d in ran))


# fio's disk_util keys whose figures become samples, the md array's aggr_* ones
# under our names (fio spells one of them "aggr_write_merge", without the s).
_DISK_KEYS = tuple(key for _, key in DISK_METRICS)
_AGGR_KEYS = {f"aggr_{key}": key for key in (
    "read_ios", "write_ios", "read_merges", "read_ticks", "write_ticks", "in_queue", "util")}
_AGGR_KEYS["aggr_write_merge"] = "write_merges"


def parse(text: str, path: str = "<stdin>") -> ParseResult:
    doc = load(text, path)
    r = _Reader(path)
    version = r.string(doc, "fio version", "document", None)
    result = ParseResult(tool="fio", tool_version=version.removeprefix("fio-") if version else None)
    jobs = [r.obj(job, f"jobs[{i}]") for i, job in enumerate(doc["jobs"])]
    names = [(str(r.integer(job, "groupid", f"jobs[{i}]", 0)),
              r.name(job, "jobname", f"jobs[{i}]")) for i, job in enumerate(jobs)]
    labels = job_labels(names)

    groups: dict[str, dict[str, list[_Ddir]]] = {}
    for i, (job, (group, _name), label) in enumerate(zip(jobs, names, labels)):
        where = f"jobs[{i}]"
        error = r.integer(job, "error", where, 0)
        if error:
            result.failures.append(JobFailure(group, label, error, os.strerror(error)))
            continue  # a failed job's numbers are not measurements
        ddirs = {ddir: _direction(r, r.obj(job[ddir], f"{where}.{ddir}"), f"{where}.{ddir}")
                 for ddir in FIO_DIRECTIONS if ddir in job}
        for ddir, d in ddirs.items():
            groups.setdefault(group, {}).setdefault(ddir, []).append(d)
        cpu = {name: r.number(job, key, where) for name, key in (
            ("usr_pct", "usr_cpu"), ("sys_pct", "sys_cpu"), ("ctx", "ctx"), ("majf", "majf"),
            ("minf", "minf")) if job.get(key) is not None}
        result.samples += job_samples(group, label, {ddir: d.stats for ddir, d in ddirs.items()
                                                     if d.did_io}, cpu)

    for group, by_ddir in groups.items():
        for ddir in FIO_DIRECTIONS:
            g = _group_stats(by_ddir.get(ddir, []))
            if g is not None:
                result.samples += group_samples(group, ddir, g)

    disks = doc.get("disk_util", [])
    if not isinstance(disks, list):
        r.fail("disk_util", "a JSON array", disks)
    for i, disk in enumerate(disks):
        where = f"disk_util[{i}]"
        disk = r.obj(disk, where)
        name = r.name(disk, "name", where)
        result.samples += disk_samples(name, {key: r.number(disk, key, where)
                                              for key in _DISK_KEYS if key in disk})
        if "aggr_util" in disk:
            members = {ours: r.number(disk, key, where) for key, ours in _AGGR_KEYS.items()
                       if key in disk}
            result.samples += disk_samples(members_label(name), members)
    return result
