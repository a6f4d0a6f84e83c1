"""The local target's devices: loop devices over image files under the data dir.

A device declared with `image` and `size` in hardware-inventory.yml becomes a
sparse file $IOWATCH_DATA_DIR/images/<image> attached with direct I/O on: the
backing file's page cache would otherwise stand in for the device and spread
the results. Its rotational flag is set from the inventory so an
`hdd` looks rotational to the I/O scheduler and the others do not. state()
says what a run got (direct I/O, rotational) for the bundle's environment.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from iowatch import paths
from iowatch.inventory import Device

SYS_BLOCK = Path("/sys/block")


class LoopError(RuntimeError):
    """A loop device that could not be made, attached or detached."""


@dataclass(frozen=True)
class LoopState:
    """What a loop device is over and how it behaves, for the run's environment record."""
    path: str
    backing_file: str
    direct_io: bool
    rotational: bool

    def environment(self) -> dict:
        return {"loop_backing_file": self.backing_file, "loop_direct_io": self.direct_io,
                "rotational": self.rotational}


def images_dir(data_dir: str | os.PathLike | None = None) -> Path:
    return Path(data_dir if data_dir is not None else paths.data_dir()) / "images"


def image_path(device: Device, data_dir: str | os.PathLike | None = None) -> Path:
    if not device.is_image:
        raise LoopError(f"device {device.name!r} is declared by path, not as an image file")
    return images_dir(data_dir) / device.image


def backing_file(kname: str) -> str | None:
    """The file behind /dev/<kname> when it is an attached loop device, else None."""
    try:
        text = (SYS_BLOCK / kname / "loop" / "backing_file").read_text().rstrip("\n")
    except OSError:
        return None
    return text or None


def _flag(kname: str, *rel: str) -> bool:
    return SYS_BLOCK.joinpath(kname, *rel).read_text().strip() == "1"


def state(path: str) -> LoopState:
    kname = os.path.basename(os.path.realpath(path))
    backing = backing_file(kname)
    if backing is None:
        raise LoopError(f"{path} is not an attached loop device")
    return LoopState(f"/dev/{kname}", backing, _flag(kname, "loop", "dio"),
                     _flag(kname, "queue", "rotational"))


def attached(data_dir: str | os.PathLike | None = None) -> list[LoopState]:
    """Attached loop devices whose backing file is under data_dir/images."""
    root = os.path.realpath(images_dir(data_dir))
    found = []
    for entry in sorted(SYS_BLOCK.glob("loop*"), key=lambda p: int(p.name[4:] or 0)):
        backing = backing_file(entry.name)
        if backing and os.path.dirname(backing) == root:
            found.append(state(f"/dev/{entry.name}"))
    return found


