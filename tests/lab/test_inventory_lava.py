"""A LAVA lab in the inventory: a group with iowatch_lava (server, token_env) whose
hosts are board classes (iowatch_kind lava, iowatch_lava_board); mistakes are
refused with the file, line, host and key, and the token is never in the file."""
from __future__ import annotations

from pathlib import Path

import pytest

from iowatch import inventory

REPO_INVENTORY = Path(__file__).resolve().parents[2] / "hardware-inventory.yml"

LAB = """\
all:
  children:
    lava_lab:
      vars:
        iowatch_lava:
          server: https://lava.example.org/
          token_env: IOWATCH_LAVA_TOKEN
{extra_lab}      hosts:
        lava-rk3399-sd:
          iowatch_kind: lava
          iowatch_lava_board: {{device_type: rk3399-gru-kevin, tags: [sd-evo32], arch: arm64}}
          iowatch_devices:
            - name: sd0
              class: sdcard
              path: /dev/mmcblk1
              filesystems: [f2fs, ext4]
"""


def load(text: str) -> inventory.Inventory:
    return inventory.loads(text, "lab.yml")


def refused(text: str) -> list[inventory.Problem]:
    with pytest.raises(inventory.InventoryError) as e:
        load(text)
    return e.value.problems


def test_the_repository_lava_lab_loads():
    host = inventory.load(REPO_INVENTORY).host("lava-qemu")
    assert host.kind == "lava" and host.lava.device_type == "qemu"
    lab = host.lava.lab
    assert (lab.group, lab.server, lab.token_env) == ("lava_local", "http://127.0.0.1:8010/",
                                                      "IOWATCH_LAVA_TOKEN")
    assert {d.device_class: d.path for d in host.devices} == {
        "ssd": "/dev/vdb", "hdd": "/dev/sda", "sdcard": "/dev/mmcblk0"}


def test_a_board_class_names_its_lab_type_and_tags():
    host = load(LAB.format(extra_lab="")).host("lava-rk3399-sd")
    assert host.lava.lab.server == "https://lava.example.org/"
    assert (host.lava.device_type, host.lava.tags, host.lava.arch) == ("rk3399-gru-kevin", ("sd-evo32",), "arm64")
    assert host.device("sd0").path == "/dev/mmcblk1"


def test_the_token_comes_from_the_environment_named_in_the_file():
    lab = load(LAB.format(extra_lab="")).host("lava-rk3399-sd").lava.lab
    assert lab.token({"IOWATCH_LAVA_TOKEN": "s3cret\n"}) == "s3cret"
    with pytest.raises(inventory.InventoryError, match="environment variable IOWATCH_LAVA_TOKEN, which is "
                                                       "not set; export IOWATCH_LAVA_TOKEN="):
        lab.token({})


def test_a_token_written_in_the_file_is_refused():
    (p,) = refused(LAB.format(extra_lab="          token: s3cret\n"))
    assert (p.line, p.key) == (8, "iowatch_lava.token")
    assert "a LAVA token is never written in the inventory" in p.message and "token_env" in p.message


def test_a_lab_without_token_env_is_refused_naming_the_key():
    (p,) = refused(LAB.format(extra_lab="").replace("          token_env: IOWATCH_LAVA_TOKEN\n", ""))
    assert p.key == "iowatch_lava.token_env"
    assert "missing key 'token_env'; a LAVA lab (iowatch_lava) needs server, token_env" in p.message


def test_a_server_that_is_not_a_url_is_refused():
    (p,) = refused(LAB.format(extra_lab="").replace("https://lava.example.org/", "lava.example.org"))
    assert (p.line, p.key) == (6, "iowatch_lava.server") and "the LAVA server's URL" in p.message


def test_a_lava_host_without_its_board_is_refused():
    text = LAB.format(extra_lab="").replace(
        "          iowatch_lava_board: {device_type: rk3399-gru-kevin, tags: [sd-evo32], arch: arm64}\n", "")
    (p,) = refused(text)
    assert (p.host, p.key) == ("lava-rk3399-sd", "iowatch_lava_board")
    assert "a host of iowatch_kind lava needs iowatch_lava_board" in p.message


def test_a_board_without_device_type_is_refused():
    (p,) = refused(LAB.format(extra_lab="").replace("device_type: rk3399-gru-kevin, ", ""))
    assert p.key == "iowatch_lava_board.device_type" and p.line == 11


def test_a_lava_host_outside_a_lab_is_refused():
    text = LAB.format(extra_lab="").replace("      vars:\n        iowatch_lava:\n"
                                            "          server: https://lava.example.org/\n"
                                            "          token_env: IOWATCH_LAVA_TOKEN\n", "")
    (p,) = refused(text)
    assert (p.host, p.key, p.line) == ("lava-rk3399-sd", "iowatch_kind", 6)
    assert "under a group whose vars set iowatch_lava" in p.message


def test_a_board_device_is_a_path_on_the_board_not_an_image():
    text = LAB.format(extra_lab="").replace("path: /dev/mmcblk1", "image: sd.img\n              size: 1GiB")
    (p,) = refused(text)
    assert (p.key, p.device) == ("image", "'sd0'") and "give path" in p.message


def test_other_iowatch_group_variables_are_still_refused():
    text = LAB.format(extra_lab="").replace("      vars:\n", "      vars:\n        iowatch_devices: []\n")
    (p,) = refused(text)
    assert p.key == "iowatch_devices" and "a group takes only iowatch_lava" in p.message
