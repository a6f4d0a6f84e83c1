"""The verdicts issue 43 item 3 moved into iowatch.judging, judged on real verdicts.

The verdicts are compare_sides' of the lab VM's bisect ends
(tests/fixtures/lab-vm-bisect, good against bad: write.bw_kib_s a
regression, read.bw_kib_s no change); the change points around them are
stats' Candidate as e-divisive gives them.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from iowatch import bundle, resources
from iowatch.cells import CellKey
from iowatch.judging import compare_sides
from iowatch.judging.changepoints import SAME_STEP_KERNELS, ConfirmedChangePoint, opening_steps
from iowatch.side_data import Side
from iowatch.stats.changepoints import Candidate
from iowatch.studies import load_studies

LAB_VM = Path(__file__).resolve().parents[1] / "fixtures" / "lab-vm-bisect"


@pytest.fixture(scope="module")
def ends():
    """{metric: verdict} of the lab VM's good against its bad."""
    studies = load_studies(resources.studies_dir())
    cmp = compare_sides(Side("good", "good", [bundle.load(LAB_VM / "good")]),
                        Side("bad", "bad", [bundle.load(LAB_VM / "bad")]), studies=studies)
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
