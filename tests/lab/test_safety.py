"""The device-safety check, tried for real: loop devices made by each test,
with real filesystems, mounts, swap areas and partition tables on them."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from loop_devices import run
from iowatch import loopdev, safety

pytestmark = pytest.mark.usefixtures("lab")

DECLARED = {"name": "scratch", "class": "ssd", "image": "scratch.img", "size": "64MiB",
            "filesystems": ["ext4", "xfs"]}


def by_path(path: str, **more) -> dict:
    return {"name": "disk", "class": "hdd", "path": path, "filesystems": ["ext4"], **more}


@pytest.fixture
def declared(load_host, data_dir, lab):
    """(host, /dev/loopN) of a loop device declared for localhost as an image."""
    host = load_host([DECLARED])
    path = loopdev.attach(host.device("scratch"))
    lab.track_detach(path)
    return host, path


def need(tool: str, package: str) -> None:
    if not shutil.which(tool):
        pytest.skip(f"{tool} is not installed (Debian package {package})")


def test_declared_loop_device_is_allowed(declared):
    host, path = declared
    answer = safety.check(host, path)
    assert answer == safety.DeviceCheck(True, "scratch", answer.reason, path)
    assert "declared for host localhost as scratch (ssd)" in answer.reason
    assert safety.require(host, path) == answer


def test_undeclared_loop_device_is_refused(load_host, data_dir, lab):
    host = load_host([DECLARED])
    other = lab.loop("other.img")
    answer = safety.check(host, other)
    assert not answer.allowed and answer.device == ""
    assert f"loop device over {lab.tmp_path / 'other.img'}" in answer.reason
    assert "declare it under hosts.localhost.iowatch_devices in hardware-inventory.yml" in answer.reason
    with pytest.raises(safety.DeviceRefused, match=f"refusing to touch {other}: it is a loop device"):
        safety.require(host, other)


def test_image_of_another_host_is_refused(load_host, data_dir, lab):
    """An image under the data dir that this host does not declare is not this host's."""
    other = dict(DECLARED, name="theirs", image="theirs.img")
    theirs = loopdev.attach(load_host([other]).device("theirs"))
    lab.track_detach(theirs)
    answer = safety.check(load_host([DECLARED]), theirs)
    assert not answer.allowed and "not an image of a device declared for host localhost" in answer.reason


def test_loop_over_a_deleted_image_is_refused(declared, data_dir):
    host, path = declared
    (data_dir / "images" / "scratch.img").unlink()
    answer = safety.check(host, path)
    assert not answer.allowed and "a file deleted since it was attached; detach it" in answer.reason


def test_declared_path_is_matched_through_symlinks(load_host, lab, tmp_path):
    target = lab.loop("disk.img")
    by_id = tmp_path / "by-id-disk"  # stands in for /dev/disk/by-id/...
    by_id.symlink_to(target)
    host = load_host([by_path(str(by_id).replace(str(tmp_path), "/dev/../" + str(tmp_path)))])
    answer = safety.check(host, target)
    assert answer.allowed and answer.device == "disk"
    answer = safety.check(host, str(by_id))
    assert answer.allowed and answer.resolved == target


def test_mounted_device_is_refused(declared, lab):
    host, path = declared
    run("mkfs.ext4", "-q", "-F", path)
    point = lab.mount(path)
    answer = safety.check(host, path)
    assert not answer.allowed and answer.device == "scratch"
    assert f"it is mounted at {point}; unmount it" in answer.reason


def test_device_with_a_mounted_partition_is_refused(load_host, lab):
    need("sfdisk", "fdisk")
    path = lab.loop("parted.img", partscan=True)
    run("sfdisk", "--quiet", path, input="label: gpt\n,\n")
    part = f"{path}p1"
    if not os.path.exists(part):
        # a kernel without the GPT parser (CONFIG_EFI_PARTITION, as here) is told by partx
        run("partx", "--add", path)
    run("mkfs.ext4", "-q", "-F", part)
    point = lab.mount(part)
    answer = safety.check(load_host([by_path(path, partition_table="gpt")]), path)
    assert not answer.allowed and f"it is mounted at {point}" in answer.reason


