"""What the device under test reports about itself: firmware, wear, temperature, health.

Read per device before a run and again after it (the temperature after a run
is worth having), and kept in the bundle at environment.devices.<name>.state
and .state_after (docs/device-state.md). Two sides of an A/B whose devices
report different states have a confounder (iowatch.stats.confounders).

Each reader is a pure parse function of the tool's text (smartctl's JSON,
`mmc extcsd read`, the MMC core's sysfs attributes) and a thin function that
runs the tool or reads the files. A missing tool, a refused device or output
that does not parse is recorded as such (status "unavailable" with a note); a
device that keeps no state (a loop device, virtio-blk, an md array itself)
is recorded plainly (status "nothing"). Nothing here raises into a run.

The record, the same for every device class (fields it cannot fill are left out):
  status        "read", "nothing" or "unavailable"
  source        what was read: smartctl, sysfs, "sysfs, mmc extcsd"
  kind          ata, nvme, scsi, emmc, sd, loop, virtio, md, ...
  note          why nothing or why unavailable
  model, serial, firmware
  temperature_c the current temperature
  wear_pct      how much of the rated life is used, 0 new .. 100 worn out
  wear_source   where wear_pct comes from (a SMART attribute, a life time estimate)
  power_on_hours
  health        passed / failed (SMART), normal / warning / urgent (eMMC pre-EOL)
  details       the class's own fields (SMART attributes, the SD card's registers, ...)
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

READ, NOTHING, UNAVAILABLE = "read", "nothing", "unavailable"
SYS = Path("/sys")
TOOL_TIMEOUT_S = 60

# Block devices with no hardware of their own behind them: nothing to ask.
_NO_STATE = (("loop", "loop device: a file stands in for the device"),
             ("nullb", "null_blk: no device behind it"),
             ("ram", "RAM disk: no device behind it"),
             ("zram", "compressed RAM disk: no device behind it"),
             ("dm-", "device-mapper target: its state is its underlying devices'"),
             ("md", "md array: its state is its members'"),
             ("vd", "virtio-blk keeps no health, wear or temperature"))

# ATA SMART attributes whose normalized value counts the life left from 100
# down (vendors differ in the name, not in the meaning): wear_pct = 100 - value.
_ATA_LIFE_LEFT = {233: "Media_Wearout_Indicator", 231: "SSD_Life_Left",
                  177: "Wear_Leveling_Count", 202: "Percent_Lifetime_Remain"}
_ATA_REALLOCATED = 5
_ATA_TEMPERATURE = (194, 190)

# JEDEC JESD84-B51 (eMMC 5.1) EXT_CSD[268/269] DEVICE_LIFE_TIME_EST_TYP_A/B:
# 0x01..0x0A = 0-10% .. 90-100% of the rated life used, 0x0B = exceeded.
# EXT_CSD[267] PRE_EOL_INFO: reserved blocks consumed.
_PRE_EOL = {1: "normal", 2: "warning", 3: "urgent"}
# The MMC core's attributes (Documentation/driver-api/mmc/mmc-dev-attrs.rst)
# that this record keeps, for eMMC and SD alike; the SD card keeps its raw
# registers too (cid, csd, scr, ssr).
_MMC_ATTRS = ("type", "name", "manfid", "oemid", "date", "fwrev", "hwrev", "serial",
              "cid", "csd", "scr", "ssr", "life_time", "pre_eol_info", "prv", "rev")


class DeviceStateError(ValueError):
    """Tool output this module cannot read; the message names the device and field."""


def _clean(record: dict) -> dict:
    return {k: v for k, v in record.items() if v not in (None, {}, "")}


def nothing(kind: str, note: str) -> dict:
    return {"status": NOTHING, "kind": kind, "note": note}


def unavailable(source: str, note: str, kind: str | None = None) -> dict:
    return _clean({"status": UNAVAILABLE, "source": source, "kind": kind, "note": note})


# --- smartctl (SATA, SAS, NVMe) ------------------------------------------------

def parse_smartctl(text: str, device: str = "device") -> dict:
    """smartctl -j -a's JSON (smartmontools 7.x) as the state record."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise DeviceStateError(f"{device}: smartctl's output is not JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("smartctl"), dict):
        raise DeviceStateError(f"{device}: smartctl's JSON has no 'smartctl' object "
                               "(is this smartctl -j output, smartmontools 7 or later?)")
    status = doc["smartctl"].get("exit_status", 0)
    errors = [m.get("string", "") for m in doc["smartctl"].get("messages") or []
              if m.get("severity") == "error"]
    # Exit status bits 0 and 1: the command line or the device open failed, so
    # nothing was read (the other bits report what was read).
    if status & 0b11 or "device" not in doc:
        return unavailable("smartctl", "; ".join(errors) or f"smartctl exit status {status}")
    protocol = (doc["device"].get("protocol") or "").lower()
    record = {"status": READ, "source": "smartctl", "kind": protocol or None,
              "model": doc.get("model_name") or doc.get("scsi_model_name"),
              "serial": doc.get("serial_number"),
              "firmware": doc.get("firmware_version") or doc.get("scsi_revision"),
              "temperature_c": (doc.get("temperature") or {}).get("current"),
              "power_on_hours": (doc.get("power_on_time") or {}).get("hours")}
    passed = (doc.get("smart_status") or {}).get("passed")
    record["health"] = None if passed is None else ("passed" if passed else "failed")
    if protocol == "nvme":
        record.update(_nvme(doc, device))
    elif protocol == "ata":
        record.update(_ata(doc, record))
    elif "scsi_percentage_used_endurance_indicator" in doc:
        record["wear_pct"] = doc["scsi_percentage_used_endurance_indicator"]
        record["wear_source"] = "SCSI percentage used endurance indicator"
    if errors:
        record["note"] = "; ".join(errors)
    return _clean(record)


