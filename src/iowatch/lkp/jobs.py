"""A study's workload as LKP's atomic job, or the reason it cannot be one.

LKP runs fio through fio-setup-basic (one job kind, `nr_task` clones, the
test size split between them, always group_reporting) and fs_mark through
its fsmark program (one -d directory per thread, -n from test_size). What
those programs cannot say is refused here with the study's option named, so
a study is never silently run as something else (the weak spot of LKP's
own job expansion). The disk is a name given by the harness (a symlink that
does not end in a digit: LKP turns /dev/loop0 into the disk "/dev/loop").
"""
from __future__ import annotations

import platform
import re

from iowatch.inventory import parse_size


class NotTranslatable(ValueError):
    """The study's workload has no LKP fio-basic or fsmark form; says why."""


# iowatch (fio) option -> fio-setup-basic parameter of the same meaning.
FIO_BASIC_PARAMS = {
    "rw": "rw", "bs": "bs", "ioengine": "ioengine", "iodepth": "iodepth", "direct": "direct",
    "runtime": "runtime", "invalidate": "invalidate", "filesize": "filesize",
    "io_size": "io_size", "fallocate": "fallocate", "time_based": "time_based",
    "nr_files": "nr_files", "file_service_type": "file_service_type",
    "random_distribution": "random_distribution", "pre_read": "pre_read",
    "rwmixread": "rwmixread", "norandommap": "norandommap",
    "random_generator": "random_generator", "ramp_time": "ramp_time",
    "allrandrepeat": "allrandrepeat",
}
# Options fio-setup-basic writes itself, or that change nothing it reports.
FIO_IMPLIED = {"directory": "{mountpoint}", "group_reporting": None, "thread": None}
# fio-setup-basic's runtime default is 300 s, a cap a study without one never asked for.
NO_RUNTIME_S = 86400

FSMARK_SYNC = {0: "NoSync", 1: "fsyncBeforeClose", 2: "syncFsync", 3: "PostReverseFsync",
               4: "syncPostReverseFsync", 5: "PostFsync", 6: "syncPostFsync"}


def lkp_disk_name(device_name: str) -> str:
    """/dev/lkp-<device>: LKP strips a trailing number from a disk's name."""
    name = re.sub(r"[^A-Za-z0-9_-]", "-", device_name)
    return f"/dev/lkp-{name}" + ("-disk" if name[-1:].isdigit() else "")


def _flag(value) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return 1 if value else 0
    return 1 if str(value).strip().lower() in ("1", "true", "yes", "on") else 0


def fio_basic(fio: dict, where: str) -> dict:
    """fio-setup-basic's parameters (and the job's top-level runtime,
    test_size, nr_task) for a study's fio section."""
    jobs = fio["jobs"]
    if len(jobs) != 1:
        raise NotTranslatable(f"{where}: {len(jobs)} fio jobs ({', '.join(j['name'] for j in jobs)}); "
                              "LKP's fio-basic runs one job kind (nr_task clones of it)")
    options = {**fio["global"], **jobs[0].get("options", {})}
    params: dict = {}
    top: dict = {}
    numjobs = int(options.pop("numjobs", 1))
    size = options.pop("size", None)
    if size is None:
        raise NotTranslatable(f"{where}: no fio size; LKP's fio-basic needs test_size")
    for key, value in options.items():
        if key == "filename":
            # One file on the mount point that every clone shares: fio-setup-basic's testfile.
            if value != "{target}":
                raise NotTranslatable(f"{where}: fio filename={value!r}; LKP's fio-basic can only "
                                      "share one test file on the disk's mount point (testfile)")
            params["testfile"] = "y"
            continue
        if key in FIO_IMPLIED:
            implied = FIO_IMPLIED[key]
            if implied is not None and value != implied:
                raise NotTranslatable(f"{where}: fio option {key}={value!r}; LKP's fio-basic puts "
                                      "the files on the disk's mount point itself")
            continue
        if key == "new_group" or key not in FIO_BASIC_PARAMS:
            raise NotTranslatable(f"{where}: fio option {key!r} has no LKP fio-basic parameter "
                                  f"(it takes: {', '.join(sorted(FIO_BASIC_PARAMS))})")
        params[FIO_BASIC_PARAMS[key]] = value
    params["direct"] = _flag(params.get("direct", 0))
    # Set both: fio-setup-basic writes buffered=0 unless told, and buffered=0 IS O_DIRECT.
    params["buffered"] = 1 - params["direct"]
    if params.get("time_based") is not None:
        params["time_based"] = _flag(params["time_based"])
    top["runtime"] = f"{int(params.pop('runtime', NO_RUNTIME_S))}s"
    top["nr_task"] = numjobs
    top["test_size"] = parse_size(str(size).upper().rstrip("B") if isinstance(size, str) else size) * numjobs
    return {"top": top, "fio-setup-basic": params}


