"""A cell's reproduction without iowatch: a shell script of what the runner did.

The mail (iowatch.mailreport) prints it under "to reproduce without iowatch".
It is made from what the bundle records of the cell (the workload as run, the
mkfs and mount options, the I/O queue it ran on, the md array) with the same
commands the runner builds (iowatch.filesystems, iowatch.mdraid,
iowatch.environment, iowatch.workloads), so the two cannot drift apart:
  - once: the md RAID0 array of an ssd-raid0 device iowatch made from members
    (mdadm --create, as mdraid.assembled), and the study's I/O scheduler, then
    its wbt_lat_usec (after the scheduler, as the runner: choosing BFQ turns
    wbt off);
  - per repetition: mkfs and mount at the mount point the job file names (a
    fio job's directory= or filename= is under it; fs_mark's -d paths are
    relative to its parent, where fs_mark runs), the filesystem synced and
    every clean cache dropped, the tool as the runner runs it, the sync of
    what it left dirty (inside the runner's measured window), and umount.
The script reads the scratch device from $DEV (the md array's members from
$DEV1, $DEV2 ...), so nothing in it names a device of the reader's by chance.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from iowatch import environment, filesystems, ftrace, mdraid, workloads

# Where a job that names no mount point is mounted (an fs_mark or script cell).
DEFAULT_PARENT = filesystems.MOUNT_ROOT / "replay"
JOB_FILE = "job.fio"


@dataclass
class CellRun:
    """What the runner did for one cell, as its bundle (or the server) records it."""
    cell: str                   # the cell key, study/device/filesystem
    device: str                 # the inventory's device name
    device_class: str
    filesystem: str             # a filesystem, or "raw"
    workload: dict              # the cell's params.workload
    tool_text: str | None       # the job file as run, or the fs_mark command line
    mkfs_options: str | None
    mount_options: str | None
    scheduler: str | None       # the queue it ran on (params.queue), else the study's
    wbt_lat_usec: int | None
    md_members: int | None      # an md RAID0 iowatch made of so many members; 0: of some
    reps: int

    @property
    def tool(self) -> str:
        found = [k for k in ("fio", "fs_mark", "script") if k in self.workload]
        if found:
            return found[0]
        # A cell recorded without its workload: its artifact says which tool ran.
        return "fio" if (self.tool_text or "").lstrip().startswith("[") else "fs_mark"


def cell_run(cell: dict, device: dict, tool_text: str | None, reps: int,
             declared: dict | None = None) -> CellRun:
    """A CellRun of a bundle's cell (its id, filesystem, params, mkfs and mount
    options) and its device entry; `declared` is the study's scheduler and
    wbt_lat_usec, for a bundle from before the runner recorded the queue."""
    params = cell.get("params") or {}
    queue = params.get("queue") or declared or {}
    members = device.get("md_members")
    if members is None and device.get("class") == "ssd-raid0" and not device.get("path"):
        members = 0  # made by iowatch from members it did not count yet
    return CellRun(cell["id"], device["name"], device.get("class") or "?", cell["filesystem"],
                   params.get("workload") or {}, tool_text, cell.get("mkfs_options"),
                   cell.get("mount_options"), queue.get("scheduler"), queue.get("wbt_lat_usec"),
                   members, reps)


def _mountpoint(run: CellRun) -> str:
    """The mount point the runner used, as the job file names it; else one under
    DEFAULT_PARENT named after the device (fs_mark's -d paths start with it)."""
    for m in re.finditer(r"^\s*(?:directory|filename)\s*=\s*(\S+)", run.tool_text or "", re.M):
        found = filesystems.mountpoint_in(m.group(1))
        if found:
            return found
    return str(DEFAULT_PARENT / run.device)


def _device_lines(run: CellRun) -> list[str]:
    if run.md_members is None:
        return [f': "${{DEV:?set DEV to a scratch {run.device_class} device: all on it is lost}}"']
    n = run.md_members or 2
    members = [f"$DEV{i}" for i in range(1, n + 1)]
    array = mdraid.array_name(run.device)
    counted = f"{n} members" if run.md_members else "members (the bundle does not count them: 2 here)"
    return [f"# {run.device}: an md RAID0 iowatch made of {counted}, once a boot",
            f': "${{DEV1:?set DEV1..DEV{n} to the scratch {run.device_class} members}}"',
            "mdadm --zero-superblock " + " ".join(members),
            "mdadm " + " ".join(mdraid.create_args(array, members)),
            f"DEV={array}"]


def _queue_lines(run: CellRun) -> list[str]:
    queue = f"{environment.SYS_BLOCK}/$(basename \"$(readlink -f \"$DEV\")\")/queue"
    out = [f'Q="{queue}"']
    if run.scheduler:
        out.append(f"echo {run.scheduler} > \"$Q/scheduler\"")
    else:
        out.append("# I/O scheduler: the kernel's default (the study sets none)")
    if run.wbt_lat_usec is not None:
        out.append(f"echo {run.wbt_lat_usec} > \"$Q/wbt_lat_usec\"")
    else:
        out.append("# wbt_lat_usec: the kernel's default (the study sets none)")
    return out


def _tool_lines(run: CellRun, mnt: str) -> list[str]:
    """The tool as the runner runs it, in the directory it runs in."""
    if run.tool == "fio":
        lines = []
        if run.filesystem == "raw":  # the job names the run's device: this one instead
            lines.append(f"sed -i 's|^filename=.*|filename='\"$DEV\"'|' {JOB_FILE}")
        argv = workloads.fio_argv(JOB_FILE, "fio-$i.json", run.filesystem == "raw")
        return lines + [" ".join(argv)]
    if run.tool == "fs_mark":
        command = (run.tool_text or "").strip() or "fs_mark"
        # Its -d paths are relative to the mount point's parent, where the runner runs it.
        return [f"(cd {mnt}/.. && {command}) | tee fs_mark-$i.txt"]
    script = run.workload["script"]
    n, every = script["create_files"], script["delete_every"]
    return [f"OUT=$PWD; mkdir {mnt}/files && cd {mnt}/files",
            f"seq 1 {n} | {' '.join(workloads.touch_argv(script))}",
            "sync -f .",
            f"seq {every} {every} {n} | xargs rm",
            "# caches dropped with the NAT entries dirty (no sync), as the seed:",
            f"echo {filesystems.DROP_ALL} > {filesystems.DROP_CACHES}",
            *_traced("time sync -f .   # the checkpoint: sync.time_ms", script.get("time_functions", {})),
            "cd /"]


def _traced(line: str, functions: dict[str, str]) -> list[str]:
    """The line with the functions it times around it (ftrace's function graph
    tracer at depth 1, as iowatch.ftrace sets it: each call's time in us)."""
    if not functions:
        return [line]
    root = ftrace.TRACEFS
    names = " ".join(sorted(set(functions.values())))
    metrics = ", ".join(f"{m}: {f}()" for m, f in sorted(functions.items()))
    return [f"mountpoint -q {root} || mount -t tracefs nodev {root}",
            f"echo {names} > {root}/set_ftrace_filter; echo {names} > {root}/set_graph_function",
            f"echo 1 > {root}/max_graph_depth; echo 1 > {root}/options/funcgraph-tail",
            f"echo > {root}/trace; echo {ftrace.TRACER} > {root}/current_tracer; echo 1 > {root}/tracing_on",
            line,
            f"echo 0 > {root}/tracing_on; cp {root}/trace \"$OUT/function-graph-$i.txt\"   # {metrics}, each call's us",
            f"echo nop > {root}/current_tracer; echo > {root}/set_ftrace_filter"]


def steps(run: CellRun) -> list[str]:
    """The shell script (lines, with # comments) of the cell's repetitions."""
    mnt = _mountpoint(run)
    out = [f"# {run.cell}, as root"]
    out += _device_lines(run) + _queue_lines(run)
    if run.filesystem != "raw":
        out.append(f"MNT={mnt}")
    out.append(f"for i in $(seq {run.reps}); do")
    body = []
    if run.filesystem == "tmpfs":  # a canary: memory only, the device left alone
        body += ["mkdir -p $MNT", " ".join(filesystems.mount_argv(
            "tmpfs", run.mount_options or filesystems.TMPFS_OPTIONS, "iowatch-tmpfs", "$MNT"))]
    elif run.filesystem != "raw":
        body += [" ".join(filesystems.mkfs_argv(run.filesystem, run.mkfs_options or "", "$DEV")),
                 "mkdir -p $MNT",
                 " ".join(filesystems.mount_argv(run.filesystem, run.mount_options or "", "$DEV",
                                                 "$MNT")),
                 "sync -f $MNT"]
    else:
        body.append("blockdev --flushbufs $DEV")
    body.append(f"echo {filesystems.DROP_ALL} > {filesystems.DROP_CACHES}")
    body += _tool_lines(run, "$MNT")
    if run.filesystem != "raw":
        body += ["sync -f $MNT   # its writeback: inside the measured window", "umount $MNT"]
    out += [f"  {line}" for line in body] + ["done"]
    if run.md_members is not None:
        out.append("mdadm --stop $DEV")
    return out