def _nvme(doc: dict, device: str) -> dict:
    log = doc.get("nvme_smart_health_information_log")
    if not isinstance(log, dict):
        return {"note": "no NVMe SMART/health log in smartctl's output"}
    return {"wear_pct": log.get("percentage_used"),
            "wear_source": "NVMe percentage_used" if "percentage_used" in log else None,
            "temperature_c": (doc.get("temperature") or {}).get("current", log.get("temperature")),
            "power_on_hours": (doc.get("power_on_time") or {}).get("hours", log.get("power_on_hours")),
            "details": _clean({k: log.get(k) for k in (
                "critical_warning", "available_spare", "available_spare_threshold",
                "media_errors", "num_err_log_entries", "unsafe_shutdowns",
                "data_units_written", "data_units_read")})}


def _ata(doc: dict, record: dict) -> dict:
    table = (doc.get("ata_smart_attributes") or {}).get("table") or []
    attrs = {a["id"]: a for a in table if isinstance(a, dict) and "id" in a}
    out: dict = {}
    details: dict = {}
    for aid, name in _ATA_LIFE_LEFT.items():
        # Some vendors' normalized values run above 100 (to 200 or 253): not a life-left count.
        if aid in attrs and isinstance(attrs[aid].get("value"), int) and 0 <= attrs[aid]["value"] <= 100:
            out["wear_pct"] = 100 - attrs[aid]["value"]
            out["wear_source"] = f"ATA attribute {aid} {attrs[aid].get('name', name)} (100 - normalized value)"
            break
    # ATA device statistics (smartctl -x or -l devstat) carry the standard's own indicator.
    for page in (doc.get("ata_device_statistics") or {}).get("pages") or []:
        for entry in page.get("table") or []:
            if entry.get("name") == "Percentage Used Endurance Indicator" and "value" in entry:
                out["wear_pct"] = entry["value"]
                out["wear_source"] = "ATA device statistics: Percentage Used Endurance Indicator"
    if _ATA_REALLOCATED in attrs:
        details["reallocated_sectors"] = (attrs[_ATA_REALLOCATED].get("raw") or {}).get("value")
    if record.get("temperature_c") is None:
        for aid in _ATA_TEMPERATURE:
            raw = (attrs.get(aid, {}).get("raw") or {}).get("value")
            if isinstance(raw, int):
                out["temperature_c"] = raw & 0xFF  # the low byte; vendors pack min/max above it
                break
    details["attributes"] = {str(a["id"]): {"name": a.get("name"), "value": a.get("value"),
                                            "raw": (a.get("raw") or {}).get("string")}
                             for a in attrs.values()}
    out["details"] = _clean(details)
    return out


# --- the MMC core's sysfs (eMMC, SD) and mmc extcsd ---------------------------

def _code(text: str | None, device: str, field: str) -> int | None:
    if text is None or not text.strip():
        return None
    try:
        return int(text.strip(), 16)
    except ValueError:
        raise DeviceStateError(f"{device}: {field} is {text.strip()!r}, not a hex code") from None


def life_time_range(code: int | None) -> str | None:
    """An eMMC life time estimate code in words (JESD84-B51, EXT_CSD[268/269])."""
    if code is None or code == 0:
        return None if code is None else "not defined"
    if code == 0x0B:
        return "exceeded its rated life"
    if 1 <= code <= 10:
        return f"{(code - 1) * 10}-{code * 10}% used"
    return f"reserved code 0x{code:02x}"


