"""The storage role applied for real with a local connection to loop devices made
here: filesystems, mounts and I/O schedulers made and checked, a second run
changes nothing, the teardown leaves nothing mounted, and a device the lab
inventory does not declare is refused by `iowatch device check` before any write.

The host kernel here has no md driver (no /proc/mdstat): the role skips the
md RAID0 part and says so; with md (a virtual-lab guest) the RAID0 test runs it.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_env import ANSIBLE_DIR, ansible_env, recap, run, tool

HOW = "pip install -e '.[dev]' (ansible-core is in the dev extra)"
STORAGE = str(ANSIBLE_DIR / "storage.yml")


def _sh(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True)


class Loops:
    """Loop devices over image files under tmp_path; everything under tmp_path is
    unmounted, md arrays of its loops stopped and its loops detached at the end."""

    def __init__(self, tmp_path: Path):
        self.tmp_path = tmp_path

    def make(self, name: str, size: str) -> str:
        image = self.tmp_path / f"{name}.img"
        subprocess.run(["truncate", "-s", size, str(image)], check=True)
        return subprocess.run(["losetup", "--find", "--show", str(image)], check=True,
                              capture_output=True, text=True).stdout.strip()

    def mine(self) -> list[str]:
        out = _sh("losetup", "--list", "--noheadings", "-O", "NAME,BACK-FILE").stdout
        return [line.split()[0] for line in out.splitlines()
                if len(line.split()) > 1 and line.split()[1].startswith(str(self.tmp_path))]

    def mounts(self) -> list[str]:
        with open("/proc/self/mounts") as f:
            return [line.split()[1] for line in f if line.split()[1].startswith(str(self.tmp_path))]

    def cleanup(self) -> None:
        for point in sorted(self.mounts(), reverse=True):
            _sh("umount", "-l", point)
        loops = self.mine()
        for holder in Path("/sys/block").glob("md*"):
            slaves = {f"/dev/{s.name}" for s in (holder / "slaves").glob("*")}
            if slaves & set(loops):
                _sh("mdadm", "--stop", f"/dev/{holder.name}")
        for loop in loops:
            _sh("losetup", "--detach", loop)


@pytest.fixture
def loops(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root: attaches loop devices, makes filesystems and mounts them")
    if not shutil.which("losetup") or not os.path.exists("/dev/loop-control"):
        pytest.skip("needs losetup and /dev/loop-control (util-linux, loop driver)")
    for mkfs, package in (("mkfs.xfs", "xfsprogs"), ("mkfs.ext4", "e2fsprogs")):
        if not shutil.which(mkfs):
            pytest.skip(f"{mkfs} is not installed (Debian package {package})")
    made = Loops(tmp_path)
    try:
        yield made
    finally:
        made.cleanup()
        assert not made.mounts() and not made.mine(), "left mounted or attached"


def inventory(tmp_path: Path, devices: list[dict]) -> Path:
    """A lab inventory declaring `devices` for localhost, also the Ansible inventory."""
    doc = {"all": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "iowatch_kind": "local", "iowatch_devices": devices}}}}
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def play(tmp_path: Path, inv: Path, *extra: str, host: str = "localhost",
         **more_vars) -> tuple[subprocess.CompletedProcess, str]:
    iowatch = Path(sys.executable).parent / "iowatch"
    args = {"storage_hosts": host, "storage_inventory": str(inv), "storage_iowatch": str(iowatch),
            "storage_mount_root": str(tmp_path / "mnt"), "storage_state_dir": str(tmp_path / "state"),
            "storage_persist_scheduler": False, "storage_lkp_names": False, **more_vars}
    cmd = [tool("ansible-playbook", HOW), "-i", str(inv), STORAGE, "-e", json.dumps(args), *extra]
    done = run(cmd, ansible_env(tmp_path), timeout=900)  # a hang guard: TCG guests are slow
    return done, done.stdout + done.stderr


def mounted(point: Path) -> tuple[str, str] | None:
    done = _sh("findmnt", "--noheadings", "--raw", "--output", "SOURCE,FSTYPE", "--mountpoint", str(point))
    return tuple(done.stdout.split()) if done.returncode == 0 else None


def scheduler(dev: str) -> str:
    text = Path("/sys/block", os.path.basename(dev), "queue", "scheduler").read_text()
    return text[text.index("[") + 1:text.index("]")]


def test_storage_role_makes_checks_repeats_and_tears_down(loops, tmp_path):
    fast = loops.make("fast", "320M")   # XFS needs 300 MB
    disk = loops.make("disk", "64M")
    m1, m2 = loops.make("m1", "160M"), loops.make("m2", "160M")   # XFS on the RAID0 where md exists
    inv = inventory(tmp_path, [
        {"name": "fast", "class": "ssd", "path": fast, "filesystems": ["xfs", "raw"]},
        {"name": "disk", "class": "hdd", "path": disk, "filesystems": ["ext4", "xfs"]},
        {"name": "pair", "class": "ssd-raid0", "members": [m1, m2], "filesystems": ["xfs"]},
    ])
    mnt = tmp_path / "mnt"

    done, out = play(tmp_path, inv)
    assert done.returncode == 0, out
    assert recap(out)["changed"] > 0
    assert mounted(mnt / "fast") == (fast, "xfs")
    assert mounted(mnt / "disk") == (disk, "ext4")
    assert scheduler(fast) == "none" and scheduler(disk) == "mq-deadline"
    record = yaml.safe_load((tmp_path / "state" / "storage-state.yml").read_text())
    assert [d["name"] for d in record["devices"]] == ["fast", "disk", "pair"]
    if not Path("/proc/mdstat").exists():
        # No md driver here: the RAID0 part is skipped, said so, and its members left alone.
        assert "pair: md RAID0 skipped: this kernel has no md driver (no /proc/mdstat)" in out
        assert "no md driver" in record["devices"][2]["skipped"]
        assert _sh("blkid", "-p", m1).returncode == 2 and _sh("blkid", "-p", m2).returncode == 2
    else:
        source, fstype = mounted(mnt / "pair")
        assert fstype == "xfs" and source == os.path.realpath("/dev/md/iowatch-pair")
        assert scheduler(m1) == "none" and scheduler(m2) == "none"

    done, out = play(tmp_path, inv)
    assert done.returncode == 0, out
    assert recap(out)["changed"] == 0, out  # idempotent

    done, out = play(tmp_path, inv, "-e", "storage_state=absent")
    assert done.returncode == 0, out
    assert mounted(mnt / "fast") is None and mounted(mnt / "disk") is None
    assert not (mnt / "fast").exists() and not (mnt / "disk").exists()
    assert not (tmp_path / "state" / "storage-state.yml").exists()
    assert not loops.mounts()

    done, out = play(tmp_path, inv, "-e", "storage_state=absent")
    assert done.returncode == 0 and recap(out)["changed"] == 0, out


def test_storage_role_names_the_declared_devices_for_lkp(loops, tmp_path):
    """A udev rule gives each declared device a name LKP-tests can use (/dev/lkp-<device>:
    LKP cuts a trailing number off a disk name), the name iowatch's LKP harness uses."""
    fast = loops.make("fast", "64M")
    inv = inventory(tmp_path, [{"name": "fast", "class": "hdd", "path": fast, "filesystems": ["ext4"]}])
    rule = tmp_path / "61-iowatch-lkp.rules"
    done, out = play(tmp_path, inv, storage_lkp_names=True, storage_lkp_udev_rule=str(rule))
    assert done.returncode == 0, out
    from iowatch.lkp.jobs import lkp_disk_name
    wanted = (f'KERNEL=="{os.path.basename(fast)}", SYMLINK+="'
              f'{lkp_disk_name("fast").removeprefix("/dev/")}"')
    assert wanted in rule.read_text()
    done, out = play(tmp_path, inv, "-e", "storage_state=absent", storage_lkp_names=True,
                     storage_lkp_udev_rule=str(rule))
    assert done.returncode == 0, out
    assert not rule.exists()