def root_device() -> str:
    """The block device holding /, read from /proc/self/mountinfo independently of safety.py."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == "/":
                sysdir = os.path.realpath(f"/sys/dev/block/{fields[2]}")
                if os.path.isdir(sysdir):
                    return f"/dev/{os.path.basename(sysdir)}"
                pytest.skip(f"/ is not on a block device here ({fields[-3]} {fields[-2]})")
    pytest.skip("no / in /proc/self/mountinfo")


def test_root_filesystem_is_refused_even_when_declared(load_host):
    root = root_device()
    if not os.path.exists(root):
        pytest.skip(f"{root} has no device node here")
    host = load_host([by_path(root)])
    answer = safety.check(host, root)
    assert not answer.allowed and answer.device == "disk"
    assert answer.reason.startswith("it holds the root filesystem (/)")


def test_swap_signature_is_refused(declared):
    host, path = declared
    run("mkswap", path)
    answer = safety.check(host, path)
    assert not answer.allowed and "it holds a swap area (blkid: TYPE=swap)" in answer.reason


def test_active_swap_is_refused(declared, lab):
    host, path = declared
    run("mkswap", path)
    try:
        lab.swapon(path)
    except subprocess.CalledProcessError as e:
        pytest.skip(f"swapon is not possible here: {e.stderr.strip()}")
    answer = safety.check(host, path)
    assert not answer.allowed and f"it is an active swap area ({path}); swapoff it" in answer.reason


def test_unexpected_partition_table_is_refused(load_host, lab):
    need("sfdisk", "fdisk")
    path = lab.loop("gpt.img")
    run("sfdisk", "--quiet", path, input="label: gpt\n,\n")
    answer = safety.check(load_host([by_path(path)]), path)
    assert not answer.allowed
    assert "it has a partition table (gpt) where the inventory expects none" in answer.reason
    # a partition table the inventory expects is allowed
    assert safety.check(load_host([by_path(path, partition_table="gpt")]), path).allowed
    answer = safety.check(load_host([by_path(path, partition_table="dos")]), path)
    assert "(gpt) where the inventory expects dos" in answer.reason


def test_missing_path_and_regular_file_are_refused(load_host, tmp_path):
    host = load_host([DECLARED])
    answer = safety.check(host, "/dev/disk/by-id/no-such-disk")
    assert not answer.allowed and "does not exist" in answer.reason
    regular = tmp_path / "file.img"
    regular.write_bytes(b"\0" * 1024)
    answer = safety.check(host, str(regular))
    assert not answer.allowed and "it is a regular file, not a block device" in answer.reason
    with pytest.raises(safety.DeviceRefused, match="not a block device"):
        safety.require(host, str(regular))


def test_md_member_of_an_array_iowatch_did_not_make_is_refused(load_host, lab):
    """Needs an md driver in the kernel: an md superblock can only be written by mdadm --create."""
    need("mdadm", "mdadm")
    if not os.path.exists("/proc/mdstat"):
        # mdadm --create would fail after leaving /dev/mdN nodes behind; faking sysfs proves nothing
        pytest.skip("this kernel has no md driver (no /proc/mdstat): an md member cannot be made here")
    a, b = lab.loop("m0.img"), lab.loop("m1.img")
    created = subprocess.run(["mdadm", "--create", "/dev/md/iowatch-test", "--run", "--level=0",
                              "--raid-devices=2", a, b], capture_output=True, text=True)
    if created.returncode != 0:
        pytest.skip("cannot make an md array on this kernel (no md driver?): "
                    f"mdadm --create: {created.stderr.strip()}")
    try:
        undeclared = safety.check(load_host([DECLARED]), a)
        assert not undeclared.allowed
        assert "it is in use by md" in undeclared.reason and "linux_raid_member" in undeclared.reason
        raid = {"name": "raid", "class": "ssd-raid0", "members": [a, b], "filesystems": ["xfs"]}
        host = load_host([raid])
        assert safety.check(host, a).allowed
        assert safety.check(host, os.path.realpath("/dev/md/iowatch-test")).allowed
    finally:
        subprocess.run(["mdadm", "--stop", "/dev/md/iowatch-test"], capture_output=True)
        subprocess.run(["mdadm", "--zero-superblock", a, b], capture_output=True)