def _losetup(*args: str) -> str:
    try:
        done = subprocess.run(["losetup", *args], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise LoopError("losetup is not installed (util-linux)") from None
    if done.returncode != 0:
        raise LoopError(f"losetup {' '.join(args)}: {done.stderr.strip() or f'exit {done.returncode}'}")
    return done.stdout.strip()


def _make_image(image: Path, size: int) -> None:
    image.parent.mkdir(parents=True, exist_ok=True)
    if image.exists():
        have = image.stat().st_size
        if have != size:
            raise LoopError(f"{image} is {have} bytes but the inventory says {size}: "
                            "delete the image file to have it made again at the new size")
        return
    with open(image, "xb") as f:
        f.truncate(size)  # sparse: blocks are allocated as the benchmark writes them


def attach(device: Device, data_dir: str | os.PathLike | None = None) -> str:
    """Make the device's image if missing, attach it with direct I/O and return /dev/loopN.

    An image already attached is reused. When direct I/O cannot be enabled the
    device is attached without it and a warning says so; state() records it.
    """
    image = image_path(device, data_dir)
    if device.size_bytes is None:
        raise LoopError(f"device {device.name!r} has no size in the inventory")
    _make_image(image, device.size_bytes)
    real = os.path.realpath(image)
    for loop in attached(data_dir):
        if loop.backing_file == real:
            path = loop.path
            break
    else:
        try:
            path = _losetup("--direct-io=on", "--find", "--show", real)
        except LoopError as e:
            warnings.warn(f"{device.name}: attaching {real} with direct I/O failed ({e}); "
                          "attaching it with buffered I/O: results will be noisier", stacklevel=2)
            path = _losetup("--find", "--show", real)
    kname = os.path.basename(path)
    if not _flag(kname, "loop", "dio"):
        with contextlib.suppress(LoopError):
            _losetup("--direct-io=on", path)  # a reused attachment may have been made without it
        if not _flag(kname, "loop", "dio"):
            warnings.warn(f"{device.name}: {path} runs without direct I/O (the file system holding "
                          f"{real} refused it): the page cache stands in for the device", stacklevel=2)
    _set_rotational(device, kname)
    return path


def _set_rotational(device: Device, kname: str) -> None:
    want = device.wants_rotational
    try:
        (SYS_BLOCK / kname / "queue" / "rotational").write_text("1" if want else "0")
    except OSError as e:
        warnings.warn(f"{device.name}: cannot set /dev/{kname} rotational={int(want)}: {e.strerror}",
                      stacklevel=3)


# How long detach waits for a busy device's deferred clear. After a SIGTERM in the
# middle of a buffered writer the lazily unmounted filesystem first writes back
# its dirty pages, on a throttled loop device; on a loaded 2-core CI machine
# that took more than 15 s. The wait ends as soon as the device is free.
RELEASE_WAIT_S = 90.0


def detach(path: str, tries: int = 6) -> None:
    """Detach a loop device, waiting a little while it is still busy: after a
    Ctrl-C or SIGTERM the lazily unmounted filesystem on it may take a moment
    to let go, and a loop left attached would keep its image busy."""
    for attempt in range(tries):
        try:
            _losetup("--detach", path)
            break
        except LoopError:
            if attempt == tries - 1:
                raise
            time.sleep(0.25 * (attempt + 1))
    # On a device still held (a lazily unmounted filesystem, a tool exiting) the
    # kernel only marks it to be cleared on its last close: wait for that, so
    # whoever runs next finds the device free, not "left attached".
    backing = Path("/sys/block") / os.path.basename(path) / "loop" / "backing_file"
    deadline = time.monotonic() + RELEASE_WAIT_S
    while backing.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    if backing.exists():
        raise LoopError(f"{path} is still held {RELEASE_WAIT_S:.0f} s after its detach: the kernel "
                        "clears it on its last close; see `fuser -m` or `lsof` on it")


@contextlib.contextmanager
def attachments(devices: Iterable[Device], data_dir: str | os.PathLike | None = None
                ) -> Iterator[dict[str, str]]:
    """Attach the image devices, yield {device name: /dev/loopN}, detach on the way out.

    Only what this call attached is detached, also on an exception or Ctrl-C;
    attachments that already existed are left as they were. An attachment that
    losetup made but attach() never returned (a SIGTERM in between) is found by
    its image and detached too.
    """
    devices = [d for d in devices if d.is_image]
    before = {loop.path for loop in attached(data_dir)}
    made: dict[str, str] = {}
    try:
        for device in devices:
            made[device.name] = attach(device, data_dir)
        yield dict(made)
    finally:
        errors = []
        ours = {os.path.realpath(image_path(d, data_dir)) for d in devices}
        paths = set(made.values()) | {loop.path for loop in attached(data_dir) if loop.backing_file in ours}
        for path in sorted(paths):
            if path not in before:
                try:
                    detach(path)
                except LoopError as e:
                    errors.append(str(e))
        if errors:
            warnings.warn("could not detach: " + "; ".join(errors), stacklevel=2)
