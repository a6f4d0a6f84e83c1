"""The lab description: the real hardware-inventory.yml loads, mistakes are refused
with the file, line, host, device and key."""
from __future__ import annotations

from pathlib import Path

import pytest

from iowatch import inventory

REPO_INVENTORY = Path(__file__).resolve().parents[2] / "hardware-inventory.yml"
GOOD = """\
all:
  children:
    local:
      hosts:
        localhost:
          ansible_connection: local
          iowatch_kind: local
          iowatch_devices:
            - name: loop-ssd
              class: ssd
              image: ssd.img
              size: 2GiB
              filesystems: [ext4, xfs]
            - name: sd0
              class: sdcard
              path: /dev/disk/by-id/mmc-SC32G_0x8a1b2c3d
              size_bytes: 31914983424
              rotational: false
              filesystems: [f2fs]
    ssd: {hosts: {localhost: {}}}
"""


def test_the_repository_inventory_loads():
    inv = inventory.load(REPO_INVENTORY)
    host = inv.host("localhost")
    assert host.kind == "local"
    assert {d.device_class for d in host.devices} == {"sdcard", "emmc", "ssd", "ssd-raid0", "hdd"}
    assert all(d.is_image and d.size_bytes == 2 * 1024**3 for d in host.devices)
    assert host.device("loop-hdd").wants_rotational and not host.device("loop-ssd").wants_rotational
    # the class groups name the host again without vars: merged, not a second host
    assert set(inv.hosts) == {"localhost", "vlab", "vlab-nullblk", "vlab-mech", "lava-qemu", "lava-qemu-b"} and "hdd" in host.groups
    # The host with mechanics: vlab's classes and driver paths, each disk behind a device model.
    mech = inv.host("vlab-mech")
    assert {d.device_class for d in mech.devices} == {"ssd", "ssd-raid0", "hdd", "sdcard", "emmc"}
    assert {d.name: d.qemu["model"] for d in mech.devices} == {
        "mssd": "ssd-860evo", "mraid0": "ssd-860evo", "mhdd": "hdd-st1000dm003",
        "msd": "sd-lexar-633x", "memmc": "emmc-seed000"}
    vlab = inv.host("vlab")
    assert vlab.kind == "qemu"
    assert {d.device_class for d in vlab.devices} == {"ssd", "ssd-raid0", "hdd", "sdcard", "emmc"}
    assert vlab.device("vraid0").members == ("/dev/vdb", "/dev/vdc")
    assert vlab.device("vhdd").qemu["throttle"] == {"iops-total": 150}
    # The latency host: one device, the guest kernel's own null_blk.
    (nullb,) = inv.host("vlab-nullblk").devices
    assert (nullb.path, nullb.device_class, nullb.qemu["bus"]) == ("/dev/nullb0", "ssd", "null_blk")


def test_inventory_path_from_environment(tmp_path, monkeypatch):
    path = tmp_path / "lab.yml"
    path.write_text(GOOD)
    monkeypatch.setenv("IOWATCH_INVENTORY", str(path))
    assert inventory.load().file == str(path)


def test_model_of_a_good_inventory():
    host = inventory.loads(GOOD, "lab.yml").host("localhost")
    sd = host.device("sd0")
    assert sd.path.startswith("/dev/disk/by-id/") and sd.partition_table == "none"
    assert sd.bundle_entry() == {"name": "sd0", "class": "sdcard", "path": sd.path, "model": None,
                                 "size_bytes": 31914983424, "rotational": False}
    assert host.vars["ansible_connection"] == "local" and host.groups == ("all", "local", "ssd")
    with pytest.raises(KeyError, match="declares no device 'nope'"):
        host.device("nope")


@pytest.mark.parametrize("size, expected", [
    ("2GiB", 2 * 1024**3), ("512 MiB", 512 * 1024**2), ("10GB", 10 * 1000**3), ("1G", 1024**3),
    (4096, 4096), ("4096", 4096)])
