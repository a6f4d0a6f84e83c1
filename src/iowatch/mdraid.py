"""md RAID0 for the ssd-raid0 device class: iowatch makes the array from the
inventory's declared members, and takes it apart again.

Every member passes the device-safety check first; the array is made fresh
(old superblocks zeroed) and stopped afterwards, so nothing of it outlives
the cell.
"""
from __future__ import annotations

import shutil
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from iowatch import safety
from iowatch.inventory import Device, Host


class MdError(RuntimeError):
    pass


def available() -> bool:
    """Whether this kernel can make md arrays (/proc/mdstat exists once its md
    driver is loaded). On a distribution kernel md is a module that nothing
    loads before the first array (Debian's 6.1 boots without /proc/mdstat), so
    the raid0 personality is loaded first, as filesystems.supported loads a
    filesystem's module."""
    mdstat = Path("/proc/mdstat")
    if not mdstat.exists() and shutil.which("modprobe"):
        subprocess.run(["modprobe", "raid0"], capture_output=True)
    return mdstat.exists()


def _mdadm(*args: str) -> str:
    out = subprocess.run(["mdadm", *args], capture_output=True, text=True)
    if out.returncode:
        raise MdError(f"mdadm {' '.join(args[:2])} failed: {(out.stderr or out.stdout).strip()[-500:]}")
    return out.stdout


def array_name(device_name: str) -> str:
    return f"/dev/md/iowatch-{device_name}"


def create_args(name: str, members: list[str]) -> list[str]:
    """mdadm's arguments that make the RAID0 array `name` of `members`."""
    return ["--create", name, "--run", "--level=0", f"--raid-devices={len(members)}",
            "--metadata=1.2", "--homehost=iowatch", *members]


@contextmanager
def assembled(host: Host, device: Device, data_dir=None) -> Iterator[str]:
    """Yield the md device made of `device.members` (RAID0), stopped on the way out."""
    if not available():
        raise MdError("this kernel has no md driver (no /proc/mdstat, and modprobe raid0 did not load one)")
    for member in device.members:
        safety.require(host, member, data_dir)
    for member in device.members:
        subprocess.run(["mdadm", "--zero-superblock", member], capture_output=True)
    name = array_name(device.name)
    _mdadm(*create_args(name, list(device.members)))
    for _ in range(50):  # udev may be absent (a virtme-ng guest): find the node ourselves
        md = _md_node(name, device.members)
        if md:
            break
        time.sleep(0.1)
    else:
        raise MdError(f"mdadm made {name} but no /dev/mdN holds {', '.join(device.members)}")
    try:
        yield md
    finally:
        subprocess.run(["mdadm", "--stop", md], capture_output=True)
        for member in device.members:
            subprocess.run(["mdadm", "--zero-superblock", member], capture_output=True)


def _md_node(name: str, members: tuple[str, ...]) -> str | None:
    if Path(name).exists():
        return str(Path(name).resolve())
    first = Path(members[0]).resolve().name
    holders = list((Path("/sys/block") / first / "holders").glob("md*"))
    return f"/dev/{holders[0].name}" if holders else None
