"""Preconditioning for real: a study that asks for it, run by the runner with
real fio on a loop device, and the bundle's record of the device's state.

Each test has its own IOWATCH_DATA_DIR under tmp_path (the loop_devices
fixture), which detaches its loop devices even when the test fails.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from iowatch import bundle, inventory, precondition
from iowatch.runner import Runner
from iowatch.studies import Precondition, load_matrix
from loop_devices import data_dir, loops_over  # noqa: F401 (data_dir: a fixture)

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (losetup, mkfs, mount)"),
    pytest.mark.skipif(not shutil.which("fio"), reason="fio is not installed"),
]

INVENTORY = """\
all:
  children:
    local:
      hosts:
        localhost:
          iowatch_kind: local
          iowatch_devices:
            - name: loop-ssd
              class: ssd
              image: ssd.img
              size: 256MiB
              model: loop device over an image file (direct I/O), stands in for an SSD
              rotational: false
              filesystems: [ext4, raw]
            - name: loop-hdd
              class: hdd
              image: hdd.img
              size: 256MiB
              rotational: true
              filesystems: [ext4, raw]
"""

# Short rounds on a small device: steady state is judged over 3 one-second rounds.
PRECONDITION = {"fill": 1, "rounds_max": 6, "window": 3, "round_s": 1, "iodepth": 8,
                "slope_pct_max": 10, "excursion_pct_max": 20}


def study_with_precondition(tmp_path: Path) -> Path:
    """ext4-dio-randread, on ssd and hdd, with a precondition and a small quick profile."""
    data = yaml.safe_load((ROOT / "jobs/studies/ext4-dio-randread.yml").read_text())
    data["device_classes"] = ["ssd", "hdd"]
    data["precondition"] = PRECONDITION
    data["profiles"]["quick"]["global"].update({"size": "64M", "runtime": 1, "numjobs": 2})
    for p in data["published"]:
        p["device_class"] = "ssd"
    path = tmp_path / "studies" / "ext4-dio-randread.yml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_the_runner_preconditions_an_ssd_once_and_records_the_devices_state(tmp_path, data_dir):
    (tmp_path / "inventory.yml").write_text(INVENTORY)
    host = inventory.load(tmp_path / "inventory.yml").host("localhost")
    matrix = load_matrix(study_with_precondition(tmp_path))
    out = tmp_path / "bundle"
    doc = Runner(matrix, host, out, reps=1, data_dir=data_dir).run()
    assert doc["status"] == "passed", [c.get("reason") for c in doc["cells"]]
    doc = bundle.load(out)  # the schema holds the new fields
    devices = doc["environment"]["devices"]

    pre = devices["loop-ssd"]["precondition"]["ext4-dio-randread"]  # once, before ext4 and raw
    assert pre["settings"]["window"] == 3 and pre["fill_s"] > 0
    rounds = pre["rounds_iops"]
    assert 3 <= len(rounds) <= 6 and all(x > 0 for x in rounds)
    state = pre["steady_state"]
    assert state["rounds"] == len(rounds) and state["held"] == pre["held"]
    # It stopped at the first steady window, or ran every round it may.
    assert pre["held"] or len(rounds) == 6
    if pre["held"]:
        assert state["slope_excursion_pct"] <= 10 and state["data_excursion_pct"] <= 20
    # An hdd is never preconditioned, whatever the study asks.
    assert "precondition" not in devices["loop-hdd"]

    # A loop device reports no state, before or after, and says so.
    for name in ("loop-ssd", "loop-hdd"):
        assert devices[name]["state"]["status"] == "nothing"
        assert devices[name]["state_after"]["kind"] == "loop"
        assert devices[name]["scheduler"]  # the repetition's own notes are kept beside it
    assert loops_over(data_dir) == []


def test_a_failing_fio_is_recorded_not_raised(tmp_path):
    missing = str(tmp_path / "no-such-device")
    record = precondition.run(missing, Precondition(rounds_max=3, window=2, fill=0, round_s=1))
    assert record["held"] is False and record["rounds_iops"] == []
    assert record["error"].startswith("round 1: fio exited")


def test_precondition_applies_to_ssd_classes_only():
    pre = Precondition(rounds_max=3, window=2)
    assert [c for c in ("sdcard", "emmc", "ssd", "ssd-raid0", "hdd", "nvme")
            if precondition.applies(c, pre)] == ["ssd", "ssd-raid0", "nvme"]
    assert not precondition.applies("ssd", None)


def test_a_resumed_run_preconditions_again_and_keeps_the_earlier_record(tmp_path, data_dir):
    """A run stopped after its ext4 cell and resumed: the raw cell's part of the
    run preconditions the SSD again (an idle SSD recovers from its steady
    state), keeps the first record under before_resume, and the device's state
    at the run's start stays the run's."""
    (tmp_path / "inventory.yml").write_text(INVENTORY)
    host = inventory.load(tmp_path / "inventory.yml").host("localhost")
    matrix = load_matrix(study_with_precondition(tmp_path))
    out = tmp_path / "bundle"
    first = Runner(matrix, host, out, reps=1, data_dir=data_dir,
                   only={"ext4-dio-randread/loop-ssd/ext4"}).run()
    before = first["environment"]["devices"]["loop-ssd"]
    # As a run stopped there leaves it: incomplete, the other cells to do.
    doc = bundle.load(out)
    doc["status"] = "incomplete"
    bundle.write_manifest(out, doc)

    doc = Runner(matrix, host, out, reps=1, data_dir=data_dir).run()
    assert doc["status"] == "passed" and doc["run_id"] == first["run_id"]
    ssd = bundle.load(out)["environment"]["devices"]["loop-ssd"]
    again = ssd["precondition"]["ext4-dio-randread"]
    assert again["before_resume"] == before["precondition"]["ext4-dio-randread"]
    assert again["rounds_iops"] and again is not before["precondition"]["ext4-dio-randread"]
    assert ssd["state"] == before["state"]
    assert {c["id"] for c in doc["cells"]} >= {"ext4-dio-randread/loop-ssd/ext4",
                                              "ext4-dio-randread/loop-ssd/raw"}
    assert loops_over(data_dir) == []
