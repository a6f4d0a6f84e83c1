"""The platform canary's cells (issue 24 item 2): one a host on tmpfs, and in
every boot: Runner.run adds it to whichever cells (--cells) a boot was asked for."""
from pathlib import Path

from iowatch import inventory
from iowatch.runner import plan
from iowatch.studies import load_matrix

ROOT = Path(__file__).resolve().parents[2]


def test_the_canary_is_one_cell_a_host_on_tmpfs_in_the_checks_matrices():
    inv = inventory.load(ROOT / "hardware-inventory.yml")
    for name in ("check-quick", "e2e"):
        matrix = load_matrix(ROOT / "jobs" / f"{name}.yml")
        for host, device in (("vlab", "vssd"), ("localhost", "loop-sdcard")):
            canary = [c.id for c in plan(matrix, inv.host(host)) if c.study.canary]
            # The host's first device of the study's classes is only its address.
            assert canary == [f"canary-tmpfs-read/{device}/tmpfs"], (name, host)
