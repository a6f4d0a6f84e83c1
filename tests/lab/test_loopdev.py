"""The local target's loop devices, attached for real over image files under a
private data dir."""
from __future__ import annotations

import os

import pytest

from iowatch import loopdev

pytestmark = pytest.mark.usefixtures("lab")

DEVICES = [
    {"name": "fast", "class": "ssd", "image": "fast.img", "size": "64MiB", "filesystems": ["ext4"]},
    {"name": "disk", "class": "hdd", "image": "disk.img", "size": "32MiB", "filesystems": ["ext4"]},
]


def sysfs(path: str, *rel: str) -> str:
    return open(os.path.join("/sys/block", os.path.basename(path), *rel)).read().strip()


def test_attach_makes_the_image_with_direct_io_and_rotational_flag(load_host, data_dir, lab):
    host = load_host(DEVICES)
    fast, disk = host.device("fast"), host.device("disk")
    path = loopdev.attach(fast)
    lab.track_detach(path)
    image = data_dir / "images" / "fast.img"
    assert image.stat().st_size == 64 * 1024**2
    assert image.stat().st_blocks == 0  # sparse: nothing written yet
    assert sysfs(path, "loop", "backing_file") == str(image)
    assert sysfs(path, "loop", "dio") == "1"
    assert sysfs(path, "queue", "rotational") == "0"

    hdd = loopdev.attach(disk)
    lab.track_detach(hdd)
    assert sysfs(hdd, "queue", "rotational") == "1"
    assert loopdev.state(hdd) == loopdev.LoopState(hdd, str(data_dir / "images" / "disk.img"), True, True)
    assert {s.path for s in loopdev.attached()} == {path, hdd}

    # attaching again reuses the attachment rather than making a second one
    assert loopdev.attach(fast) == path
    assert [s.path for s in loopdev.attached()].count(path) == 1

    loopdev.detach(path)
    loopdev.detach(hdd)
    assert loopdev.attached() == []
    assert image.exists()  # the image stays for the next run


def test_an_image_of_another_size_is_not_reused(load_host, data_dir):
    host = load_host(DEVICES)
    (data_dir / "images").mkdir()
    (data_dir / "images" / "fast.img").write_bytes(b"\0" * 4096)
    with pytest.raises(loopdev.LoopError, match="4096 bytes but the inventory says 67108864"):
        loopdev.attach(host.device("fast"))
    assert loopdev.attached() == []


@pytest.mark.parametrize("interrupt", [RuntimeError("benchmark failed"), KeyboardInterrupt()])
def test_attachments_are_detached_even_when_the_run_fails(load_host, data_dir, interrupt):
    host = load_host(DEVICES)
    with pytest.raises(type(interrupt)):
        with loopdev.attachments(host.devices) as paths:
            assert set(paths) == {"fast", "disk"}
            assert len(loopdev.attached()) == 2
            raise interrupt
    assert loopdev.attached() == []


def test_attachments_leave_what_was_already_attached(load_host, data_dir, lab):
    host = load_host(DEVICES)
    before = loopdev.attach(host.device("fast"))
    lab.track_detach(before)
    with loopdev.attachments(host.devices) as paths:
        assert paths["fast"] == before
    assert [s.path for s in loopdev.attached()] == [before]


def test_state_of_a_path_that_is_no_loop_device():
    with pytest.raises(loopdev.LoopError, match="not an attached loop device"):
        loopdev.state("/dev/null")
