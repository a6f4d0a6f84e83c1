"""What the commands that run the matrix in virtual-lab guests (check, bisect)
share: their options, and finding the qemu host of the inventory.
Not a subcommand itself (iowatch.cli registers only the names in COMMANDS)."""
from __future__ import annotations

import argparse
from pathlib import Path

from iowatch import inventory, progress
from iowatch.check import REPS_PER_BOOT
from iowatch.inventory import Host



# check and reproduce run on the modelled lab unless told otherwise: its disks,
# cards and SSDs cost what the devices they stand for cost (docs/seeds.md,
# "Devices with mechanics"); vlab's throttled devices stay for a fast smoke
# check (--hosts vlab), and a bisect's agents keep the host they were granted.
MODELLED_HOST, PLAIN_HOST = "vlab-mech", "vlab"


class HostError(ValueError):
    """The host is not in the inventory, or is not a qemu host; the message says which."""


def add_guest_run_options(p, each: str) -> None:
    """--source, --matrix, --hosts, --inventory, --profile, --reps, --out, --no-store,
    --console, --json and --no-progress/--quiet; `each` names what the matrix runs on
    (variant, commit)."""
    p.add_argument("--source", default=None, metavar="TREE",
                   help="kernel git tree (default: Debian's linux-source-6.12)")
    p.add_argument("--matrix", default="check-quick",
                   help=f"what to run on each {each}: a file, or the name of a matrix or study "
                        "iowatch ships (default check-quick)")
    p.add_argument("--hosts", default=None,
                   help=f"the qemu host of the inventory (default {MODELLED_HOST}, whose devices have "
                        f"mechanics, where the inventory has it, else {PLAIN_HOST}; bisect: {PLAIN_HOST})")
    p.add_argument("--inventory", default=None,
                   help="default: $IOWATCH_INVENTORY, ./hardware-inventory.yml, else the one iowatch ships")
    p.add_argument("--profile", choices=("quick", "full"), default=None)
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--out", default=None, help="where bundles and console logs go")
    p.add_argument("--no-store", action="store_true", help="do not store results in the local store")
    p.add_argument("--console", action="store_true", help="echo the guests' consoles")
    p.add_argument("--json", action="store_true", help="also print a JSON summary")
    progress.add_options(p)


def _at_least_one(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of repetitions, 1 or more")
    return n


def add_boot_option(p) -> None:
    """--reps-per-boot, for the commands that run a check's rounds (check, reproduce)."""
    p.add_argument("--reps-per-boot", type=_at_least_one, default=REPS_PER_BOOT, metavar="N",
                   help=f"run at most N repetitions of a variant in one boot (default "
                        f"{REPS_PER_BOOT}: a boot moves all its repetitions alike, so fewer a "
                        "boot decide sooner and cost a boot each; docs/verdicts.md)")


def qemu_host(inventory_path: str | Path, name: str | None, elsewhere: str) -> Host:
    """The inventory's host `name`, which must be a qemu host; `elsewhere` says
    where a host of another kind is handled. No name: the modelled lab
    (MODELLED_HOST) where the inventory has it, else PLAIN_HOST. InventoryError
    for a bad inventory."""
    inv = inventory.load(inventory_path)
    if name is None:
        name = MODELLED_HOST if MODELLED_HOST in inv.hosts else PLAIN_HOST
    try:
        host = inv.host(name)
    except KeyError as e:
        raise HostError(e.args[0]) from None
    if host.kind != "qemu":
        raise HostError(f"host {host.name} is {host.kind}; {elsewhere}")
    return host
