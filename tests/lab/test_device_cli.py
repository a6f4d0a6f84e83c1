"""`iowatch device`: the verdict, exit codes and messages a lab admin sees."""
from __future__ import annotations

import pytest

from iowatch import cli, loopdev

pytestmark = pytest.mark.usefixtures("lab")

SCRATCH = {"name": "scratch", "class": "ssd", "image": "scratch.img", "size": "32MiB",
           "filesystems": ["ext4"]}


def iowatch(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_allowed_and_refused(capsys, write_inventory, data_dir, lab):
    inv = str(write_inventory([SCRATCH]))
    code, out, _ = iowatch(capsys, "device", "attach", "localhost", "--inventory", inv)
    assert code == 0
    (loop,) = loopdev.attached()
    lab.track_detach(loop.path)
    assert out == (f"scratch → {loop.path} (direct I/O on, rotational 0, "
                   f"{data_dir / 'images' / 'scratch.img'})\n")

    code, out, _ = iowatch(capsys, "device", "check", "localhost", loop.path, "--inventory", inv)
    assert code == 0 and out.startswith(f"allowed: {loop.path}: declared for host localhost as scratch")

    stranger = lab.loop("stranger.img")
    code, out, _ = iowatch(capsys, "device", "check", "localhost", stranger, "--inventory", inv)
    assert code == 1
    assert out.startswith(f"refused: {stranger}: it is a loop device over {lab.tmp_path / 'stranger.img'}")
    assert "declare it under hosts.localhost.iowatch_devices in hardware-inventory.yml" in out

    code, out, _ = iowatch(capsys, "device", "detach", "localhost", "--inventory", inv)
    assert code == 0 and out == f"scratch: detached {loop.path}\n"
    assert loopdev.attached() == []


def test_bad_inventory_unknown_host_and_usage_exit_2(capsys, write_inventory, tmp_path, monkeypatch):
    bad = dict(SCRATCH, colour="blue")
    inv = str(write_inventory([bad]))
    code, _, err = iowatch(capsys, "device", "check", "localhost", "/dev/null", "--inventory", inv)
    assert code == 2
    assert f"{inv}:" in err and "host 'localhost', device 'scratch' (entry 1), key 'colour'" in err

    good = str(write_inventory([SCRATCH]))
    code, _, err = iowatch(capsys, "device", "check", "lab9", "/dev/null", "--inventory", good)
    assert code == 2 and "has no host 'lab9' (hosts: localhost)" in err

    monkeypatch.setenv("IOWATCH_INVENTORY", good)
    code, out, _ = iowatch(capsys, "device", "check", "localhost", str(tmp_path))
    assert code == 1 and "it is a directory, not a block device" in out

    with pytest.raises(SystemExit) as usage:
        cli.main(["device", "check", "localhost"])
    assert usage.value.code == 2
