"""One boot a side (issue 41 item 1): `iowatch run --against` run locally, or
`iowatch compare` of two bundles, compares one boot of each kernel. Every
repetition of a side shares its boot's offset, so the test on repetitions
cannot see the between-boot variance, and before this change a clean
comparison at 25% of the variance between boots raised a false alarm in
88.5% of 40-cell checks (the issue's measure). Now:
- with no recorded variance between boots, a cell is at most "suspected: one
  boot a side";
- with the host's history of other kernels booted more than once
  (iowatch.stats.boots), the offsets' variance joins the test and a real
  change is still confirmed.

The draws: 40-cell clean checks of the lognormal CV 10% model
(bench/accuracy/simulate.py), each side of each cell one boot whose offset
holds 25% of the cell's log variance; the base fixed at 5 repetitions, the
candidate grown in its one boot to the next look of every unsure cell, as
`run --against` does. A history is HISTORY_KERNELS kernels (what an adapter
reads at most) of HISTORY_BOOTS boots of 3 repetitions each, drawn from the
same cell with the same offsets.
The goal is 5% false alarms a check, designed for 3.5%: with CHECKS checks a
true 3.5% exceeds 5% with probability about 0.5% (binomial), so the bound is
honest; the seeds are the first ones tried."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "accuracy"))

import futility  # noqa: E402
import simulate  # noqa: E402
from iowatch.judging import Comparison, more_runs  # noqa: E402
from iowatch.stats import CellInput, CellKey, compare_matrix  # noqa: E402
from iowatch.judging.boots import HISTORY_KERNELS  # noqa: E402
from iowatch.stats.boots import between_boot_variance  # noqa: E402
from iowatch.vocabulary import DEFAULT_CAP as CAP, FDR, DEFAULT_MIN_EFFECT as MIN_EFFECT

CHECKS = 1000
GOAL = 0.05
SHARE = 0.25  # of a cell's log variance between boots
HISTORY_BOOTS, HISTORY_RUNS = 3, 3


def _offset_sd(pool: np.ndarray) -> float:
    return float(np.log(pool).std(ddof=1)) * math.sqrt(SHARE / (1 - SHARE))


class OneBoot:
    """A side of a cell measured in one boot: every repetition, the first and
    the added ones, moved by the same offset."""

    def __init__(self, pool: np.ndarray, rng, tag: str):
        self.pool, self.rng, self.tag = pool, rng, tag
        self.offset = math.exp(rng.normal(0, _offset_sd(pool)))
        self.values: list[float] = []

    def grow(self, n: int) -> None:
        self.values += list(self.rng.choice(self.pool, size=n, replace=True) * self.offset)


def history(pool: np.ndarray, rng):
    """The host's record of this cell: other kernels, each booted several times."""
    sd = _offset_sd(pool)
    return between_boot_variance([
        [list(rng.choice(pool, size=HISTORY_RUNS) * math.exp(rng.normal(0, sd)))
         for _ in range(HISTORY_BOOTS)] for _ in range(HISTORY_KERNELS)])


def _family(d, base, cand, labelled: bool, recorded=None):
    """The verdicts; `labelled` False gives no boot labels: the repetitions
    taken as independent, as the verdict read one bundle a side before."""
    return compare_matrix([
        CellInput(CellKey("s", "h", "c", f"d{i}", "fs", "g", "m"), b.values, c.values,
                  d.cells[i].direction, MIN_EFFECT,
                  base_boots=[b.tag] * len(b.values) if labelled else None,
                  candidate_boots=[c.tag] * len(c.values) if labelled else None,
                  boot_variance=recorded[i] if recorded else None)
        for i, (b, c) in enumerate(zip(base, cand))], fdr=FDR, cap=CAP)


def against(model, rng, labelled: bool, with_history: bool = False,
            condition: str | None = None):
    """One `run --against` check (clean without a condition): (its verdicts when
    nothing more is wanted, the draw)."""
    d = simulate.draw_matrix(model, rng, condition)
    base = [OneBoot(p, rng, "b") for p in d.base_pool]
    cand = [OneBoot(p, rng, "c") for p in d.cand_pool]
    recorded = [history(p, rng) for p in d.base_pool] if with_history else None
    for s in base + cand:
        s.grow(simulate.AGAINST_BASE)
    while True:
        verdicts = _family(d, base, cand, labelled, recorded)
        grew = False
        for where, runs in more_runs(Comparison(None, None, 0.05, verdicts, [], {}, {})).items():
            side = cand[int(where.device[1:])]
            if runs.candidate > len(side.values):
                side.grow(runs.candidate - len(side.values))
                grew = True
        if not grew:
            return verdicts, d


@pytest.fixture(autouse=True)
def hold(monkeypatch):
    """The hold without a record, switched on (as shipped: iowatch.stats.boots)."""
    from iowatch.stats import boots
    monkeypatch.setattr(boots, "HOLD_WITHOUT_RECORD", True)


@pytest.fixture(scope="module")
def model():
    return simulate.exact_slowdowns(simulate.lognormal_cells(0.10))


def _false_alarms(model, checks: int, seed: int, labelled: bool, with_history: bool = False):
    rng = np.random.default_rng(seed)
    return sum(any(v.outcome == "regression"
                   for v in against(model, rng, labelled, with_history)[0])
               for _ in range(checks))


def _wilson(k: int, n: int) -> str:
    return f"{futility.wilson(k, n)} of {n}"


