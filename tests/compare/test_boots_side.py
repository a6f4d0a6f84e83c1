"""A directory of one kernel's bundles is a side of several boots (`iowatch
compare DIR DIR`, `run --against DIR`, `run --boots DIR`); a directory of
several kernels or hosts is refused, naming them. Real bundles: the virtual
lab's six recorded boots of one kernel (tests/fixtures/e2e-boots/aabb) and the
end-to-end check's three kernels (tests/fixtures/e2e-check)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iowatch.judging.sides import SideNotFound
from iowatch.side_data import run_boot
from iowatch.side_sources import load_side

ROOT = Path(__file__).resolve().parents[2]
AABB = ROOT / "tests" / "fixtures" / "e2e-boots" / "aabb"
IOWATCH = str(Path(sys.executable).parent / "iowatch")


def _boots(tmp: Path, variant: str) -> Path:
    """The aabb boots of one of the two builds (the directory name says which)."""
    out = tmp / variant
    for boot in sorted(AABB.glob(f"boot-*-{variant}")):
        shutil.copytree(boot / "bundle", out / boot.name)
    return out


def test_a_directory_of_boots_is_one_side_of_several_boots(tmp_path):
    side = load_side(str(_boots(tmp_path, "v0")), role="base")
    assert len(side.runs) == 3
    assert len({run_boot(r, i) for i, r in enumerate(side.runs)}) == 3  # a bundle a boot


def test_compare_of_two_kernels_three_boots_a_side_reads_their_boots(tmp_path):
    """Two builds that differ by a comment, three real boots each: judged on
    boot means (the noise between boots from the sides), no change is claimed."""
    r = subprocess.run([IOWATCH, "compare", str(_boots(tmp_path, "v0")), str(_boots(tmp_path, "v1")),
                        "--format", "json"], capture_output=True, text=True, cwd=ROOT)
    doc = json.loads(r.stdout)
    assert doc["state"] == "no-change" and r.returncode == 0, r.stdout
    assert {tuple(c["boots"]) for c in doc["cells"] if c.get("boots")} == {(3, 3)}


def test_a_directory_of_several_kernels_is_refused_naming_them(tmp_path):
    with pytest.raises(SideNotFound, match=r"its bundles are of 3 kernels on 1 hosts \(6\.12\.117\+"):
        load_side(str(ROOT / "tests" / "fixtures" / "e2e-check"), role="--against")
