"""The device-state readers on real tool output (tests/fixtures/devstate/README.md
says how each fixture was made), and the thin readers' refusals recorded, not raised."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from iowatch import devstate
from iowatch.devstate import DeviceStateError, parse_extcsd, parse_mmc_sysfs, parse_smartctl

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "devstate"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def sysfs_dir(name: str) -> dict[str, str]:
    return {p.name: p.read_text() for p in (FIXTURES / name).iterdir()}


# --- smartctl ----------------------------------------------------------------

def test_nvme_smart_log_gives_wear_temperature_spare_media_errors_and_firmware():
    s = parse_smartctl(fixture("smartctl-nvme-qemu.json"), "/dev/nvme0n1")
    assert s["status"] == "read" and s["kind"] == "nvme" and s["source"] == "smartctl"
    assert s["serial"] == "IOWATCH-NVME0" and s["model"].startswith("QEMU NVMe")
    assert s["firmware"]  # QEMU's version stands in for the firmware revision
    assert s["wear_pct"] == 0 and s["wear_source"] == "NVMe percentage_used"
    assert isinstance(s["temperature_c"], int)
    assert s["health"] == "passed"
    assert {"available_spare", "media_errors", "critical_warning"} <= set(s["details"])


def test_ata_smart_of_the_two_firmware_revisions():
    a = parse_smartctl(fixture("smartctl-sata-qemu-fw-a.json"), "/dev/sda")
    b = parse_smartctl(fixture("smartctl-sata-qemu-fw-b.json"), "/dev/sdb")
    assert a["status"] == b["status"] == "read" and a["kind"] == "ata"
    assert (a["firmware"], b["firmware"]) == ("FW-A", "FW-B")
    assert a["serial"] == b["serial"] == "IOWATCH-SATA0" and a["model"] == "QEMU-SATA-SSD"
    assert a["health"] == "passed"
    # QEMU's IDE SMART table: power-on hours, reallocated sectors, temperature.
    assert "power_on_hours" in a and "temperature_c" in a
    assert a["details"]["reallocated_sectors"] == 0
    assert "attributes" in a["details"]


@pytest.mark.parametrize("name", ["smartctl-loop-host.json", "smartctl-virtio-host.json",
                                  "smartctl-virtio-qemu.json"])
def test_a_device_smartctl_cannot_read_is_unavailable_with_smartctls_own_words(name):
    s = parse_smartctl(fixture(name), "dev")
    assert s["status"] == "unavailable" and "Unable to detect device type" in s["note"]


def test_wear_from_an_ata_life_left_attribute():
    doc = json.loads(fixture("smartctl-sata-qemu-fw-a.json"))
    # An Intel-style SSD's Media_Wearout_Indicator (normalized 100 new .. 1 worn),
    # added to the captured table: QEMU's disk has no wear attribute.
    doc["ata_smart_attributes"]["table"].append(
        {"id": 233, "name": "Media_Wearout_Indicator", "value": 93, "worst": 93, "thresh": 0,
         "raw": {"value": 0, "string": "0"}})
    s = parse_smartctl(json.dumps(doc))
    assert s["wear_pct"] == 7 and "233 Media_Wearout_Indicator" in s["wear_source"]


def test_a_normalized_value_above_100_is_no_wear_figure():
    doc = json.loads(fixture("smartctl-sata-qemu-fw-a.json"))
    # Some vendors count Wear_Leveling_Count from 200 or 253: not a life-left percentage.
    doc["ata_smart_attributes"]["table"].append(
        {"id": 177, "name": "Wear_Leveling_Count", "value": 253, "worst": 253, "thresh": 0,
         "raw": {"value": 12, "string": "12"}})
    assert "wear_pct" not in parse_smartctl(json.dumps(doc))


def test_smartctl_output_that_is_not_smartctl_json_names_the_device():
    with pytest.raises(DeviceStateError, match=r"/dev/sdz: smartctl's output is not JSON"):
        parse_smartctl("smartctl 7.3\nPlease specify device type with the -d option.\n", "/dev/sdz")
    with pytest.raises(DeviceStateError, match=r"/dev/sdz: smartctl's JSON has no 'smartctl' object"):
        parse_smartctl('{"device": {}}', "/dev/sdz")


# --- the MMC core's sysfs: SD ------------------------------------------------

def test_sd_card_registers_from_sysfs():
    s = parse_mmc_sysfs(sysfs_dir("sd-qemu-sysfs"), "mmcblk0")
    assert s["status"] == "read" and s["kind"] == "sd" and s["source"] == "sysfs"
    regs = s["details"]
    assert {"cid", "csd", "scr", "manfid", "oemid", "date", "serial", "name"} <= set(regs)
    assert re.fullmatch(r"[0-9a-f]{32}", regs["cid"]) and re.fullmatch(r"[0-9a-f]{32}", regs["csd"])
    assert s["firmware"] == regs["fwrev"] and s["serial"] == regs["serial"]
    assert "wear_pct" not in s and "temperature_c" not in s  # an SD card reports neither


def test_mmc_extcsd_refuses_an_sd_card_and_the_sysfs_record_stands(tmp_path):
    # The captured refusal: an SD card has no EXT_CSD.
    with pytest.raises(DeviceStateError, match="printed no EXT_CSD fields"):
        parse_extcsd(fixture("mmc-extcsd-sd-qemu.txt"), "/dev/mmcblk0")


# --- the MMC core's sysfs: eMMC (formats from the kernel, not captured) -------

def test_emmc_life_time_and_pre_eol_from_sysfs():
    s = parse_mmc_sysfs(sysfs_dir("emmc-kernel-formats"), "mmcblk0")
    assert s["kind"] == "emmc" and s["health"] == "normal"
    assert s["details"]["life_time_a"] == "10-20% used" and s["details"]["life_time_b"] == "0-10% used"
    assert s["wear_pct"] == 20 and "life time estimate" in s["wear_source"]
    assert s["firmware"] == "0x0300000000000000" and s["model"] == "IW16G"


def test_emmc_end_of_life_codes():
    attrs = {**sysfs_dir("emmc-kernel-formats"), "life_time": "0x0b 0x0a\n", "pre_eol_info": "0x03\n"}
    s = parse_mmc_sysfs(attrs)
    assert s["wear_pct"] == 100 and s["health"] == "urgent"
    assert s["details"]["life_time_a"] == "exceeded its rated life"


def test_bad_mmc_attributes_name_the_device_and_field():
    attrs = sysfs_dir("emmc-kernel-formats")
    with pytest.raises(DeviceStateError, match=r"/sys/block/mmcblk1/device: sysfs life_time is '0x02', expected two codes"):
        parse_mmc_sysfs({**attrs, "life_time": "0x02\n"}, "/sys/block/mmcblk1/device")
    with pytest.raises(DeviceStateError, match=r"pre_eol_info is 'normal', not a hex code"):
        parse_mmc_sysfs({**attrs, "pre_eol_info": "normal\n"}, "/sys/block/mmcblk1/device")
    with pytest.raises(DeviceStateError, match=r"sysfs 'type' is 'SDIO'"):
        parse_mmc_sysfs({"type": "SDIO"}, "mmc0")


def mmc_utils_formats() -> list[bytes]:
    """The printf formats of mmc-utils' EXT_CSD lines, from the installed binary."""
    binary = Path(shutil.which("mmc")).read_bytes()
    return re.findall(rb"(?:Extended CSD rev 1\.%d \(MMC %s\)|eMMC [A-Za-z ]+ \[EXT_CSD_\w+\]: 0x%02x)",
                      binary)