def test_storage_role_refuses_an_undeclared_device(loops, tmp_path):
    declared = loops.make("declared", "64M")
    intruder = loops.make("intruder", "64M")
    inv = inventory(tmp_path, [{"name": "declared", "class": "hdd", "path": declared, "filesystems": ["ext4"]}])
    # The play is told about a device (extra vars override the inventory's list)
    # that the lab inventory does not declare: `iowatch device check` stops it.
    sneaked = {"iowatch_devices": [{"name": "intruder", "class": "hdd", "path": intruder,
                                    "filesystems": ["ext4"]}]}
    done, out = play(tmp_path, inv, "-e", json.dumps(sneaked))
    assert done.returncode != 0, out
    assert "Check the device against iowatch's device-safety rules" in out
    assert f"refused: {intruder}" in out and "not an image of a device declared for host localhost" in out
    assert recap(out)["failed"] == 1 and recap(out)["changed"] == 0
    assert _sh("blkid", "-p", intruder).returncode == 2, "something was written to the refused device"
    assert mounted(tmp_path / "mnt" / "intruder") is None


@pytest.mark.skipif(not Path("/proc/mdstat").exists(),
                    reason="this kernel has no md driver (no /proc/mdstat): md RAID0 runs in a "
                           "virtual-lab guest, whose kernel has it")
