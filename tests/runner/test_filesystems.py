"""The per-repetition steps of iowatch.filesystems on a real loop device: what
each sync and drop writes, read from /proc/diskstats (counts, never times)."""
from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from iowatch import diskstats, environment, filesystems

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (losetup, mkfs, mount, drop_caches)"),
    pytest.mark.skipif(not shutil.which("mkfs.ext4"), reason="mkfs.ext4 is not installed"),
]


@pytest.fixture
def ext4(tmp_path):
    """A fresh ext4 on a loop device over a 256 MiB sparse image (direct I/O,
    as the runner attaches them), mounted with the runner's own helper."""
    image = tmp_path / "fs.img"
    with open(image, "wb") as f:
        f.truncate(256 << 20)
    loop = subprocess.run(["losetup", "-f", "--show", "--direct-io=on", str(image)],
                          capture_output=True, text=True, check=True).stdout.strip()
    mnt = None
    try:
        mnt = filesystems.make_and_mount(loop, "ext4", tmp_path / "mnt")
        yield loop, mnt.mountpoint
    finally:
        if mnt:
            filesystems.unmount(mnt.mountpoint)
        subprocess.run(["losetup", "-d", loop], capture_output=True)


def _written_kib(loop: str, step) -> float:
    name = environment.block_name(loop)
    before = diskstats.read(name)
    step()
    after = diskstats.read(name)
    return (after.write_sectors - before.write_sectors) * diskstats.SECTOR_BYTES / 1024


def test_drop_caches_leaves_dirty_data_for_the_sync_after_it(ext4):
    """The f2fs checkpoint script drops caches with its NAT entries dirty and
    times the sync after (its seed: `echo 3 > drop_caches`, then `sync`), so
    the drop must not write anything back itself; the syncfs after it does."""
    loop, mnt = ext4
    filesystems.syncfs(mnt)
    (mnt / "dirty").write_bytes(os.urandom(8 << 20))  # buffered: dirty in the page cache
    assert _written_kib(loop, filesystems.drop_caches) < 1024
    assert _written_kib(loop, lambda: filesystems.syncfs(mnt)) >= 8 * 1024


def test_syncfs_writes_back_its_filesystem_only(ext4, tmp_path):
    """The sync before the measured window is of the filesystem under test:
    it leaves another filesystem's dirty data alone (a global sync would not)."""
    loop, mnt = ext4
    other = tmp_path / "other.img"
    with open(other, "wb") as f:
        f.truncate(256 << 20)
    loop2 = subprocess.run(["losetup", "-f", "--show", "--direct-io=on", str(other)],
                           capture_output=True, text=True, check=True).stdout.strip()
    mnt2 = None
    try:
        mnt2 = filesystems.make_and_mount(loop2, "ext4", tmp_path / "mnt2")
        filesystems.syncfs(mnt2.mountpoint)
        (mnt2.mountpoint / "dirty").write_bytes(os.urandom(8 << 20))
        (mnt / "dirty").write_bytes(os.urandom(8 << 20))
        assert _written_kib(loop2, lambda: filesystems.syncfs(mnt)) < 1024
        assert _written_kib(loop2, lambda: filesystems.syncfs(mnt2.mountpoint)) >= 8 * 1024
    finally:
        if mnt2:
            filesystems.unmount(mnt2.mountpoint)
        subprocess.run(["losetup", "-d", loop2], capture_output=True)


def test_sync_device_on_a_raw_device(tmp_path):
    """A raw cell has no filesystem to syncfs: the block device itself is synced."""
    image = tmp_path / "raw.img"
    with open(image, "wb") as f:
        f.truncate(64 << 20)
    loop = subprocess.run(["losetup", "-f", "--show", str(image)],
                          capture_output=True, text=True, check=True).stdout.strip()
    try:
        # Kept open: the last close of a block device writes its dirty pages back.
        with open(loop, "r+b", buffering=0) as dev:
            dev.write(os.urandom(1 << 20))  # dirty in the device's page cache (no O_DIRECT)
            assert _written_kib(loop, lambda: filesystems.sync_device(loop)) >= 1024
    finally:
        subprocess.run(["losetup", "-d", loop], capture_output=True)


def test_a_fresh_ext4_writes_nothing_by_itself_after_mount(ext4):
    """mkfs.ext4 leaves the inode tables to the kernel's ext4lazyinit thread,
    which zeroes them in the background after the first mount: 16 MiB on this
    256 MiB filesystem in the first seconds (measured without noinit_itable),
    inside the repetition's measured window. The runner's mount options keep
    the thread from starting, so an idle fresh filesystem writes nothing."""
    loop, mnt = ext4
    filesystems.syncfs(mnt)
    # The thread starts within a second of the mount and zeroes a group at a time.
    assert _written_kib(loop, lambda: time.sleep(3)) < 256


@pytest.mark.parametrize("fs", ["ext4"])  # mkfs.xfs here left a loop image allocated either way
def test_a_device_that_says_discard_false_keeps_its_blocks_through_mkfs(tmp_path, fs):
    """mkfs discards the whole device by default: on a loop device that punches
    the image back to holes. A device declared `discard: false` (QEMU's SD card,
    which erases block by block) gets mkfs's no-discard flag, and its image keeps
    the blocks written before; the bundle's mkfs options name the flag."""
    if not shutil.which(filesystems.MKFS[fs][0]):
        pytest.skip(f"{filesystems.MKFS[fs][0]} is not installed")
    image = tmp_path / "fs.img"
    with open(image, "wb") as f:
        f.truncate(512 << 20)  # XFS wants more than 300 MB
    loop = subprocess.run(["losetup", "-f", "--show", "--direct-io=on", str(image)],
                          capture_output=True, text=True, check=True).stdout.strip()
    allocated = {}
    try:
        for discard in (False, True):
            with open(loop, "wb") as f:  # 64 MiB of data the discard would throw away
                f.write(os.urandom(64 << 20))
                os.fsync(f.fileno())
            mnt = filesystems.make_and_mount(loop, fs, tmp_path / f"mnt-{discard}", discard=discard)
            filesystems.unmount(mnt.mountpoint)
            allocated[discard] = os.stat(image).st_blocks * 512
            flags = filesystems.NO_DISCARD[fs]
            assert all(f in mnt.mkfs_options.split() for f in flags) == (not discard)
    finally:
        subprocess.run(["umount", str(tmp_path / "mnt-False")], capture_output=True)
        subprocess.run(["umount", str(tmp_path / "mnt-True")], capture_output=True)
        subprocess.run(["losetup", "-d", loop], capture_output=True)
    assert allocated[False] >= 60 << 20
    assert allocated[True] < 32 << 20


def test_every_filesystem_iowatch_makes_has_its_no_discard_flag():
    assert set(filesystems.NO_DISCARD) == set(filesystems.MKFS)


def test_a_removed_mount_point_takes_its_empty_data_directory_root_along(tmp_path, monkeypatch):
    """Each data directory (each test's) has its root under MOUNT_ROOT: the last
    device's mount point removed takes it along, and MOUNT_ROOT itself stays."""
    monkeypatch.setattr(filesystems, "MOUNT_ROOT", tmp_path)
    root = tmp_path / "1a2b3c4d"
    for device in ("loop-hdd", "loop-ssd"):
        (root / device).mkdir(parents=True)
    filesystems.remove_mountpoint(root / "loop-hdd")
    assert sorted(p.name for p in root.iterdir()) == ["loop-ssd"]  # another device's is left
    filesystems.remove_mountpoint(root / "loop-ssd")
    assert not root.exists() and tmp_path.is_dir()
