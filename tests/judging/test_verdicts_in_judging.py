"""The verdicts issue 43 item 3 moved into iowatch.judging (which change points
open a regression, which cell is worst), judged on real verdicts.

The verdicts are compare_sides' of the lab VM's bisect ends
(tests/fixtures/lab-vm-bisect, good against bad: write.bw_kib_s a
regression, read.bw_kib_s no change; one boot a side on a host that keeps no
record, so judged with the hold off: tests/boot_record.hold_off); the change points around them are
stats' Candidate as e-divisive gives them.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from boot_record import hold_off
from iowatch import bundle, mailreport, resources
from iowatch.bisect.search import choose_target
from iowatch.cells import CellKey
from iowatch.judging import compare_sides
from iowatch.judging.changepoints import SAME_STEP_KERNELS, ConfirmedChangePoint, opening_steps
from iowatch.side_data import Side
from iowatch.stats.changepoints import Candidate
from iowatch.judging.worst import severity, verdict_order
from iowatch.studies import load_studies

LAB_VM = Path(__file__).resolve().parents[1] / "fixtures" / "lab-vm-bisect"


def _ends():
    studies = load_studies(resources.studies_dir())
    return compare_sides(Side("good", "good", [bundle.load(LAB_VM / "good")]),
                         Side("bad", "bad", [bundle.load(LAB_VM / "bad")]), studies=studies)


@pytest.fixture(scope="module")
def ends():
    """{metric: verdict} of the lab VM's good against its bad."""
    with hold_off():
        cmp = _ends()
    verdicts = {v.key.metric: v for v in cmp.verdicts}
    assert verdicts["write.bw_kib_s"].outcome == "regression"
    assert verdicts["read.bw_kib_s"].outcome == "no-change"
    return verdicts


def _series(name: str) -> CellKey:
    return CellKey("odirect-vs-readers", "lab-vm", "hdd", "vhdd", "ext4", "readers", name)


def _point(key: CellKey, index: int, verdict) -> ConfirmedChangePoint:
    return ConfirmedChangePoint(key, Candidate(index, 100.0, 50.0, -50.0, 0.001, 0, 8), verdict,
                                (index - 1,), (index,))


KERNELS = [f"k{i}" for i in range(8)]


def test_the_steps_that_open_a_regression(ends):
    """The newest regressed change point of each series opens its step; series
    meeting at one step share it; a change point stored next to it (the same
    step, e-divisive's boundary one kernel off) and a change that is no
    regression open nothing."""
    regressed, unchanged = ends["write.bw_kib_s"], ends["read.bw_kib_s"]
    a, b, c, d = (_series(n) for n in ("a", "b", "c", "d"))
    confirmed = {a: [_point(a, 2, regressed), _point(a, 5, regressed)],
                 b: [_point(b, 5, regressed)],
                 c: [_point(c, 3, unchanged)],
                 d: [_point(d, 6, regressed)]}
    stored = {d: {KERNELS[6 + SAME_STEP_KERNELS]}, a: {"k0"}}
    steps = opening_steps(confirmed, {k: KERNELS for k in confirmed}, stored)
    assert {step: [(key.metric, cp.point.index) for key, cp in found]
            for step, found in steps.items()} == {("k4", "k5"): [("a", 5), ("b", 5)]}


@pytest.fixture(scope="module")
def ends_comparison():
    with hold_off():
        return _ends()


def _regressed(v, change_pct: float, min_effect_pct: float, outcome: str = "regression"):
    """The regressed write verdict with another size, minimum effect or outcome."""
    return replace(v, change_pct=change_pct, min_effect_pct=min_effect_pct, outcome=outcome,
                   key=replace(v.key, group=f"{v.key.group}-{change_pct:g}-{min_effect_pct:g}"))


def test_the_bisect_follows_the_slowdown_in_minimum_effects(ends_comparison):
    """-12% on a 5% study (2.4 minimum effects) is worse than -30% on a 20% one
    (1.5): `iowatch bisect` follows it (it took the largest change before)."""
    write = next(v for v in ends_comparison.verdicts if v.outcome == "regression")
    small, large = _regressed(write, -12.0, 5.0), _regressed(write, -30.0, 20.0)
    # Without its canary: the fixture's tmpfs canary drifted, which takes every regression away.
    cmp = replace(ends_comparison, verdicts=[large, small], canaries=[])
    assert choose_target(cmp) is small


def test_one_worst_first_order(ends_comparison):
    """A confirmed regression before a suspected one whatever their sizes, then
    the slowdown in minimum effects; the pages' and the mail's order is this one."""
    write = next(v for v in ends_comparison.verdicts if v.outcome == "regression")
    cells = [_regressed(write, -60.0, 5.0, "suspected"), _regressed(write, -12.0, 5.0),
             _regressed(write, -30.0, 20.0), _regressed(write, -8.0, 5.0, "slower")]
    ordered = sorted(cells, key=verdict_order)
    assert [(v.outcome, v.change_pct) for v in ordered] == [
        ("regression", -12.0), ("regression", -30.0), ("suspected", -60.0), ("slower", -8.0)]
    assert severity(-12.0, "higher", 5.0) == pytest.approx(2.4)
    assert severity(12.0, "lower", 5.0) == pytest.approx(2.4)
    assert severity(-12.0, "info", 5.0) is None
    detail = {"cells": [{"cell_key": f"c{i}", "group": "g", "metric": "write.bw_kib_s",
                         "outcome": v.outcome, "change_pct": v.change_pct,
                         "min_effect_pct": v.min_effect_pct} for i, v in enumerate(cells)]}
    assert [c["change_pct"] for c in mailreport._cells(detail)] == [-12.0, -30.0, -60.0, -8.0]
