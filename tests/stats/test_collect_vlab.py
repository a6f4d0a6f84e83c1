"""bench/accuracy/collect_vlab.py without a guest: the throttled inventories it boots
with go through iowatch's own inventory loader and QEMU arguments, and the share of
the noise between boots is the one-way ANOVA estimate."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "accuracy"))

import collect_vlab  # noqa: E402
from iowatch import inventory, vlab  # noqa: E402


@pytest.fixture
def collector(tmp_path, monkeypatch):
    monkeypatch.setattr(collect_vlab, "_bzimage", lambda p: p)
    args = argparse.Namespace(kernel=str(tmp_path / "bzImage"), work=str(tmp_path / "work"),
                              reps_per_boot=2, matrix="ssd-hdd", conditions=list(collect_vlab.CONDITIONS))
    return collect_vlab.VlabCollector(args)


def test_the_classes_matrix_boots_a_disk_of_each_class_it_runs(tmp_path, monkeypatch):
    """The recorded boots' matrix: the sd card, the ssd and the hdd in one boot,
    each cut to the filesystems the matrix runs on it, and the canary."""
    monkeypatch.setattr(collect_vlab, "_bzimage", lambda p: p)
    args = argparse.Namespace(kernel=str(tmp_path / "bzImage"), work=str(tmp_path / "work"),
                              reps_per_boot=3, matrix="classes", conditions=["aa"])
    c = collect_vlab.VlabCollector(args)
    host = inventory.load(c._inventory("aa")).host("vlab")
    assert sorted((d.device_class, d.filesystems) for d in host.devices) == [
        ("hdd", ("ext4",)), ("sdcard", ("f2fs",)), ("ssd", ("raw",))]
    assert c.conditions == ["aa"] and "canary-tmpfs-read" in c.declared


def test_a_condition_adds_its_throttles_to_the_inventorys_own(collector, tmp_path):
    collector.rules["slow20"] = {"vssd": {"iops-read": 24000}, "vhdd": {"iops-write": 61}}
    aa = inventory.load(collector._inventory("aa")).host("vlab")
    slow = inventory.load(collector._inventory("slow20")).host("vlab")
    assert [d.name for d in aa.devices] == ["vssd", "vhdd"]
    assert aa.device("vssd").filesystems == ("ext4", "raw")
    assert "throttle" not in aa.device("vssd").qemu
    # The inventory's own 150 IOPS, split: QEMU takes no total beside a read or write limit.
    assert aa.device("vhdd").qemu["throttle"] == {"iops-read": 150, "iops-write": 150}
    assert slow.device("vhdd").qemu["throttle"] == {"iops-read": 150, "iops-write": 61}
    collector.rules["slow10"] = {"vhdd": {"iops-write": 400}}   # never above the inventory's own
    assert inventory.load(collector._inventory("slow10")).host("vlab").device("vhdd").qemu[
        "throttle"] == {"iops-read": 150, "iops-write": 150}
    argv = " ".join(vlab.qemu_device_args(slow, tmp_path / "disks"))
    assert "id=iow-vssd,format=raw,cache=none,aio=threads,throttling.iops-read=24000" in argv
    assert "throttling.iops-read=150,throttling.iops-write=61" in argv
    # The matrix the guest runs is in the shared work directory, beside the studies.
    assert (collector.matrix.parent / "studies" / "ext4-dio-randread.yml").is_file()


def test_between_boot_share():
    share = collect_vlab.between_boot_share
    # Boots far apart, repetitions inside each nearly equal: almost all between boots.
    assert share([1.0, 1.1, 2.0, 2.1, 3.0, 3.1], [0, 0, 1, 1, 2, 2]) > 0.99
    # Boots with the same mean: nothing between them.
    assert share([1.0, 2.0, 1.0, 2.0], [0, 0, 1, 1]) == 0.0
    # One repetition a boot, or one boot: it cannot be told.
    assert share([1.0, 2.0, 3.0], [0, 1, 2]) is None
    assert share([1.0, 2.0], [0, 0]) is None
