"""Fixtures for the lab tests: a private data dir, test inventories, and real loop
devices that are always unmounted, swapped off and detached after the test."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from iowatch import inventory
from loop_devices import run


def _root_with_losetup() -> str | None:
    if os.geteuid() != 0:
        return "needs root: attaches loop devices, makes filesystems and mounts them"
    if not shutil.which("losetup") or not os.path.exists("/dev/loop-control"):
        return "needs losetup and /dev/loop-control (util-linux, loop driver)"
    return None


@pytest.fixture
def data_dir(tmp_path, monkeypatch) -> Path:
    d = tmp_path / "data"
    d.mkdir()
    monkeypatch.setenv("IOWATCH_DATA_DIR", str(d))
    return d


@pytest.fixture
def write_inventory(tmp_path):
    """Write a one-host (localhost) inventory with the given device entries; return its path."""
    import yaml

    def write(devices: list[dict], host: str = "localhost", kind: str = "local") -> Path:
        doc = {"all": {"hosts": {host: {"iowatch_kind": kind, "iowatch_devices": devices}}}}
        path = tmp_path / "inventory.yml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path
    return write


@pytest.fixture
def load_host(write_inventory):
    def load(devices: list[dict]) -> inventory.Host:
        return inventory.load(write_inventory(devices)).host("localhost")
    return load


def _backing(path: str) -> str | None:
    try:
        text = Path("/sys/block", os.path.basename(path), "loop", "backing_file").read_text()
    except OSError:
        return None
    return text.strip().removesuffix(" (deleted)")  # a test may delete the image it attached


class Lab:
    """Loop devices, mounts and swap areas made by one test, undone in reverse order."""

    def __init__(self, tmp_path: Path):
        self.tmp_path = tmp_path
        self._undo: list[list[str]] = []

    def loop(self, name: str, size: str = "64M", partscan: bool = False) -> str:
        image = self.tmp_path / name
        run("truncate", "-s", size, str(image))
        scan = ["--partscan"] if partscan else []
        path = run("losetup", "--find", "--show", *scan, str(image)).stdout.strip()
        self.track_detach(path)
        return path

    def track_detach(self, path: str) -> None:
        """Detach `path` at the end, unless it no longer is the loop over the same file by then."""
        self._undo.append(["detach", path, _backing(path)])

    def mount(self, device: str) -> Path:
        point = self.tmp_path / f"mnt-{os.path.basename(device)}"
        point.mkdir()
        run("mount", device, str(point))
        self._undo.append(["umount", str(point)])
        return point

    def swapon(self, device: str) -> None:
        run("swapon", device)
        self._undo.append(["swapoff", device])

    def undo(self) -> list[str]:
        errors = []
        for cmd in reversed(self._undo):
            if cmd[0] == "detach":
                if _backing(cmd[1]) != cmd[2]:
                    continue  # detached by the test already
                cmd = ["losetup", "--detach", cmd[1]]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                errors.append(f"{' '.join(cmd)}: {done.stderr.strip()}")
        # a loop left over a file of this test (a test that failed half-way) goes too
        for line in subprocess.run(["losetup", "--list", "--noheadings", "-O", "NAME,BACK-FILE"],
                                   capture_output=True, text=True).stdout.splitlines():
            name, _, back = line.partition(" ")
            if back.strip().startswith(str(self.tmp_path)):
                subprocess.run(["losetup", "--detach", name], capture_output=True)
        return errors


@pytest.fixture
def lab(tmp_path):
    reason = _root_with_losetup()
    if reason:
        pytest.skip(reason)
    lab = Lab(tmp_path)
    try:
        yield lab
    finally:
        errors = lab.undo()
        assert not errors, errors
