"""Device counters around a workload (iowatch.diskstats): the averages a count
gives, and a stacked device's members summed, on /proc/diskstats lines of the
kernel's format and a /sys/block tree laid out as md's."""
from __future__ import annotations

import pytest

from iowatch import diskstats

# /proc/diskstats: major minor name, then reads (ios merges sectors ticks),
# writes (ios merges sectors ticks), in flight, io ticks, time in queue.
BEFORE = """\
   9       0 md0 10 0 80 5 1000 0 8000 400 0 300 405
 253       0 vda 5 0 40 2 600 10 4000 100 0 200 102
 253      16 vdb 5 0 40 3 500 20 4000 90 0 210 93
"""
AFTER = """\
   9       0 md0 10 0 80 5 5000 0 40000 9400 0 900 9405
 253       0 vda 5 0 40 2 800 1510 20000 300 0 400 302
 253      16 vdb 5 0 40 3 700 1520 20000 290 0 410 293
"""


def by_metric(samples) -> dict[str, float]:
    return {s.metric: s.value for s in samples}


def test_a_plain_disk_gives_its_counts_and_the_size_of_a_write():
    b, a = diskstats.parse(BEFORE)["vda"], diskstats.parse(AFTER)["vda"]
    m = by_metric(diskstats.samples(b, a, 2.0, "g"))
    assert m["device.write_ios"] == 200 and m["device.write_merges"] == 1500
    assert m["device.write_kib"] == 16000 * 512 / 1024
    assert m["device.write_kib_per_io"] == pytest.approx(8000 / 200)
    assert m["device.write_iops"] == 100
    assert "device.read_kib_per_io" not in m  # no reads: no average
    assert not any(k.startswith("device.members.") for k in m)


def test_an_md_array_records_its_members_summed(tmp_path):
    for member in ("vdb", "vda"):
        (tmp_path / "md0" / "slaves" / member).mkdir(parents=True)
    (tmp_path / "vda").mkdir()
    assert diskstats.member_names("md0", tmp_path) == ["vda", "vdb"]
    assert diskstats.member_names("vda", tmp_path) == []
    before, after = diskstats.parse(BEFORE), diskstats.parse(AFTER)
    names = diskstats.member_names("md0", tmp_path)
    m = by_metric(diskstats.samples(before["md0"], after["md0"], 2.0, "g",
                                    ([before[n] for n in names], [after[n] for n in names])))
    # The array counted 4,000 bios of 4 KiB; its disks served 400 writes of 40 KiB,
    # 3,000 merged in their queues: what a plug changes shows only at the members.
    assert m["device.write_ios"] == 4000 and m["device.write_kib_per_io"] == 4
    assert m["device.members.write_ios"] == 400 and m["device.members.write_merges"] == 3000
    assert m["device.members.write_kib_per_io"] == pytest.approx(32000 * 512 / 1024 / 400)