def _emmc_health(life_a: int | None, life_b: int | None, pre_eol: int | None) -> dict:
    """wear_pct: the upper bound of the worse of the two estimates (type A is
    SLC-like blocks, type B MLC-like): a coarse figure in steps of 10."""
    codes = [c for c in (life_a, life_b) if c and 1 <= c <= 11]
    return {"wear_pct": min(max(codes) * 10, 100) if codes else None,
            "wear_source": "eMMC life time estimate (upper bound of the worse of A and B)" if codes else None,
            "health": _PRE_EOL.get(pre_eol) if pre_eol else None,
            "details": _clean({"life_time_est_a": f"0x{life_a:02x}" if life_a is not None else None,
                               "life_time_a": life_time_range(life_a),
                               "life_time_est_b": f"0x{life_b:02x}" if life_b is not None else None,
                               "life_time_b": life_time_range(life_b),
                               "pre_eol_info": f"0x{pre_eol:02x}" if pre_eol is not None else None})}


def parse_mmc_sysfs(attrs: dict[str, str], device: str = "mmc") -> dict:
    """The MMC core's attributes of /sys/block/mmcblkN/device/ (file name ->
    content) as the state record: an eMMC's life time and pre-EOL, an SD
    card's registers. The formats are the kernel's (drivers/mmc/core/mmc.c
    and sd.c, Documentation/driver-api/mmc/mmc-dev-attrs.rst)."""
    values = {k: v.strip() for k, v in attrs.items() if v is not None}
    card_type = values.get("type", "").upper()
    if card_type not in ("MMC", "SD"):
        raise DeviceStateError(f"{device}: sysfs 'type' is {values.get('type')!r}, "
                               "expected MMC (eMMC) or SD")
    kind = "emmc" if card_type == "MMC" else "sd"
    record: dict = {"status": READ, "source": "sysfs", "kind": kind, "model": values.get("name"),
                    "serial": values.get("serial"), "firmware": values.get("fwrev")}
    registers = _clean({k: values.get(k) for k in _MMC_ATTRS if k not in ("type",)})
    if kind == "emmc":
        life = values.get("life_time", "").split()
        if life and len(life) != 2:
            raise DeviceStateError(f"{device}: sysfs life_time is {values['life_time']!r}, "
                                   "expected two codes (type A and type B)")
        life_a, life_b = (_code(life[0], device, "life_time"), _code(life[1], device, "life_time")) \
            if life else (None, None)
        health = _emmc_health(life_a, life_b, _code(values.get("pre_eol_info"), device, "pre_eol_info"))
        record.update({k: v for k, v in health.items() if k != "details"})
        record["details"] = {**registers, **health["details"]}
    else:
        record["details"] = registers
    return _clean(record)


_EXTCSD_LINE = re.compile(r"^(?P<what>eMMC Life Time Estimation A|eMMC Life Time Estimation B|"
                          r"eMMC Pre EOL information) \[EXT_CSD_\w+\]: (?P<code>0x[0-9a-fA-F]+)\s*$")
_EXTCSD_REV = re.compile(r"Extended CSD rev 1\.(\d+) \(MMC ([\d.]+)\)")
_EXTCSD_FIRMWARE = re.compile(r"^eMMC Firmware Version: (.*)$")


def parse_extcsd(text: str, device: str = "mmc") -> dict:
    """`mmc extcsd read DEV`'s text (mmc-utils): the life time estimates A and
    B, pre-EOL, the firmware version and the EXT_CSD revision, as the fields
    parse_mmc_sysfs gives (merged over the sysfs record by read_mmc)."""
    found: dict[str, int] = {}
    firmware = rev = None
    for line in text.splitlines():
        line = line.strip()
        if m := _EXTCSD_LINE.match(line):
            found[m["what"]] = int(m["code"], 16)
        elif m := _EXTCSD_FIRMWARE.match(line):
            firmware = m[1].strip()
        elif m := _EXTCSD_REV.search(line):
            rev = f"MMC {m[2]} (EXT_CSD rev 1.{m[1]})"
    if not found and rev is None:
        raise DeviceStateError(f"{device}: `mmc extcsd read` printed no EXT_CSD fields "
                               "(no 'Extended CSD rev' line, no life time estimates)")
    health = _emmc_health(found.get("eMMC Life Time Estimation A"), found.get("eMMC Life Time Estimation B"),
                          found.get("eMMC Pre EOL information"))
    health["firmware"] = firmware
    health["details"] = _clean({**health["details"], "ext_csd_rev": rev})
    return _clean(health)


