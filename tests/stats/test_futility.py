"""Futility stopping (issue 41 item 3): a cell that can reach no decision by its
cap stops early, says why, and never changes what is confirmed.

The rule is iowatch.stats.sequential.futile; compare_matrix applies it to the
cells still unsure. bench/accuracy/futility.py measures what it buys (boots a
variant) and costs (slowdowns found) on the collections."""
from __future__ import annotations

import math

import numpy as np
import pytest

from iowatch.cells import CellKey
from iowatch.judging import Comparison, more_runs
from iowatch.stats import CellInput, compare_matrix, sequential
from iowatch.stats.sequential import futile
from iowatch.vocabulary import DEFAULT_CAP as CAP, FDR, DEFAULT_MIN_EFFECT as MIN_EFFECT

LOG5 = math.log1p(0.05)


@pytest.fixture(autouse=True)
def futility_on(monkeypatch):
    """Futility is off as shipped (sequential.FUTILE 0): these tests hold the rule
    at the chance it was designed and measured at."""
    monkeypatch.setattr(sequential, "FUTILE", sequential.CHANCE)


def _family(rng, n: int, cvs, changes=None) -> list[CellInput]:
    changes = changes or [0.0] * len(cvs)
    return [CellInput(CellKey("s", "h", "c", f"d{i}", "fs", "g", "m"),
                      list(np.exp(rng.normal(0, cv, n))),
                      list(np.exp(rng.normal(math.log1p(ch), cv, n))), "higher", MIN_EFFECT)
            for i, (cv, ch) in enumerate(zip(cvs, changes))]


def test_a_noisy_cell_trending_nowhere_cannot_reach_a_decision_by_the_cap():
    # CV 30% at 5 a side: the cap's 95% CI is +-19%, wider than the 5% minimum
    # effect, and a difference near zero cannot be confirmed either way.
    se = 0.30 * math.sqrt(2 / 5)
    assert futile(0.01, se, 5, worse_sign=-1, delta=LOG5, cap=20, q=FDR)
    # The same noise with the cell trending 40% slower: a confirmation is in reach.
    assert not futile(math.log(0.6), se, 5, worse_sign=-1, delta=LOG5, cap=20, q=FDR)
    # ... and 40% faster: an improvement is in reach too.
    assert not futile(math.log(1.4), se, 5, worse_sign=-1, delta=LOG5, cap=20, q=FDR)


def test_a_quiet_cell_can_still_end_no_change_so_it_goes_on():
    # CV 2%: the cap's CI is +-1.3%, well inside the minimum effect.
    assert not futile(0.01, 0.02 * math.sqrt(2 / 5), 5, worse_sign=-1, delta=LOG5, cap=20, q=FDR)


def test_at_the_cap_or_without_noise_nothing_is_futile():
    assert not futile(0.0, 0.1, 20, worse_sign=1, delta=LOG5, cap=20, q=FDR)
    assert not futile(0.0, 0.0, 5, worse_sign=1, delta=LOG5, cap=20, q=FDR)


def test_a_bigger_family_asks_more_of_a_lone_confirmation():
    # A trend a lone cell could confirm may be out of reach when Benjamini-Hochberg
    # divides the cap's level over 40 cells.
    se = 0.10 * math.sqrt(2 / 5)
    d = math.log(0.95)
    assert not futile(d, se, 5, worse_sign=-1, delta=LOG5, cap=20, family=1, q=FDR)
    assert futile(d, se, 5, worse_sign=-1, delta=LOG5, cap=20, family=40, q=FDR)


def test_a_futile_cell_stops_says_why_and_asks_for_no_more_runs():
    rng = np.random.default_rng(7)
    cells = _family(rng, 5, [0.30] * 8)
    verdicts = compare_matrix(cells, fdr=FDR, cap=CAP)
    stopped = [v for v in verdicts if v.futile]
    assert stopped, [v.words for v in verdicts]
    for v in stopped:
        assert v.budget_spent and v.needs_runs is None and v.outcome != "regression"
        assert "stopped at 5 runs a side: no decision is in reach by the cap of 20" in v.words
    wanted = more_runs(Comparison(None, None, 0.05, verdicts, [], {}, {}))
    assert not {v.key.location for v in stopped} & set(wanted)


def test_futility_never_changes_what_is_confirmed(monkeypatch):
    """Stopping early only takes looks away: at any one look, the cells confirmed
    (regressions and improvements) are the same with and without the rule. The
    per-cell rule alone: the family's, on as shipped, is held off here (its own
    test is test_family_futility.py's)."""
    monkeypatch.setattr(sequential, "FAMILY_FUTILE", 0.0)
    rng = np.random.default_rng(41)
    for _ in range(60):
        cvs = list(rng.choice([0.03, 0.10, 0.30], 40))
        changes = [float(rng.choice([0.0, 0.0, 0.0, -0.1, -0.2, 0.2])) for _ in cvs]
        cells = _family(rng, int(rng.choice([5, 10, 15])), cvs, changes)
        monkeypatch.setattr(sequential, "FUTILE", sequential.CHANCE)
        on = compare_matrix(cells, fdr=FDR, cap=CAP)
        monkeypatch.setattr(sequential, "FUTILE", 0.0)
        off = compare_matrix(cells, fdr=FDR, cap=CAP)
        assert not any(v.futile for v in off)
        confirmed = lambda vs: [(v.key, v.outcome) for v in vs  # noqa: E731
                                if v.outcome in ("regression", "improvement")]
        assert confirmed(on) == confirmed(off)


