"""The boot a run was measured in, as the verdict reads it (issue 41 item 1):
the runner records the kernel's boot_id under environment.host, runs that
share it are one boot, and two sides measured in the same boot share its
offset, which then cancels (run --against a bundle made earlier in this boot)."""
from __future__ import annotations

import copy
from pathlib import Path

from iowatch import bundle
from iowatch.cells import CellKey
from iowatch.side_data import Side, pool, run_boot
from iowatch.stats import CellInput, compare_matrix
from iowatch.vocabulary import DEFAULT_CAP as CAP, FDR, DEFAULT_MIN_EFFECT as MIN_EFFECT

ROOT = Path(__file__).resolve().parents[2]
GUEST = ROOT / "tests" / "fixtures" / "e2e-check" / "guest-00" / "bundle"


def test_the_runners_boot_id_under_environment_host_names_the_boot():
    doc = bundle.load(GUEST)
    assert run_boot(doc, 0) == doc["run_id"]  # made before boot ids: a bundle is a boot
    a, b = copy.deepcopy(doc), copy.deepcopy(doc)
    b["run_id"] = "another-run"
    for d in (a, b):
        d["environment"].setdefault("host", {})["boot_id"] = "6a4871c5-2c7c-4c86-bfbc-74b09c3a5d74"
    assert run_boot(a, 0) == run_boot(b, 1) == "6a4871c5-2c7c-4c86-bfbc-74b09c3a5d74"
    pooled = pool(Side("k", "", [a, b]))
    assert all(len(set(labels)) == 1 for labels in pooled.boots.values())


def _cell(base_boot: str, candidate_boot: str):
    key = CellKey("s", "h", "c", "d", "fs", "g", "write.bw_kib_s")
    base, candidate = [100, 101, 99, 100.5, 99.5], [80, 81, 79, 80.5, 79.5]
    (v,) = compare_matrix([CellInput(key, base, candidate, "higher", MIN_EFFECT,
                                     base_boots=[base_boot] * 5,
                                     candidate_boots=[candidate_boot] * 5)], fdr=FDR, cap=CAP)
    return v


def test_two_sides_of_one_boot_share_its_offset_and_are_judged_on_their_runs(monkeypatch):
    from iowatch.stats import boots
    monkeypatch.setattr(boots, "HOLD_WITHOUT_RECORD", True)  # as shipped
    assert _cell("boot-1", "boot-1").outcome == "regression"
    held = _cell("boot-1", "boot-2")
    assert held.outcome == "suspected" and held.one_boot
    monkeypatch.setattr(boots, "HOLD_WITHOUT_RECORD", False)
    assert _cell("boot-1", "boot-2").outcome == "regression"  # IOWATCH_HOLD_ONE_BOOT=0