def test_storage_role_assembles_raid0(loops, tmp_path):
    m1, m2 = loops.make("m1", "320M"), loops.make("m2", "320M")
    inv = inventory(tmp_path, [{"name": "pair", "class": "ssd-raid0", "members": [m1, m2],
                                "filesystems": ["xfs"]}])
    done, out = play(tmp_path, inv)
    assert done.returncode == 0, out
    source, fstype = mounted(tmp_path / "mnt" / "pair")
    assert fstype == "xfs" and os.path.realpath("/dev/md/iowatch-pair") == source
    assert "raid0" in Path("/proc/mdstat").read_text()
    done, out = play(tmp_path, inv)
    assert done.returncode == 0 and recap(out)["changed"] == 0, out
    done, out = play(tmp_path, inv, "-e", "storage_state=absent")
    assert done.returncode == 0, out
    assert not os.path.exists("/dev/md/iowatch-pair")
    # No superblock left for udev's incremental assembly to bring the array back.
    assert _sh("mdadm", "--examine", m1).returncode != 0 and _sh("mdadm", "--examine", m2).returncode != 0
    done, out = play(tmp_path, inv, "-e", "storage_state=absent")
    assert done.returncode == 0 and recap(out)["changed"] == 0, out


VLAB_HOST = os.environ.get("IOWATCH_VLAB_HOST")


@pytest.mark.skipif(not VLAB_HOST, reason="runs inside a virtual-lab guest (iowatch kernel boot sets "
                                          "IOWATCH_VLAB_HOST), on the guest's emulated disks")
def test_storage_role_on_the_virtual_lab_devices(tmp_path):
    """The whole role on the emulated device classes of the virtual-lab host, as the
    lab inventory declares them: SD card, SSD, md RAID0 of two disks, rotational disk."""
    inv_path = Path(os.environ.get("IOWATCH_INVENTORY", ANSIBLE_DIR.parent / "hardware-inventory.yml"))
    lab = yaml.safe_load(inv_path.read_text())
    devices = lab["all"]["children"]["virtual"]["hosts"][VLAB_HOST]["iowatch_devices"]
    mnt = tmp_path / "mnt"

    def apply(*extra: str) -> tuple[subprocess.CompletedProcess, str]:
        return play(tmp_path, inv_path, *extra, host=VLAB_HOST, storage_md=True,
                    ansible_python_interpreter=sys.executable)

    try:
        done, out = apply()
        assert done.returncode == 0, out
        assert recap(out, VLAB_HOST)["changed"] > 0
        for dev in devices:
            source, fstype = mounted(mnt / dev["name"])
            want = next(f for f in dev["filesystems"] if f != "raw")
            assert fstype == want, (dev["name"], fstype)
            if dev.get("members"):
                assert source == os.path.realpath(f"/dev/md/iowatch-{dev['name']}")
                assert "raid0" in Path("/proc/mdstat").read_text()
                disks = dev["members"]
            else:
                assert source == os.path.realpath(dev["path"])
                disks = [dev["path"]]
            want_sched = "mq-deadline" if dev["class"] in ("hdd", "sdcard", "emmc") else "none"
            assert all(scheduler(os.path.realpath(d)) == want_sched for d in disks), dev["name"]

        done, out = apply()
        assert done.returncode == 0 and recap(out, VLAB_HOST)["changed"] == 0, out  # idempotent
    finally:
        done, out = apply("-e", "storage_state=absent")
    assert done.returncode == 0, out
    assert not any(mounted(mnt / d["name"]) for d in devices)
    assert not any(Path("/dev/md").glob("iowatch-*"))
    members = [m for d in devices for m in d.get("members", [])]
    assert members and not any(_sh("mdadm", "--examine", m).returncode == 0 for m in members)
    done, out = apply("-e", "storage_state=absent")
    assert done.returncode == 0 and recap(out, VLAB_HOST)["changed"] == 0, out
