"""Run a repetition through the real `lkp run`: the LKP harness of `iowatch run --harness lkp`.

For a cell the runner has already checked with iowatch.safety, this gives
LKP the declared device under a name it can use (/dev/lkp-<device>, a
symlink: LKP cuts a trailing number off a disk name), checks that name with
the same safety check, writes the atomic job (jobs.py), runs `lkp run`,
reads the result root's stats.json through the mapping (mapping.py), keeps
the result root's files as artifacts, and reads /proc/diskstats itself
around the run (LKP's own diskstats and iostat parsers come out empty on
Debian 12). Afterwards it removes what LKP leaves behind, also on failure:
its wakeup helpers, /tmp/lkp-<user>, the mount and directory /fs/<disk>, the
symlink, and the /lkp/benchmarks/fsmark/fs_mark link when it made it.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import resource
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from iowatch import diskstats, environment, safety
from iowatch.inventory import Host
from iowatch.lkp import jobs, mapping
from iowatch.lkp.result_root import ResultRootError, artifacts, mkfs_and_mount, read_json
from iowatch.workloads import Result, run_tool

DEFAULT_SRC = Path("/opt/lkp-tests")  # where the Ansible common role clones it
FSMARK_DIR = Path("/lkp/benchmarks/fsmark")  # LKP's fsmark run script: cd here; ./fs_mark
FS_ROOT = Path("/fs")  # LKP mounts the disk at /fs/<disk name>
LOCK = Path("/run/iowatch-lkp.lock")  # LKP's paths are fixed: one LKP run a machine at a time
DEVICE_WINDOW = ("the whole `lkp run`: LKP's wipefs and mkfs, its setup (fio lays out its files), "
                 "the workload and the unmount")


class LkpError(RuntimeError):
    """LKP missing or unusable here; says what to install or set."""


def find_src(option: str | None = None) -> Path:
    """--lkp-src, else $LKP_SRC, else /opt/lkp-tests; refused unless it holds bin/lkp."""
    src = Path(option or os.environ.get("LKP_SRC") or DEFAULT_SRC)
    if not (src / "bin" / "lkp").is_file():
        raise LkpError(f"no LKP-tests at {src} (no bin/lkp): set LKP_SRC or --lkp-src to a checkout "
                       "of intel/lkp-tests (lab hosts: the Ansible common role clones it to "
                       f"{DEFAULT_SRC})")
    if not shutil.which("ruby"):
        raise LkpError("ruby is not installed: LKP needs the Debian packages ruby ruby-activesupport "
                       "ruby-colorize ruby-term-ansicolor ruby-git ruby-tty-command ruby-gnuplot "
                       "(scripts/setup.sh installs them)")
    if not os.access(src / "bin" / "event" / "wakeup", os.X_OK):
        raise LkpError(f"{src}/bin/event/wakeup is not built: run `make -C {src}/bin/event wakeup`")
    return src


def _wakeups(src: Path) -> list[int]:
    """Processes running this LKP tree's wakeup helper (LKP leaves them behind)."""
    exe = str(src / "bin" / "event" / "wakeup")
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv0 = (proc / "cmdline").read_bytes().split(b"\0", 1)[0].decode()
        except OSError:
            continue
        if argv0 == exe:
            found.append(int(proc.name))
    return found


def _mounted(path: Path) -> bool:
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == str(path) for line in f)


def _clear_mount_point(mnt: Path) -> None:
    """LKP mounts the disk on /fs/<disk> and the benchmark writes there. A run
    killed before its cleanup can leave that directory mounted, or holding files
    on the root filesystem: refused, naming it, rather than measured."""
    if _mounted(mnt):
        raise LkpError(f"{mnt} is already mounted: a run stopped before its cleanup left it; "
                       f"unmount it (umount {mnt}) if nothing uses it, then run again")
    try:
        mnt.rmdir()  # an empty one is LKP's to make again
    except FileNotFoundError:
        pass
    except OSError:
        raise LkpError(f"{mnt} holds files and is not a mount point: a run stopped before its "
                       "cleanup left them there, and they would be measured on the root filesystem "
                       f"beside the device's; remove the directory (rm -r {mnt}) if nothing uses it") from None


