"""Loop devices a test's run left attached over its own directory: listed, and
detached (after unmounting) by the fixtures of the tests that run on loop devices."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


def run(*cmd: str, input: str | None = None) -> subprocess.CompletedProcess:
    """A command that must succeed (check=True), its output kept."""
    return subprocess.run(cmd, input=input, capture_output=True, text=True, check=True)


def loops_over(images: Path) -> list[str]:
    """The loop devices whose backing file is under `images`."""
    out = subprocess.run(["losetup", "-l", "-n", "-O", "NAME,BACK-FILE"], capture_output=True, text=True)
    return [line.split()[0] for line in out.stdout.splitlines()
            if len(line.split()) > 1 and line.split()[1].startswith(str(images))]


def detach_over(images: Path) -> None:
    for loop in loops_over(images):
        subprocess.run(["umount", loop], capture_output=True)
        subprocess.run(["losetup", "-d", loop], capture_output=True)


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """IOWATCH_DATA_DIR of the test's own (the loop images go under it), cleaned after."""
    d = tmp_path / "data"
    d.mkdir()
    monkeypatch.setenv("IOWATCH_DATA_DIR", str(d))
    yield d
    detach_over(d)
