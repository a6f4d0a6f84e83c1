"""iowatch device: the safety answer on a device, what it reports of its own state,
and the local target's loop devices."""
from __future__ import annotations

import json
import sys
import warnings

from iowatch import devstate, inventory, loopdev, safety


def register(sub):
    p = sub.add_parser(
        "device", help="check a device against the safety rules; attach or detach loop devices",
        description="Devices of the lab's hosts, as declared in hardware-inventory.yml.")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)

    check = verbs.add_parser(
        "check", help="may iowatch write to this device? (exit 0 yes, 1 no, 2 bad inventory or call)",
        description="Print the safety answer on a block device for a host: the same check the "
                    "runner makes before any mkfs or write. Exit 0: allowed; 1: refused; "
                    "2: the inventory or the call is wrong.")
    check.add_argument("host", help="a host of the inventory, such as localhost")
    check.add_argument("path", help="the device, such as /dev/disk/by-id/... or /dev/loop0")
    check.set_defaults(func=run_check)

    state = verbs.add_parser(
        "state", help="what a device reports of itself: firmware, wear, temperature, health (reads only)",
        description="Print the state a run records for a block device (docs/device-state.md): "
                    "smartctl for SATA, SAS and NVMe, the MMC core's sysfs and mmc-utils for eMMC "
                    "and SD cards. Exit 0: read, or a device that keeps no state; 1: unavailable "
                    "(the tool is missing or refused the device; the note says which).")
    state.add_argument("path", help="the device, such as /dev/disk/by-id/... or /dev/nvme0n1")
    state.add_argument("--json", action="store_true", help="the bundle's record as JSON")
    state.set_defaults(func=run_state)

    for verb, run, what in (("attach", run_attach, "make the image files if missing and attach them "
                             "as loop devices with direct I/O"),
                            ("detach", run_detach, "detach the host's loop devices")):
        v = verbs.add_parser(verb, help=f"{what} (local target)",
                             description=f"For a host's devices declared with image and size: {what}.")
        v.add_argument("host", help="a host of the inventory, such as localhost")
        v.set_defaults(func=run)

    for v in (check, verbs.choices["attach"], verbs.choices["detach"]):
        v.add_argument("--inventory", default=None,
                       help=f"the lab description (default $IOWATCH_INVENTORY or ./{inventory.DEFAULT_FILE})")


def _host(args) -> inventory.Host | None:
    try:
        return inventory.load(args.inventory).host(args.host)
    except inventory.InventoryError as e:
        print(f"iowatch device: the inventory is refused:\n{e}", file=sys.stderr)
    except KeyError as e:
        print(f"iowatch device: {e.args[0]}", file=sys.stderr)
    return None


def run_check(args) -> int:
    host = _host(args)
    if host is None:
        return 2
    answer = safety.check(host, args.path)
    shown = args.path if answer.resolved == args.path else f"{args.path} ({answer.resolved})"
    print(f"{'allowed' if answer.allowed else 'refused'}: {shown}: {answer.reason}")
    return 0 if answer.allowed else 1


def run_state(args) -> int:
    record = devstate.read(args.path)
    if args.json:
        print(json.dumps(record, indent=2, sort_keys=True))
    else:
        words = devstate.shown(record)
        print(f"{args.path}: {words['status']}")
        for key in ("model", "serial"):
            if record.get(key):
                print(f"  {key}: {record[key]}")
        for key in ("firmware", "wear", "temperature", "health"):
            if words[key]:
                print(f"  {key}: {words[key]}")
    return 1 if record["status"] == devstate.UNAVAILABLE else 0


def _image_devices(args) -> list[inventory.Device] | None:
    host = _host(args)
    if host is None:
        return None
    devices = [d for d in host.devices if d.is_image]
    if not devices:
        print(f"iowatch device: host {host.name} declares no image devices (loop devices are "
              "for the local target)", file=sys.stderr)
        return None
    return devices


def run_attach(args) -> int:
    devices = _image_devices(args)
    if devices is None:
        return 2
    failed = 0
    for device in devices:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                path = loopdev.attach(device)
        except loopdev.LoopError as e:
            print(f"iowatch device: {device.name}: {e}", file=sys.stderr)
            failed += 1
            continue
        for w in caught:
            print(f"warning: {w.message}", file=sys.stderr)
        st = loopdev.state(path)
        print(f"{device.name} → {path} (direct I/O {'on' if st.direct_io else 'OFF'}, "
              f"rotational {int(st.rotational)}, {loopdev.image_path(device)})")
    return 1 if failed else 0


def run_detach(args) -> int:
    devices = _image_devices(args)
    if devices is None:
        return 2
    images = {str(loopdev.image_path(d).resolve()): d.name for d in devices}
    failed = 0
    for loop in loopdev.attached():
        name = images.get(loop.backing_file)
        if name is None:
            continue
        try:
            loopdev.detach(loop.path)
            print(f"{name}: detached {loop.path}")
        except loopdev.LoopError as e:
            print(f"iowatch device: {name}: {e}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0