@dataclass
class LkpHarness:
    """The runner's hook: skip_reason() at planning, run_rep() for each repetition."""
    src: Path
    host: Host
    data_dir: Path
    name: str = "lkp"

    def skip_reason(self, workload: dict, filesystem: str, where: str) -> str | None:
        try:
            jobs.atomic_job(workload, filesystem, "/dev/lkp-x", where=where)
        except jobs.NotTranslatable as e:
            return f"not run through LKP: {str(e).removeprefix(where + ': ')}"
        return None

    def run_rep(self, workload: dict, filesystem: str, dev_path: str, device_name: str,
                workdir: Path, where: str) -> tuple[Result, dict]:
        link = Path(jobs.lkp_disk_name(device_name))
        job = jobs.atomic_job(workload, filesystem, str(link), where=where,
                              memory_gib=max(1, os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") >> 30),
                              nr_cpu=os.cpu_count())
        res = Result()
        notes: dict = {"harness": "lkp", "lkp_src": str(self.src), "lkp_disk": str(link),
                       "device_counters_window": DEVICE_WINDOW}
        LOCK.parent.mkdir(parents=True, exist_ok=True)
        with open(LOCK, "w") as lock, ExitCleanup(self.src, link) as cleanup:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if link.is_symlink() or link.exists():
                # The storage role's udev rule may have made it already: kept as found.
                if os.path.realpath(link) != os.path.realpath(dev_path):
                    raise LkpError(f"{link} exists and is not a link to {dev_path}; remove it "
                                   "if nothing uses it")
            else:
                os.symlink(os.path.realpath(dev_path), link)
                cleanup.link_made = True
            safety.require(self.host, str(link), self.data_dir)  # the name LKP gets, checked too
            _clear_mount_point(FS_ROOT / link.name)
            if "fsmark" in job:
                cleanup.ensure_fs_mark()
            job_file = workdir / "lkp-job.yaml"
            job_file.write_text(yaml.safe_dump(job, sort_keys=False))
            out_link = workdir / "result"
            env = dict(os.environ, LKP_SRC=str(self.src))
            env["PATH"] = env.get("PATH", "/usr/bin:/bin") + ":/usr/sbin:/sbin"
            name = environment.block_name(dev_path)
            cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            before, t0 = diskstats.read(name), time.monotonic()
            done = run_tool([str(self.src / "bin" / "lkp"), "run", "-o", str(out_link), str(job_file)],
                            env=env, cwd=workdir)
            seconds = time.monotonic() - t0
            after = diskstats.read(name)
            res.wall_s = res.tool_s = seconds
            res.artifacts["lkp-job.yaml"] = job_file.read_bytes()
            res.artifacts["lkp-run.log"] = (done.stdout + done.stderr).encode()
            cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            # iowatch's own clock and CPU around the whole `lkp run` (LKP's Ruby, setup and
            # monitors included): recorded, while the samples take GNU time's of the benchmark.
            notes["lkp_run_s"] = round(seconds, 3)
            notes["lkp_run_cpu_user_s"] = round(cpu1.ru_utime - cpu0.ru_utime, 3)
            notes["lkp_run_cpu_sys_s"] = round(cpu1.ru_stime - cpu0.ru_stime, 3)
            root = Path(os.path.realpath(out_link)) if out_link.is_symlink() else None
            if root is None or not (root / "stats.json").is_file():
                res.error = (f"lkp run exited {done.returncode} without a result root's stats.json: "
                             f"{(done.stderr or done.stdout).strip()[-400:]}")
                return res, notes
            notes["lkp_result_root"] = str(root)
            notes["mkfs_options"], notes["mount_options"] = mkfs_and_mount(root)
            res.artifacts.update(artifacts(root))
            try:
                stats = read_json(root / "stats.json")
            except ResultRootError as e:
                res.error = str(e)
                return res, notes
            res.samples = mapping.samples(stats, workload["groups"])
            if not any(s.group != "run" and not s.metric.startswith(("wall_s", "cpu.")) for s in res.samples):
                res.error = (f"{root}/stats.json has no {job['suite']} numbers: the benchmark failed "
                             f"under LKP; see its output in {root}")
                return res, notes
            group = next(iter(workload["groups"].values()))
            res.samples += diskstats.samples(before, after, seconds, group)
            res.artifacts["diskstats.before"] = (" ".join(map(str, before.__dict__.values())) + "\n").encode()
            res.artifacts["diskstats.after"] = (" ".join(map(str, after.__dict__.values())) + "\n").encode()
        return res, notes


class ExitCleanup(contextlib.AbstractContextManager):
    """What LKP leaves behind, removed on the way out whatever happened."""

    def __init__(self, src: Path, link: Path):
        self.src, self.link = src, link
        self.link_made = False
        self.fs_mark_made = False

    def ensure_fs_mark(self) -> None:
        target = FSMARK_DIR / "fs_mark"
        if target.exists():
            return
        found = shutil.which("fs_mark")
        if not found:
            raise LkpError("fs_mark is not installed (Debian: fsmark); LKP runs "
                           f"{target}, which the Ansible common role links to it")
        FSMARK_DIR.mkdir(parents=True, exist_ok=True)
        target.symlink_to(found)
        self.fs_mark_made = True

    def __exit__(self, *exc) -> None:
        for pid in _wakeups(self.src):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        mnt = FS_ROOT / self.link.name
        if _mounted(mnt):
            if subprocess.run(["umount", str(mnt)], capture_output=True).returncode:
                subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        with contextlib.suppress(OSError):
            mnt.rmdir()
        # LKP's TMP: /tmp/lkp-$USER (bin/run-local).
        user = os.environ.get("USER") or pwd.getpwuid(os.getuid()).pw_name
        shutil.rmtree(f"/tmp/lkp-{user}", ignore_errors=True)
        if self.link_made and self.link.is_symlink():
            self.link.unlink()
        for log in FSMARK_DIR.glob("fs_log.txt*"):  # fs_mark's thread logs, in its cwd
            with contextlib.suppress(OSError):
                log.unlink()
        if self.fs_mark_made:
            with contextlib.suppress(OSError):
                (FSMARK_DIR / "fs_mark").unlink()
        return None
