"""Fresh filesystems for each repetition: mkfs, mount, unmount.

Only the runner calls these, and only after iowatch.safety allowed the device.
The mkfs and mount options used are returned so the bundle records them.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

# Force flags overwrite an old signature: safety has already checked the device
# is declared, not mounted, and holds nothing it should not.
MKFS = {
    "ext4": ["mkfs.ext4", "-F", "-q"],
    "xfs": ["mkfs.xfs", "-f", "-q"],
    "btrfs": ["mkfs.btrfs", "-f", "-q"],
    "f2fs": ["mkfs.f2fs", "-f", "-q"],
}
# What makes each mkfs leave the device's blocks alone (inventory `discard: false`).
NO_DISCARD = {"ext4": ["-E", "nodiscard"], "xfs": ["-K"], "btrfs": ["-K"], "f2fs": ["-t", "0"]}
MOUNT_ROOT = Path("/run/iowatch")
DROP_CACHES = Path("/proc/sys/vm/drop_caches")
DROP_ALL = "3"  # page cache, dentries and inodes
# A canary's filesystem (iowatch.studies): memory, no device, no mkfs. Its size
# caps what the canary may write: the guests have 2 GiB.
TMPFS_OPTIONS = "size=512m,mode=0755"


def mount_root(data_dir: Path) -> Path:
    """Mount points of one data directory: runs with other data directories on
    the same machine (a test beside a user's run) never share a mount point."""
    return MOUNT_ROOT / hashlib.sha1(str(Path(data_dir).resolve()).encode()).hexdigest()[:8]
# ext4: noinit_itable. mkfs.ext4 leaves the inode tables uninitialised (lazy_itable_init,
# its default) unless the device promises zeroes after a discard, which a block device
# does not; the first mount then starts the ext4lazyinit kernel thread, which zeroes
# every group's inode table in the background: writes to the device under test during
# the measured window, for seconds on a loop device and for minutes on an SD card or a
# disk. noinit_itable keeps that thread from starting; the groups stay flagged
# INODE_UNINIT, which ext4 reads correctly, and the scratch filesystem is made anew for
# the next repetition anyway. (Zeroing them in mkfs instead, lazy_itable_init=0, would
# write the whole table on every repetition.)
MOUNT_OPTIONS = {"ext4": "noatime,noinit_itable", "xfs": "noatime", "btrfs": "noatime",
                 "f2fs": "noatime"}


class FilesystemError(RuntimeError):
    pass


@dataclass
class Mounted:
    device: str
    filesystem: str
    mountpoint: Path
    mkfs_options: str
    mount_options: str


def supported(filesystem: str) -> str | None:
    """None when this kernel can mount it, else the reason it cannot."""
    if filesystem == "raw":
        return None
    if filesystem == "tmpfs":
        return None if "tmpfs" in Path("/proc/filesystems").read_text().split() else \
            f"this kernel ({os.uname().release}) has no tmpfs"
    if filesystem not in MKFS:
        return f"iowatch does not know how to make {filesystem}"
    listed = Path("/proc/filesystems").read_text().split()
    if filesystem not in listed:
        # The module may just not be loaded yet.
        if shutil.which("modprobe"):
            subprocess.run(["modprobe", filesystem], capture_output=True)
        if filesystem not in Path("/proc/filesystems").read_text().split():
            return (f"this kernel ({os.uname().release}) cannot mount {filesystem} "
                    "(not in /proc/filesystems); run it in the virtual lab's guest kernel")
    tool = MKFS[filesystem][0]
    if not shutil.which(tool, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin"):
        return f"{tool} is not installed"
    return None


def _run(argv: list[str], what: str) -> None:
    out = subprocess.run(argv, capture_output=True, text=True)
    if out.returncode:
        raise FilesystemError(f"{what} failed (exit {out.returncode}): "
                              f"{(out.stderr or out.stdout).strip()[-500:]}")


def mkfs_argv(filesystem: str, options: str, device: str) -> list[str]:
    """The mkfs command of a repetition, with the options the bundle records."""
    return [MKFS[filesystem][0], *options.split(), device]


def mount_argv(filesystem: str, options: str, device: str, mountpoint: str) -> list[str]:
    return ["mount", "-t", filesystem, "-o", options, device, mountpoint]


def mountpoint_in(path: str) -> str | None:
    """The runner's mount point a path of a job file lies under (MOUNT_ROOT /
    data directory hash / device name), or None when it is not under MOUNT_ROOT."""
    parts = Path(path).parts
    root = MOUNT_ROOT.parts
    if parts[:len(root)] != root or len(parts) < len(root) + 2:
        return None
    return str(Path(*parts[:len(root) + 2]))


def make_and_mount(device: str, filesystem: str, mountpoint: Path, *,
                   discard: bool = True) -> Mounted:
    if filesystem == "tmpfs":  # nothing to make, and the device is left alone
        mountpoint.mkdir(parents=True, exist_ok=True)
        _run(["mount", "-t", "tmpfs", "-o", TMPFS_OPTIONS, "iowatch-tmpfs", str(mountpoint)],
             f"mount tmpfs on {mountpoint}")
        return Mounted(device, filesystem, mountpoint, "", TMPFS_OPTIONS)
    flags = MKFS[filesystem][1:] + ([] if discard else NO_DISCARD[filesystem])
    argv = mkfs_argv(filesystem, " ".join(flags), device)
    _run(argv, f"{' '.join(argv)}")
    mountpoint.mkdir(parents=True, exist_ok=True)
    opts = MOUNT_OPTIONS[filesystem]
    _run(mount_argv(filesystem, opts, device, str(mountpoint)),
         f"mount {device} on {mountpoint}")
    return Mounted(device, filesystem, mountpoint, " ".join(flags), opts)


def unmount(mountpoint: Path, tries: int = 5) -> None:
    for attempt in range(tries):
        out = subprocess.run(["umount", str(mountpoint)], capture_output=True, text=True)
        if out.returncode == 0 or "not mounted" in out.stderr:
            return
        time.sleep(0.5 * (attempt + 1))  # a just-finished fio may still hold a file
    subprocess.run(["umount", "-l", str(mountpoint)], capture_output=True)


def remove_mountpoint(mountpoint: Path) -> None:
    """The mount point, and its data directory's root under MOUNT_ROOT once
    nothing else is in it (else every data directory, each test's, left one)."""
    for directory in (mountpoint, mountpoint.parent):
        if directory == MOUNT_ROOT:
            return
        try:
            directory.rmdir()
        except OSError:
            return  # still mounted (lazily) or not empty: leave it


def _libc_syncfs():
    try:
        fn = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int]
    return fn


_SYNCFS = _libc_syncfs()


def syncfs(mountpoint: Path) -> None:
    """Write back everything of one filesystem and only that one: syncfs(2),
    called directly (no `sync -f` process to start, which matters inside a
    measured window), with `sync -f` where libc has no syncfs."""
    if _SYNCFS is None:
        _run(["sync", "-f", str(mountpoint)], f"sync -f {mountpoint}")
        return
    fd = os.open(mountpoint, os.O_RDONLY)
    try:
        if _SYNCFS(fd) != 0:
            err = ctypes.get_errno()
            raise FilesystemError(f"syncfs {mountpoint} failed: {os.strerror(err)}")
    finally:
        os.close(fd)


def sync_device(device: str) -> None:
    """Write back what is cached for a block device that holds no mounted
    filesystem (a raw cell): fsync on the device flushes its page cache."""
    fd = os.open(device, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def drop_caches() -> None:
    """echo 3 > /proc/sys/vm/drop_caches: drop every clean page, dentry and
    inode the kernel may drop, host-wide. It does not sync first: dirty pages
    stay dirty (and cached). The runner makes the filesystem under test clean
    with syncfs() before calling it; the f2fs checkpoint script calls it with
    its NAT entries deliberately dirty, as its seed does (no sync in step 4),
    so that the timed sync after it is the one that writes the checkpoint."""
    try:
        DROP_CACHES.write_text(DROP_ALL + "\n")
    except OSError as e:
        raise FilesystemError(f"cannot drop caches ({e.strerror}): iowatch run needs root") from None