@pytest.mark.skipif(not shutil.which("mmc"), reason="mmc-utils is not installed")
def test_extcsd_lines_in_mmc_utils_own_formats():
    formats = mmc_utils_formats()
    assert len(formats) >= 4, formats
    values = {b"A [": 0x03, b"B [": 0x02, b"Pre EOL": 0x02}
    lines = []
    for f in formats:
        if b"%s" in f:
            lines.append((f.decode() % (8, "5.1")))
        else:
            code = next(v for k, v in values.items() if k in f)
            lines.append(f.decode() % code)
    s = parse_extcsd("\n".join(lines))
    assert s["wear_pct"] == 30 and s["health"] == "warning"
    assert s["details"]["ext_csd_rev"] == "MMC 5.1 (EXT_CSD rev 1.8)"
    assert s["details"]["life_time_b"] == "10-20% used"


# --- the thin readers: never an exception into a run ---------------------------

def test_devices_with_no_state_say_so():
    assert devstate.read("/dev/loop7")["status"] == "nothing"
    assert devstate.read("/dev/vdb") == {"status": "nothing", "kind": "virtio",
                                         "note": "virtio-blk keeps no health, wear or temperature"}
    md = devstate.read_members(["/dev/loop5", "/dev/loop6"])
    assert md["kind"] == "md" and set(md["members"]) == {"/dev/loop5", "/dev/loop6"}