def fsmark(fm: dict, where: str) -> dict:
    """LKP fsmark parameters for a study's fs_mark section."""
    opts = dict(fm["options"])
    dirs = int(fm.get("dirs", 1))
    unknown = set(opts) - {"n", "s", "S", "L", "D", "N"}
    if unknown:
        raise NotTranslatable(f"{where}: fs_mark option(s) {', '.join('-' + k for k in sorted(unknown))} "
                              "have no LKP fsmark parameter (it takes -n -s -S -L -D -N)")
    if ("D" in opts) != ("N" in opts):
        raise NotTranslatable(f"{where}: fs_mark -D without -N (files hashed across directories "
                              "by time) has no LKP fsmark form: LKP passes -D and -N together or neither")
    n, s, loops = int(opts.get("n", 1000)), int(opts.get("s", 51200)), int(opts.get("L", 1))
    sync = int(opts.get("S", 1))
    if sync not in FSMARK_SYNC:
        raise NotTranslatable(f"{where}: fs_mark -S {sync} has no LKP sync_method")
    # LKP: nr_files = test_size / max(filesize, 4K) / nr_threads / iterations.
    params = {"filesize": s, "test_size": n * max(s, 4096) * dirs * loops,
              "sync_method": FSMARK_SYNC[sync]}
    if "D" in opts:
        params["nr_directories"] = f"{int(opts['D'])}d"
        params["nr_files_per_directory"] = f"{int(opts['N'])}fpd"
    return {"top": {"nr_threads": f"{dirs}t", "iterations": f"{loops}x"}, "fsmark": params}


def atomic_job(workload: dict, filesystem: str, disk: str, *, where: str,
               memory_gib: int | None = None, nr_cpu: int | None = None) -> dict:
    """The atomic LKP job (what `lkp split-job` would give) for one repetition.
    `arch` makes it atomic; memory and nr_cpu spare LKP its hosts/<hostname>
    file; only the diskstats monitor runs (iowatch reads its own counters)."""
    if filesystem == "raw":
        raise NotTranslatable(f"{where}: a raw-device cell; iowatch reads a raw device only under "
                              "fio --readonly, which LKP's fio-basic cannot pass")
    if "fio" in workload:
        t = fio_basic(workload["fio"], where)
        job = {"suite": "fio-basic", "testcase": "fio-basic", "category": "benchmark",
               **t["top"], "disk": "1HDD", "fs": filesystem, "hdd_partitions": disk,
               "fio-setup-basic": t["fio-setup-basic"], "fio": None}
    elif "fs_mark" in workload:
        t = fsmark(workload["fs_mark"], where)
        job = {"suite": "fsmark", "testcase": "fsmark", "category": "benchmark",
               **t["top"], "disk": "1HDD", "fs": filesystem, "hdd_partitions": disk,
               "fsmark": t["fsmark"]}
    else:
        raise NotTranslatable(f"{where}: a scripted workload; LKP runs fio-basic and fsmark studies only")
    job["arch"] = platform.machine()
    if memory_gib:
        job["memory"] = f"{memory_gib}G"
    if nr_cpu:
        job["nr_cpu"] = nr_cpu
    return job