@pytest.mark.parametrize("cv", [0.10, 0.30])
def test_futility_stops_most_clean_unsure_cells_at_the_first_look(cv, monkeypatch):
    """Of the clean cells left unsure at the first look (5 a side), whose noise
    keeps "no change" out of reach, most stop: those trending within about one
    standard error of zero (measured 64% at CV 10%, 75% at CV 30%, over 10
    families of 40). Without the rule every one of them went on to the cap."""
    unsure = stopped = 0
    for seed in range(10):
        cells = _family(np.random.default_rng(seed), 5, [cv] * 40)
        monkeypatch.setattr(sequential, "FUTILE", 0.0)
        off = compare_matrix(cells, fdr=FDR, cap=CAP)
        monkeypatch.setattr(sequential, "FUTILE", sequential.CHANCE)
        on = compare_matrix(cells, fdr=FDR, cap=CAP)
        left = [i for i, v in enumerate(off) if v.outcome in ("suspected", "inconclusive")]
        unsure += len(left)
        stopped += sum(on[i].futile for i in left)
    assert stopped >= 0.5 * unsure, (stopped, unsure)


def test_a_slower_cell_whose_interval_excludes_zero_is_never_called_no_change():
    """Issue 41 item 9: a -10% cell is never "no change" while the interval printed
    with it lies wholly on the slower side, unless that interval is inside the
    minimum effect (slower by less than what matters): "no change within X%"
    only when the interval holds zero; else it is
    "slower", "suspected", "unsure" or a regression. Checked at every look, with
    futility's early stops, on families of 1 and 40 cells."""
    rng = np.random.default_rng(9)
    seen_below = 0
    for _ in range(300):
        size = int(rng.choice([1, 40]))
        cvs = list(rng.choice([0.03, 0.08, 0.15, 0.30], size))
        changes = [-0.10] + [0.0] * (size - 1)
        n = int(rng.choice([5, 10, 15, 20]))
        v = compare_matrix(_family(rng, n, cvs, changes), fdr=FDR, cap=CAP)[0]
        if v.ci_high is not None and v.ci_high < 0:
            seen_below += 1
            assert v.outcome != "no-change" or (v.ci_low >= -v.min_effect_pct), v.words
    assert seen_below >= 50  # the draws do reach the case


def test_as_shipped_no_cell_stops_for_futility(monkeypatch):
    """Off as shipped: the same noisy family measures on to its cap. The family's
    rule, on as shipped, leaves it too: its 5 open cells' chances sum to 0.63."""
    monkeypatch.setattr(sequential, "FUTILE", 0.0)
    verdicts = compare_matrix(_family(np.random.default_rng(7), 5, [0.30] * 8), fdr=FDR, cap=CAP)
    assert not any(v.futile or v.budget_spent for v in verdicts)


def _standard_cell(n: int, cv: float, z: float) -> CellInput:
    """A cell whose candidate is its base moved down by exactly z standard errors
    (the base: n normal quantiles at log-sd cv), so its test is known in advance."""
    from scipy.special import ndtri
    q = ndtri((np.arange(n) + 0.5) / n)
    base = np.exp(cv * q / q.std(ddof=1))
    d = z * cv * math.sqrt(2 / n)
    return CellInput(CellKey("s", "h", "c", "d0", "fs", "g", "m"), list(base),
                     list(base * math.exp(-d)), "higher", MIN_EFFECT)


def _judged(cell: CellInput):
    (v,) = compare_matrix([cell], fdr=FDR, cap=CAP)
    return v, list(more_runs(Comparison(None, None, 0.05, [v], [], {}, {})).values())


def test_the_promising_zone_measures_on_only_a_cell_a_decision_is_in_reach_of(monkeypatch):
    """sequential.EXTEND (off as shipped): a cell still unsure at its cap measures
    on toward EXTEND times it only when its confirmed decisions by then are in
    reach on its trend (PROMISING); its looks' levels are spent over the
    reach from the first look, so q bounds it whether it extends or not."""
    slower = _standard_cell(CAP, 0.10, 2.2)  # -6.7%, CI below zero, not confirmable at 20
    v, wanted = _judged(slower)
    assert v.outcome == "suspected" and v.budget_spent and v.cap == CAP and not wanted
    assert v.level == pytest.approx(FDR / 4)  # shipped: the fourth of four looks' share
    monkeypatch.setattr(sequential, "EXTEND", 2)
    v, wanted = _judged(slower)
    assert v.outcome in ("suspected", "inconclusive") and not v.budget_spent
    assert v.cap == 2 * CAP and [(w.base, w.candidate) for w in wanted] == [(CAP + 5, CAP + 5)]
    assert v.level == pytest.approx(FDR / 8)  # the fourth of eight looks' share
    # A cell trending nowhere is not promising: it stops at the planned cap.
    v, wanted = _judged(_standard_cell(CAP, 0.10, 0.0))
    assert v.cap == CAP and not wanted
    # Nor one whose confirmation is out of reach (z 1.8 at 20: about 2.5 at 40,
    # below the last look's 2.6), though its estimate is below zero.
    v, wanted = _judged(_standard_cell(CAP, 0.10, 1.8))
    assert v.cap == CAP and v.budget_spent and not wanted
    # Past the cap a cell's cap is the reach; at the reach, unsure, its budget is spent.
    v, wanted = _judged(_standard_cell(CAP + 5, 0.10, 2.2))
    assert v.cap == 2 * CAP and [(w.base, w.candidate) for w in wanted] == [(CAP + 10, CAP + 10)]
    v, wanted = _judged(_standard_cell(2 * CAP, 0.10, 2.0))
    assert v.budget_spent
    assert v.cap == 2 * CAP and not wanted
    # The first look spends the reach's share too: half the shipped one.
    v, _ = _judged(_standard_cell(5, 0.10, 0.0))
    assert v.level == pytest.approx(FDR / 8)