def test_a_missing_smartctl_is_recorded(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    s = devstate.read("/dev/sdq")
    assert s == {"status": "unavailable", "source": "smartctl", "note": "smartctl is not installed"}


@pytest.mark.skipif(not shutil.which("smartctl"), reason="smartmontools is not installed")
def test_smartctl_refusing_a_device_is_recorded_not_raised():
    # smartctl itself on a block device it cannot type (the host's zram or a
    # virtio disk): its own error message, status unavailable.
    s = devstate.read_smartctl("/dev/null")
    assert s["status"] == "unavailable" and s["note"]


def test_the_sysfs_reader_alone_reads_an_emmc(tmp_path, monkeypatch):
    dev = tmp_path / "block" / "mmcblk2" / "device"
    shutil.copytree(FIXTURES / "emmc-kernel-formats", dev)
    s = devstate.read("/dev/mmcblk2p1", sys_root=tmp_path)  # a partition: its disk's state
    assert s["kind"] == "emmc" and s["wear_pct"] == 20 and s["source"].startswith("sysfs")
    # Without mmc-utils the record is sysfs's, with a note.
    with monkeypatch.context() as m:
        m.setenv("PATH", "/nonexistent")
        s = devstate.read_mmc("mmcblk2", "/dev/mmcblk2", sys_root=tmp_path)
    assert s["source"] == "sysfs" and s["wear_pct"] == 20
    assert s["note"] == "sysfs only: mmc is not installed"


@pytest.mark.skipif(not shutil.which("mmc"), reason="mmc-utils is not installed")
def test_mmc_utils_refusing_the_device_leaves_the_sysfs_record(tmp_path):
    dev = tmp_path / "block" / "mmcblk2" / "device"
    shutil.copytree(FIXTURES / "emmc-kernel-formats", dev)
    # The real mmc on a device that is no MMC card: it refuses, sysfs stands.
    s = devstate.read_mmc("mmcblk2", "/dev/null", sys_root=tmp_path)
    assert s["source"] == "sysfs" and s["note"].startswith("sysfs only: mmc extcsd read exited")
    assert s["wear_pct"] == 20


def test_the_page_words_for_each_status():
    nvme = devstate.shown(parse_smartctl(fixture("smartctl-nvme-qemu.json")))
    assert nvme["wear"] == "0%" and nvme["temperature"].endswith("°C") and nvme["health"] == "passed"
    emmc = devstate.shown(parse_mmc_sysfs(sysfs_dir("emmc-kernel-formats")))
    assert emmc["wear"] == "A 10-20% used, B 0-10% used" and emmc["health"] == "normal"
    assert devstate.shown(devstate.read("/dev/loop1"))["status"].startswith("nothing: loop device")
    assert devstate.shown(None)["status"] == "not recorded"


def test_iowatch_device_state_prints_the_record(capsys):
    from iowatch import cli

    assert cli.main(["device", "state", "/dev/loop3"]) == 0
    assert capsys.readouterr().out == "/dev/loop3: nothing: loop device: a file stands in for the device\n"
    assert cli.main(["device", "state", "--json", "/dev/vdc"]) == 0
    assert json.loads(capsys.readouterr().out)["kind"] == "virtio"
    if shutil.which("smartctl"):
        assert cli.main(["device", "state", "/dev/null"]) == 1  # smartctl refuses it
        assert capsys.readouterr().out.startswith("/dev/null: unavailable: ")