def test_one_boot_a_side_raises_at_most_5_percent_false_alarms(model):
    k = _false_alarms(model, CHECKS, 41, labelled=True)
    assert k / CHECKS <= GOAL, f"{_wilson(k, CHECKS)} clean one-boot checks raised a regression"


def test_one_boot_with_a_recorded_history_holds_the_goal(model):
    """The history's variance between boots joins the test: false alarms stay
    within the goal although a cell may now be confirmed on one boot a side."""
    k = _false_alarms(model, CHECKS, 43, labelled=True, with_history=True)
    assert k / CHECKS <= GOAL, (f"{_wilson(k, CHECKS)} clean one-boot checks with a "
                                "recorded history raised a regression")


def test_with_a_history_a_large_slowdown_is_confirmed_on_one_boot_a_side(model):
    """The history makes one boot a side decidable: a -50% cell is confirmed in
    most checks (without a history it is never more than suspected). Measured
    on 60 checks of seed 44: 87% with 8 kernels of history, 73% with 6, 38%
    with 3; a -20% cell 3-5% whatever the history, as one boot's offset (sd
    5.8% here) on each side allows: its words say to boot again."""
    rng = np.random.default_rng(44)
    found = held = 0
    trials = 100
    for _ in range(trials):
        verdicts, d = against(model, rng, True, True, condition="slow50")
        found += verdicts[d.slowed].outcome == "regression"
        held += verdicts[d.slowed].one_boot
    assert held == 0
    assert found / trials >= 0.75, f"-50% confirmed in {_wilson(found, trials)} with a history"


def test_without_the_boots_the_same_draws_raise_far_more():
    """The test can fail: the same draws, read as independent repetitions (as
    before), raise false alarms far beyond the goal."""
    m = simulate.exact_slowdowns(simulate.lognormal_cells(0.10))
    assert _false_alarms(m, 100, 41, labelled=False) / 100 > 4 * GOAL


def test_a_one_boot_cell_says_so_and_asks_for_a_boot(model):
    rng = np.random.default_rng(41)
    for _ in range(50):
        verdicts, _ = against(model, rng, labelled=True, condition="slow50")
        held = [v for v in verdicts if v.one_boot]
        if held:
            v = held[0]
            assert v.outcome == "suspected" and v.boot_counts == (1, 1)
            assert "one boot a side, boot again to confirm" in v.words
            assert v.needs_runs is None  # more runs of the same boot cannot confirm it
            return
    pytest.fail("no cell of 50 one-boot checks with a -50% cell was held at suspected")


def test_the_history_estimates_the_offset_it_was_drawn_with():
    """between_boot_variance on a long history gives the variance of one boot's
    mean: the offset's (sd 5%) and the boot's own runs' over their count (sd 3%
    over 4), sqrt(0.05^2 + 0.03^2/4) = 5.2%; a history of one boot a kernel, or
    of too few boots, says nothing."""
    rng = np.random.default_rng(5)
    kernels = [[list(100 * math.exp(rng.normal(0, 0.05)) * np.exp(rng.normal(0, 0.03, 4)))
                for _ in range(4)] for _ in range(60)]
    got = between_boot_variance(kernels)
    assert got is not None and got.boots == 240 and got.kernels == 60
    assert 0.047 < math.sqrt(got.var) < 0.058, got
    assert between_boot_variance([[[1.0, 2.0]]] * 10) is None
    assert between_boot_variance([[[1.0, 1.1], [1.2, 1.3]]]) is None  # 1 df: too few


def _one_against_two(rng, slowdown: float, record) -> str:
    """One cell: the base one boot of 5, the candidate two boots of 5 (a second
    run of the kernel uploaded), boot offsets sd 3% and repetitions sd 1%."""
    boot = lambda: rng.normal(0, 0.03)  # noqa: E731
    base = np.exp(boot() + rng.normal(0, 0.01, 5)) * 1000
    cand = np.concatenate([np.exp(boot() + rng.normal(0, 0.01, 5)) for _ in range(2)]) \
        * 1000 * (1 - slowdown)
    cell = CellInput(CellKey("s", "h", "c", "d", "fs", "g", "m"), base, cand, "higher", MIN_EFFECT,
                     base_boots=["b0"] * 5, candidate_boots=["c0"] * 5 + ["c1"] * 5,
                     boot_variance=record)
    return compare_matrix([cell], fdr=FDR, cap=CAP)[0].outcome


def test_one_boot_against_two_borrows_the_hosts_record_and_keeps_the_level():
    """A side of one boot against one of two (stop 51): the boot means alone
    leave the test one degree of freedom, so a -20% change (boot offsets sd 3%)
    was rarely confirmed, and a second run of a kernel could turn a confirmed
    regression back into "suspected". With the host's record of a boot mean's
    variance (a true one, on 10 degrees of freedom) the record joins as a prior:
    -20% is found at least 95% of the time, and a clean cell confirmed no more
    often than the look's level (0.29%): at 2,000 cells a true 0.29% exceeds 1%
    with probability under 0.1%."""
    from iowatch.stats.boots import BootVariance
    rng = np.random.default_rng(51)
    record = BootVariance(var=0.03 ** 2 + 0.01 ** 2 / 5, df=10, boots=12, kernels=4)
    clean = sum(_one_against_two(rng, 0.0, record) == "regression" for _ in range(2000))
    found = sum(_one_against_two(rng, 0.2, record) == "regression" for _ in range(200))
    alone = sum(_one_against_two(rng, 0.2, None) == "regression" for _ in range(200))
    assert clean <= 20 and found >= 190 and alone < found - 40, (clean, found, alone)
