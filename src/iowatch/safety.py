"""The one device-safety check (docs/architecture.md, "The safety rule"): may iowatch write to this block device?

The runner calls require(host, path) before any mkfs, mdadm or write, and
`iowatch device check` shows the same answer. A device is refused when it
- does not exist or is not a block device;
- is not declared for that host in hardware-inventory.yml (a loop device counts
  as declared when its backing file is a declared image under the data dir; an
  md array when iowatch made it from the members of a declared ssd-raid0);
- holds the root filesystem, is mounted, or is an active or formatted swap area
  (the device or any of its partitions);
- is held by another device (md, device-mapper) or carries an md superblock
  that is not one of a declared ssd-raid0's members;
- has a partition table the inventory does not expect (default: none).
Every refusal says, in a lab admin's words, what to do about it.
"""
from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from iowatch import loopdev
from iowatch.inventory import Device, Host

SYS_DEV_BLOCK = Path("/sys/dev/block")


@dataclass(frozen=True)
class DeviceCheck:
    """The safety check's answer on one device: may iowatch write to it, and why
    (not an A/B result: those are iowatch.stats.verdict's)."""
    allowed: bool
    device: str      # the inventory's device name, "" when the path is not declared
    reason: str
    resolved: str    # the path with symlinks (/dev/disk/by-id/...) resolved


class DeviceRefused(RuntimeError):
    def __init__(self, path: str, answer: DeviceCheck):
        self.answer = answer
        shown = path if answer.resolved in ("", path) else f"{path} ({answer.resolved})"
        super().__init__(f"refusing to touch {shown}: {answer.reason}")


@dataclass(frozen=True)
class _Block:
    """A block device as sysfs shows it, with its partitions."""
    kname: str
    sysdir: Path
    sysdirs: tuple[Path, ...]    # the device's and its partitions'
    devnums: frozenset[int]      # st_rdev of the device and its partitions
    paths: frozenset[str]        # /dev/<name> of the device and its partitions


def _block(rdev: int) -> _Block:
    sysdir = (SYS_DEV_BLOCK / f"{os.major(rdev)}:{os.minor(rdev)}").resolve()
    dirs = [sysdir] + sorted(c for c in sysdir.iterdir() if (c / "partition").exists())
    nums = {rdev}
    for part in dirs[1:]:
        major, minor = (part / "dev").read_text().split(":")
        nums.add(os.makedev(int(major), int(minor)))
    return _Block(sysdir.name, sysdir, tuple(dirs), frozenset(nums),
                  frozenset(f"/dev/{d.name}" for d in dirs))


def _rdev(path: str) -> int | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_rdev if stat.S_ISBLK(st.st_mode) else None


def _mountinfo() -> list[tuple[int, str, str]]:
    """(device number, mount point, source) of every mount this process can see."""
    mounts = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            major, minor = fields[2].split(":")
            mounts.append((os.makedev(int(major), int(minor)), _unescape(fields[4]),
                           _unescape(fields[sep + 2])))
    return mounts


def _unescape(field: str) -> str:
    return field.encode().decode("unicode_escape") if "\\" in field else field


def _proc_mounts_sources() -> set[str]:
    with open("/proc/mounts") as f:
        return {os.path.realpath(_unescape(line.split()[0])) for line in f if line.startswith("/")}


def _btrfs_members() -> set[str]:
    """Devices of mounted btrfs filesystems: mountinfo names only one of a multi-device btrfs."""
    found = set()
    for link in Path("/sys/fs/btrfs").glob("*/devices/*"):
        found.add(f"/dev/{link.resolve().name}")
    return found


def _active_swaps() -> set[str]:
    try:
        with open("/proc/swaps") as f:
            return {os.path.realpath(_unescape(line.split()[0])) for line in list(f)[1:] if line.strip()}
    except OSError:
        return set()


def _probe(path: str) -> dict[str, str] | str:
    """blkid's low-level probe of the signatures on the device itself, or why it failed."""
    try:
        done = subprocess.run(["blkid", "-p", "-o", "export", path], capture_output=True, text=True)
    except FileNotFoundError:
        return "blkid is not installed (util-linux), so its signatures cannot be read"
    if done.returncode == 2:  # blkid: nothing found
        return {}
    if done.returncode != 0:
        return (f"blkid cannot tell what it holds ({done.stderr.strip() or f'exit {done.returncode}'}); "
                "if several signatures are on it and the device is yours, clear them with wipefs -a")
    return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)