def test_sizes(size, expected):
    assert inventory.parse_size(size) == expected


def refused(text: str) -> inventory.Problem:
    with pytest.raises(inventory.InventoryError) as caught:
        inventory.loads(text, "lab.yml")
    assert len(caught.value.problems) == 1, caught.value
    problem = caught.value.problems[0]
    assert str(problem) in str(caught.value)
    return problem


def line_of(text: str, fragment: str) -> int:
    """The line of the last occurrence of `fragment`."""
    return [i for i, line in enumerate(text.splitlines(), 1) if fragment in line][-1]


@pytest.mark.parametrize("case, old, new, line_at, key, words", [
    ("unknown key", "              class: ssd\n", "              class: ssd\n              speed: fast\n",
     "speed: fast", "speed", "unknown key 'speed'; allowed keys: name, class"),
    ("wrong type", "size_bytes: 31914983424", "size_bytes: 32G",
     "size_bytes: 32G", "size_bytes", "'32G' is a string; expected an integer"),
    ("wrong type", "rotational: false", "rotational: maybe",
     "rotational: maybe", "rotational", "expected true or false"),
    ("missing class", "              class: sdcard\n", "",
     "- name: sd0", "class", "missing key 'class'"),
    ("bad class value", "class: sdcard", "class: sd-card",
     "class: sd-card", "class", "'sd-card' is not allowed; allowed: sdcard, emmc, ssd, ssd-raid0, hdd, nvme"),
    ("bad filesystem", "filesystems: [f2fs]", "filesystems: [f2fs, zfs]",
     "filesystems: [f2fs, zfs]", "filesystems", "'zfs' is not allowed"),
    ("image without size", "              size: 2GiB\n", "",
     "- name: loop-ssd", "size", "'size' is needed with 'image'"),
])
def test_device_mistakes_are_located(case, old, new, line_at, key, words):
    text = GOOD.replace(old, new, 1)
    assert text != GOOD
    p = refused(text)
    assert (p.file, p.line, p.host, p.key) == ("lab.yml", line_of(text, line_at), "localhost", key), case
    assert p.device is not None and ("sd0" in p.device or "loop-ssd" in p.device)
    assert words in p.message
    assert str(p).startswith(f"lab.yml:{p.line}, host 'localhost', device ")


def test_path_and_image_together_are_refused():
    text = GOOD.replace("              image: ssd.img\n",
                        "              image: ssd.img\n              path: /dev/sda\n")
    p = refused(text)
    assert p.device == "'loop-ssd' (entry 1)" and "exactly one of path" in p.message
    assert "given: path, image" in p.message


def test_members_only_for_ssd_raid0():
    text = GOOD.replace("              path: /dev/disk/by-id/mmc-SC32G_0x8a1b2c3d\n",
                        "              members: [/dev/sdb, /dev/sdc]\n")
    p = refused(text)
    assert p.key == "class" and "members are for class ssd-raid0" in p.message


def test_unknown_iowatch_host_variable():
    text = GOOD.replace("iowatch_kind: local", "iowatch_kind: local\n          iowatch_device: []")
    p = refused(text)
    assert (p.line, p.host, p.key) == (line_of(text, "iowatch_device: []"), "localhost", "iowatch_device")
    assert "unknown iowatch variable" in p.message


def test_other_host_variables_pass_through():
    text = GOOD.replace("ansible_connection: local",
                        "ansible_connection: local\n          fio_path: /usr/bin/fio")
    assert inventory.loads(text).host("localhost").vars["fio_path"] == "/usr/bin/fio"


def test_iowatch_variables_are_declared_in_one_place():
    text = GOOD.replace("ssd: {hosts: {localhost: {}}}", "ssd: {hosts: {localhost: {iowatch_kind: qemu}}}")
    p = refused(text)
    assert p.line == line_of(text, "iowatch_kind: qemu") and p.key == "iowatch_kind"
    assert f"already set on line {line_of(text, 'iowatch_kind: local')}" in p.message


