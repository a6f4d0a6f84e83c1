"""Parser of fio's JSON output (--output-format=json and json+), fio 2.x and 3.x.

Reads one fio JSON document (text fio printed before or after it, such as
warnings or the normal output of --output-format=normal,json, is skipped) into
samples: per job, per job group (computed from the jobs exactly as fio computes
its "Run status group" line) and per disk. The two generations differ in units:
fio 2.x writes latencies in µs under clat/slat/lat and `io_bytes` in KiB; fio 3
writes nanoseconds under clat_ns/slat_ns/lat_ns and has `io_kbytes` beside a
true `io_bytes`.
"""

from __future__ import annotations

import json
import os

from iowatch.metrics import FIO_DIRECTIONS, LATENCY_KINDS
from iowatch.parsers.fio_run import (DirectionStats, GroupStats, disk_samples,
                                     group_samples, job_labels, job_samples,
                                     members_label)
from iowatch.samples import JobFailure, ParseError, ParseResult


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


def load(text: str, path: str) -> dict:
    """The fio JSON document inside text; ParseError names the failing line."""
    start = find_json_start(text)
    if start is None:
        raise ParseError(path, None, "fio JSON output (a line starting with '{')",
                         text.strip().splitlines()[0][:60] if text.strip() else "")
    try:
        doc, _end = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as e:
        found = _found_at(text, e.pos) if e.pos < len(text) else "end of input"
        raise ParseError(path, e.lineno, f"fio JSON ({e.msg})", found) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        keys = ", ".join(list(doc)[:6]) if isinstance(doc, dict) else type(doc).__name__
        raise ParseError(path, _line_of(text, start),
                         "a fio JSON object with a 'jobs' list", keys)
    return doc


def _direction(d: dict) -> DirectionStats:
    if "io_kbytes" in d:            # fio 3: io_bytes are bytes
        io_kib = d["io_kbytes"]
    else:                           # fio 2: io_bytes are KiB
        io_kib = d.get("io_bytes", 0)
    stats = DirectionStats(io_kib=io_kib, bw_kib_s=d.get("bw", 0),
                           iops=d.get("iops", 0), runtime_ms=d.get("runtime", 0))
    for kind in LATENCY_KINDS:
        if f"{kind}_ns" in d:
            lat, scale = d[f"{kind}_ns"], 1000.0
        elif kind in d:
            lat, scale = d[kind], 1.0
        else:
            continue
        stats.latency_us[kind] = tuple(lat.get(k, 0) / scale
                                       for k in ("min", "max", "mean", "stddev"))
        if kind == "clat":
            for key, value in lat.get("percentile", {}).items():
                # fio 2 adds a "0.00": 0 entry after the real ones.
                if float(key) > 0:
                    stats.clat_percentiles_us[float(key)] = value / scale
    return stats


def _did_io(d: dict) -> bool:
    return d.get("io_bytes", 0) > 0 or d.get("total_ios", 0) > 0


def _group_stats(ddir_of_jobs: list[dict]) -> GroupStats | None:
    """A group's line for one direction, with fio's integer arithmetic.

    fio 3 (stat.c, __show_run_stats) works in bytes: each job's bw is
    io_bytes * 1000 / runtime, the group's aggrb is the summed io_bytes * 1000
    over the longest runtime. fio 2 did the same in KiB, so its minb can be a
    KiB/s below the job's own bw, as its text shows.
    """
    ran = [d for d in ddir_of_jobs if d.get("runtime", 0) > 0 and _did_io(d)]
    if not ran:
        return None
    fio3 = "io_kbytes" in ran[0]
    # fio 2's io_bytes are KiB; fio 3's are bytes.
    unit = 1024 if fio3 else 1
    ios = [d["io_bytes"] for d in ran]
    runtimes = [d["runtime"] for d in ran]
    bws = [io * 1000 // rt for io, rt in zip(ios, runtimes)]
    return GroupStats(
        io_kib=sum(ios) / unit,
        bw_kib_s=(sum(ios) * 1000 // max(runtimes)) / unit,
        bw_min_kib_s=min(bws) / unit, bw_max_kib_s=max(bws) / unit,
        runtime_min_ms=min(runtimes), runtime_max_ms=max(runtimes),
        iops=sum(d.get("iops", 0) for d in ran))


def parse(text: str, path: str = "<stdin>") -> ParseResult:
    doc = load(text, path)
    version = doc.get("fio version")
    result = ParseResult(tool="fio", tool_version=version.removeprefix("fio-") if version else None)
    jobs = doc["jobs"]
    labels = job_labels([(str(j.get("groupid", 0)), j.get("jobname", "?")) for j in jobs])

    groups: dict[str, list[dict]] = {}
    for job, label in zip(jobs, labels):
        group = str(job.get("groupid", 0))
        if job.get("error", 0):
            error = job["error"]
            result.failures.append(JobFailure(group, label, error, os.strerror(error)))
            continue  # a failed job's numbers are not measurements
        groups.setdefault(group, []).append(job)
        directions = {ddir: _direction(job[ddir]) for ddir in FIO_DIRECTIONS
                      if ddir in job and _did_io(job[ddir])}
        cpu = {"usr_pct": job.get("usr_cpu"), "sys_pct": job.get("sys_cpu"),
               "ctx": job.get("ctx"), "majf": job.get("majf"), "minf": job.get("minf")}
        result.samples += job_samples(group, label, directions,
                                      {k: v for k, v in cpu.items() if v is not None})

    for group, group_jobs in groups.items():
        for ddir in FIO_DIRECTIONS:
            g = _group_stats([j[ddir] for j in group_jobs if ddir in j])
            if g is not None:
                result.samples += group_samples(group, ddir, g)

    for disk in doc.get("disk_util", []):
        name = disk.get("name", "?")
        result.samples += disk_samples(name, disk)
        if "aggr_util" in disk:
            # fio spells one of these "aggr_write_merge", without the s.
            members = {key: disk[f"aggr_{key}"] for key in (
                "read_ios", "write_ios", "read_merges", "read_ticks", "write_ticks",
                "in_queue", "util") if f"aggr_{key}" in disk}
            if "aggr_write_merge" in disk:
                members["write_merges"] = disk["aggr_write_merge"]
            result.samples += disk_samples(members_label(name), members)
    return result