# --- the thin readers ---------------------------------------------------------

def _run(argv: list[str]) -> tuple[subprocess.CompletedProcess | None, str | None]:
    """The tool's completed process, or None and why it could not run."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S), None
    except FileNotFoundError:
        return None, f"{argv[0]} is not installed"
    except subprocess.TimeoutExpired:
        return None, f"{' '.join(argv)} did not answer within {TOOL_TIMEOUT_S} s"
    except OSError as e:
        return None, f"{' '.join(argv)}: {e.strerror}"


def read_smartctl(dev_path: str) -> dict:
    proc, why = _run(["smartctl", "-j", "-a", dev_path])
    if proc is None:
        return unavailable("smartctl", why)
    try:
        return parse_smartctl(proc.stdout, dev_path)
    except DeviceStateError as e:
        return unavailable("smartctl", str(e) + (f" (stderr: {proc.stderr.strip()[:200]})" if proc.stderr.strip() else ""))


def mmc_sysfs_attrs(kname: str, sys_root: Path = SYS) -> dict[str, str]:
    """The MMC core's attribute files of /sys/block/<kname>/device that exist."""
    base = sys_root / "block" / kname / "device"
    out = {}
    for name in _MMC_ATTRS:
        try:
            out[name] = (base / name).read_text()
        except OSError:
            continue
    return out


def read_mmc(kname: str, dev_path: str, sys_root: Path = SYS) -> dict:
    """An eMMC's or SD card's state from sysfs; for an eMMC, `mmc extcsd read`
    on top when mmc-utils is installed (sysfs alone is enough)."""
    try:
        record = parse_mmc_sysfs(mmc_sysfs_attrs(kname, sys_root), f"/sys/block/{kname}/device")
    except DeviceStateError as e:
        return unavailable("sysfs", str(e))
    if record["kind"] != "emmc":
        return record
    proc, why = _run(["mmc", "extcsd", "read", dev_path])
    if proc is None or proc.returncode != 0:
        note = why or f"mmc extcsd read exited {proc.returncode}: {(proc.stderr or proc.stdout).strip()[:200]}"
        return {**record, "note": f"sysfs only: {note}"}
    try:
        extcsd = parse_extcsd(proc.stdout, dev_path)
    except DeviceStateError as e:
        return {**record, "note": f"sysfs only: {e}"}
    details = {**record.get("details", {}), **extcsd.pop("details", {})}
    return {**record, **extcsd, "details": details, "source": "sysfs, mmc extcsd"}


def read(dev_path: str, sys_root: Path = SYS) -> dict:
    """The state of the block device at dev_path (a /dev path or a by-id link),
    by the reader its kind needs. Never raises: a failure is the record's note."""
    try:
        return _read(dev_path, sys_root)
    except (OSError, ValueError) as e:  # such as a sysfs attribute that is not text
        return unavailable("devstate", f"{dev_path}: {e}")


def _read(dev_path: str, sys_root: Path) -> dict:
    kname = os.path.basename(os.path.realpath(dev_path))
    for prefix, why in _NO_STATE:
        if kname.startswith(prefix):
            return nothing(prefix.rstrip("-") if prefix != "vd" else "virtio", why)
    if kname.startswith("mmcblk"):
        return read_mmc(re.sub(r"p\d+$", "", kname), dev_path, sys_root)
    return read_smartctl(dev_path)


def read_members(members: list[str], sys_root: Path = SYS) -> dict:
    """An md array's state: each member's, by its path."""
    return {"status": NOTHING, "kind": "md", "note": "md array: its state is its members'",
            "members": {m: read(m, sys_root) for m in members}}


# --- how a page shows it ------------------------------------------------------

def shown(record: dict | None) -> dict:
    """A state record as the run page's device-state table shows it: the same
    words for every device class."""
    if not record:
        return {"status": "not recorded", "firmware": "", "wear": "", "temperature": "", "health": ""}
    if record.get("status") != READ:
        return {"status": f"{record.get('status')}: {record.get('note', '')}".strip(": "),
                "firmware": "", "wear": "", "temperature": "", "health": ""}
    details = record.get("details") or {}
    wear = f"{record['wear_pct']}%" if "wear_pct" in record else ""
    if record.get("kind") == "emmc" and "life_time_a" in details:
        wear = f"A {details['life_time_a']}, B {details.get('life_time_b', '?')}"
    return {"status": f"read by {record.get('source')}",
            "firmware": record.get("firmware", ""),
            "wear": wear,
            "temperature": f"{record['temperature_c']} °C" if "temperature_c" in record else "",
            "health": record.get("health", "")}