def _declared(host: Host, resolved: str, block: _Block, data_dir) -> tuple[Device | None, bool, str]:
    """(declared device, whether it is an ssd-raid0 member, why not declared)."""
    for d in host.devices:
        if d.path and os.path.realpath(d.path) == resolved:
            return d, False, ""
    for d in host.devices:
        if any(os.path.realpath(m) == resolved for m in d.members):
            return d, True, ""
    backing = loopdev.backing_file(block.kname)
    if backing is not None:
        if backing.endswith(" (deleted)"):
            return None, False, (f"it is a loop device over {backing[:-10]}, a file deleted since it "
                                 f"was attached; detach it (losetup -d /dev/{block.kname}) and attach "
                                 "the image again")
        for d in host.devices:
            if d.is_image and os.path.realpath(loopdev.image_path(d, data_dir)) == backing:
                return d, False, ""
        return None, False, (f"it is a loop device over {backing}, which is not an image of a device "
                             f"declared for host {host.name} (images live in "
                             f"{loopdev.images_dir(data_dir)}); "
                             f"declare it under hosts.{host.name}.iowatch_devices in hardware-inventory.yml "
                             "or leave it alone")
    slaves = {f"/dev/{s.name}" for s in (block.sysdir / "slaves").glob("*")}
    if (block.sysdir / "md").is_dir() and slaves:
        for d in host.devices:
            if slaves <= {os.path.realpath(m) for m in d.members}:
                return d, False, ""
        return None, False, (f"it is an md array of {', '.join(sorted(slaves))} that iowatch did not make "
                             f"from a declared ssd-raid0's members; declare its members under "
                             f"hosts.{host.name}.iowatch_devices in hardware-inventory.yml")
    return None, False, (f"it is not declared for host {host.name}; declare it under "
                         f"hosts.{host.name}.iowatch_devices in hardware-inventory.yml (by its "
                         "/dev/disk/by-id/ path) if iowatch may erase it")


def check(host: Host, path: str, data_dir: str | os.PathLike | None = None) -> DeviceCheck:
    """Whether iowatch may write to `path` on `host`; the reason says why (not)."""
    resolved = os.path.realpath(path)
    if not os.path.exists(resolved):
        return DeviceCheck(False, "", f"{path} does not exist; check the path (is the device plugged in?)",
                       resolved)
    rdev = _rdev(resolved)
    if rdev is None:
        kind = "a directory" if os.path.isdir(resolved) else "a regular file" if os.path.isfile(resolved) \
            else "not a block device"
        return DeviceCheck(False, "", f"it is {kind}, not a block device; give the device's /dev path", resolved)
    block = _block(rdev)
    device, is_member, undeclared = _declared(host, resolved, block, data_dir)
    refusals = []

    mounts = _mountinfo()
    root_devs = {os.stat("/").st_dev} | {dev for dev, point, _ in mounts if point == "/"}
    # btrfs shows an anonymous device number for / : its mount source names the device
    root_sources = {os.path.realpath(src) for _, point, src in mounts if point == "/"}
    if root_devs & block.devnums or root_sources & block.paths:
        refusals.append("it holds the root filesystem (/); never give the system disk to iowatch")
    else:
        points = sorted({point for dev, point, _ in mounts if dev in block.devnums}
                        | {point for _, point, src in mounts if os.path.realpath(src) in block.paths})
        if points:
            refusals.append(f"it is mounted at {', '.join(points)}; unmount it (umount) and remove it "
                            "from /etc/fstab if iowatch may erase it")
        elif block.paths & (_proc_mounts_sources() | _btrfs_members()):
            refusals.append("it is part of a mounted filesystem; unmount it first")
    if device is None:
        refusals.append(undeclared)
    swaps = block.paths & _active_swaps()
    if swaps:
        refusals.append(f"it is an active swap area ({', '.join(sorted(swaps))}); swapoff it and remove it "
                        "from /etc/fstab if iowatch may erase it")

    holders = sorted(h.name for d in block.sysdirs for h in (d / "holders").glob("*"))
    if holders and not (is_member and _made_from_members(holders, device)):
        refusals.append(f"it is in use by {', '.join(holders)} (an md array or device-mapper target); "
                        "stop that array or target first, and declare the device if iowatch may erase it")

    probe = _probe(resolved)
    if isinstance(probe, str):
        refusals.append(probe)
    else:
        if probe.get("TYPE") == "swap" and not swaps:
            refusals.append("it holds a swap area (blkid: TYPE=swap); if no system uses it, "
                            "clear it with wipefs -a and remove it from /etc/fstab")
        if probe.get("TYPE") == "linux_raid_member" and not is_member:
            refusals.append("it is a member of an md array iowatch did not make (blkid: linux_raid_member); "
                            "stop the array and clear it with mdadm --zero-superblock, or declare it as a "
                            "member of an ssd-raid0 device")
        expected = "none" if device is None or is_member else device.partition_table
        found = probe.get("PTTYPE", "none")
        if found != expected:
            refusals.append(f"it has a partition table ({found}) where the inventory expects {expected}; "
                            "if it holds nothing you need, clear it with wipefs -a, otherwise set "
                            "partition_table for the device in hardware-inventory.yml")

    name = device.name if device else ""
    if refusals:
        return DeviceCheck(False, name, "; ".join(refusals), resolved)
    role = f"a member of {name}" if is_member else name
    return DeviceCheck(True, name, f"declared for host {host.name} as {role} ({device.device_class}); "
                   "not mounted, not root, not swap, not in another array, "
                   f"partition table {device.partition_table if not is_member else 'none'} as expected",
                   resolved)


def _made_from_members(holders: list[str], device: Device | None) -> bool:
    """Whether every holder is an md array made only of `device`'s declared members."""
    members = {os.path.realpath(m) for m in device.members} if device else set()
    for name in holders:
        sysdir = Path("/sys/block") / name
        slaves = {f"/dev/{s.name}" for s in (sysdir / "slaves").glob("*")}
        if not (sysdir / "md").is_dir() or not slaves or not slaves <= members:
            return False
    return True


def require(host: Host, path: str, data_dir: str | os.PathLike | None = None) -> DeviceCheck:
    """check(), raising DeviceRefused unless the device may be written."""
    answer = check(host, path, data_dir)
    if not answer.allowed:
        raise DeviceRefused(path, answer)
    return answer