@pytest.mark.parametrize("old, new, line_at, key, words", [
    ("name: sd0", "name: loop-ssd", "name: loop-ssd", "name",
     "already used by device 'loop-ssd'"),
    ("              class: ssd\n", "              class: ssd\n              class: hdd\n", "class: hdd", None,
     "key 'class' is given twice"),
    ("          iowatch_kind: local\n", "", "        localhost:", "iowatch_kind",
     "needed with 'iowatch_devices'"),
    ("ssd: {hosts:", "ssd: {host:", "ssd: {host:", "host", "a group holds only hosts, children, vars"),
])
def test_other_mistakes_are_located(old, new, line_at, key, words):
    text = GOOD.replace(old, new, 1)
    p = refused(text)
    assert (p.line, p.key) == (line_of(text, line_at), key) and words in p.message


def test_several_mistakes_are_all_reported_in_line_order():
    text = GOOD.replace("class: sdcard", "class: sd").replace("class: ssd\n", "klass: ssd\n")
    with pytest.raises(inventory.InventoryError) as caught:
        inventory.loads(text, "lab.yml")
    lines = [p.line for p in caught.value.problems]
    assert len(lines) >= 2 and lines == sorted(lines)


@pytest.mark.parametrize("text, words", [
    ("", "the inventory is empty"),
    ("all: [a\n", "not valid YAML"),
    ("- localhost\n", "expected a mapping"),
])
def test_not_an_inventory(text, words):
    assert words in str(refused(text))


def test_missing_file(tmp_path):
    with pytest.raises(inventory.InventoryError, match="cannot read the inventory"):
        inventory.load(tmp_path / "nope.yml")


NULLB = """\
all:
  children:
    virtual:
      hosts:
        lat:
          iowatch_kind: qemu
          iowatch_devices:
            - name: vnullb
              class: ssd
              path: /dev/nullb0
              filesystems: [f2fs]
              qemu: {bus: null_blk, size: 2GiB, completion_nsec: 100000}
            - name: vssd
              class: ssd
              path: /dev/vda
              filesystems: [f2fs]
              qemu: {bus: virtio-blk, size: 2GiB}
"""


@pytest.mark.parametrize("old, new, line_at, key, words", [
    ("path: /dev/nullb0", "path: /dev/vdz", "{bus: null_blk", "qemu.bus", "give it path: /dev/nullb0"),
    ("size: 2GiB, completion", "size: 1536MiB, completion", "1536MiB", "qemu.size", "whole GiB"),
    ("{bus: virtio-blk, size: 2GiB}", "{bus: virtio-blk, size: 2GiB, hw_queue_depth: 4}",
     "hw_queue_depth", "qemu.hw_queue_depth", "hw_queue_depth is a null_blk setting"),
    ("{bus: null_blk,", "{bus: nvme,", "bus: nvme", "qemu", "'nvme' is not allowed"),
    ("completion_nsec: 100000}", "completion_nsec: 100000, latency: 1}", "latency: 1", "latency",
     "unknown key 'latency'"),
])
def test_null_blk_devices_are_checked_where_the_schema_cannot(old, new, line_at, key, words):
    assert inventory.loads(NULLB, "lab.yml").host("lat").device("vnullb").qemu["completion_nsec"] == 100000
    text = NULLB.replace(old, new, 1)
    assert text != NULLB
    p = refused(text)
    assert (p.host, p.line) == ("lat", line_of(text, line_at))
    assert p.key == key and words in p.message, p


def test_the_inventorys_host_kinds_are_the_bundles_but_published():
    """A host of the inventory runs and uploads as its kind: every kind the
    inventory takes is one the bundle (and so the store) takes, and every kind
    of a bundle but "published" (a post's numbers, no host) can be described."""
    from iowatch import bundle
    taken = set(inventory.schema()["definitions"]["host"]["properties"]["iowatch_kind"]["enum"])
    sent = set(bundle.schema()["properties"]["host"]["properties"]["kind"]["enum"])
    assert taken == sent - {"published"}
