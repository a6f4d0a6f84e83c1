"""A difference in the device's state between the sides of an A/B is a confounder
(iowatch.stats.confounders), on states parsed from the captured fixtures."""
from __future__ import annotations

import copy
from pathlib import Path

from iowatch.devstate import parse_mmc_sysfs, parse_smartctl, read_members
from iowatch.stats.confounders import TEMPERATURE_BOUND_C, WEAR_BOUND_PCT, confounders

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "devstate"


def smart(name: str) -> dict:
    return parse_smartctl((FIXTURES / name).read_text(), name)


def emmc(**changed: str) -> dict:
    attrs = {p.name: p.read_text() for p in (FIXTURES / "emmc-kernel-formats").iterdir()}
    return parse_mmc_sysfs({**attrs, **changed})


def run_on(state: dict, after: dict | None = None, device: str = "dut") -> dict:
    """A bundle manifest's shape, as much of it as confounders reads."""
    seen = {"scheduler": "none", "state": state}
    if after is not None:
        seen["state_after"] = after
    return {"devices": [{"name": device, "class": "ssd"}], "environment": {"devices": {device: seen}}}


def names(found) -> list[str]:
    return [c.name for c in found]


def test_the_same_device_in_the_same_state_is_no_confounder():
    nvme = smart("smartctl-nvme-qemu.json")
    assert confounders(run_on(nvme, nvme), run_on(copy.deepcopy(nvme), copy.deepcopy(nvme))) == []


def test_a_firmware_update_between_the_sides():
    found = confounders(run_on(smart("smartctl-sata-qemu-fw-a.json")),
                        run_on(smart("smartctl-sata-qemu-fw-b.json")))
    assert names(found) == ["dut firmware"]
    (c,) = found
    assert (c.base, c.candidate) == ("FW-A", "FW-B") and "firmware changed" in c.why


def test_a_different_serial_is_a_different_device_and_says_only_that():
    a = smart("smartctl-nvme-qemu.json")
    b = {**a, "serial": "IOWATCH-NVME1", "firmware": "other", "wear_pct": 40}
    found = confounders(run_on(a), run_on(b))
    assert names(found) == ["dut serial"] and "a different device" in found[0].why


def test_wear_moved_beyond_the_bound():
    a = smart("smartctl-nvme-qemu.json")
    assert confounders(run_on(a), run_on({**a, "wear_pct": a["wear_pct"] + WEAR_BOUND_PCT})) == []
    found = confounders(run_on(a), run_on({**a, "wear_pct": a["wear_pct"] + WEAR_BOUND_PCT + 1}))
    assert names(found) == ["dut wear"] and f"more than {WEAR_BOUND_PCT} points" in found[0].why


def test_emmc_life_time_estimates_a_step_apart_are_a_wear_confounder():
    found = confounders(run_on(emmc()), run_on(emmc(life_time="0x03 0x01\n")))
    assert names(found) == ["dut wear"]
    assert (found[0].base, found[0].candidate) == ("20% used", "30% used")
    end_of_life = confounders(run_on(emmc()), run_on(emmc(pre_eol_info="0x02\n")))
    assert names(end_of_life) == ["dut health"]


def test_temperature_before_and_after_the_run_beyond_the_bound():
    a = smart("smartctl-nvme-qemu.json")
    warm = {**a, "temperature_c": a["temperature_c"] + TEMPERATURE_BOUND_C}
    hot = {**a, "temperature_c": a["temperature_c"] + TEMPERATURE_BOUND_C + 5}
    assert confounders(run_on(a, a), run_on(warm, warm)) == []
    found = confounders(run_on(a, a), run_on(a, hot))
    assert names(found) == ["dut temperature after the run"]
    assert "throttles" in found[0].why


def test_devices_that_report_nothing_or_could_not_be_read_are_no_confounders():
    nothing = {"status": "nothing", "kind": "loop", "note": "loop device"}
    unreadable = smart("smartctl-virtio-qemu.json")
    assert confounders(run_on(nothing), run_on(smart("smartctl-nvme-qemu.json"))) == []
    assert confounders(run_on(unreadable), run_on(smart("smartctl-nvme-qemu.json"))) == []
    # A bundle from before device state (no `state` at all) is no confounder either.
    old = {"devices": [{"name": "dut"}], "environment": {"devices": {"dut": {"scheduler": "none"}}}}
    assert confounders(old, run_on(smart("smartctl-nvme-qemu.json"))) == []


def test_an_md_arrays_members_are_compared_one_by_one():
    a, b = smart("smartctl-sata-qemu-fw-a.json"), smart("smartctl-sata-qemu-fw-b.json")
    base = read_members([])
    base["members"] = {"/dev/disk/by-id/ata-1": a, "/dev/disk/by-id/ata-2": a}
    cand = copy.deepcopy(base)
    cand["members"]["/dev/disk/by-id/ata-2"] = b
    assert names(confounders(run_on(base), run_on(cand))) == ["dut member 1 firmware"]
