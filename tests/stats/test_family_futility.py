"""The family's futility (issue 41 item 3): a comparison's still-wanted cells stop
together when the decisions they may still reach by the cap, summed, are too
few to boot the variant again; a lone promising cell keeps them all going.

The rule is iowatch.stats.sequential.family_futile (on as shipped,
FAMILY_FUTILE = FAMILY_BOUND, 0.3); compare_matrix applies it. bench/accuracy/futility.py and
bench/accuracy/CHECK-STOP.md measure what it buys and costs."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from iowatch.cells import CellKey
from iowatch.judging import Comparison, more_runs
from iowatch.stats import CellInput, compare_matrix, sequential
from iowatch.stats.sequential import decision_chances, family_futile
from iowatch.vocabulary import DEFAULT_CAP as CAP, FDR, DEFAULT_MIN_EFFECT as MIN_EFFECT

LOG5 = math.log1p(0.05)
SE5 = 0.10 * math.sqrt(2 / 5)  # CV 10% at 5 a side


def _cell(i: int, base, cand) -> CellInput:
    return CellInput(CellKey("s", "h", "c", f"d{i}", "fs", "g", "m"), list(base), list(cand),
                     "higher", MIN_EFFECT)


def _clean(rng, cells: int, n: int = 5, cv: float = 0.10) -> list[CellInput]:
    """Clean cells trending nowhere: the candidate is the base's values reordered,
    so every difference is zero and only the noise is left."""
    out = []
    for i in range(cells):
        base = np.exp(rng.normal(0, cv, n))
        out.append(_cell(i, base, rng.permutation(base)))
    return out


def _chances(d: float, n: float = 5, se: float = SE5, family: int = 40):
    return decision_chances(d, se, n, worse_sign=-1, delta=LOG5, cap=CAP, q=FDR, family=family)


def test_the_chances_follow_the_trend():
    flat, slow = _chances(0.0), _chances(math.log(0.85))
    assert flat is not None and slow is not None
    assert max(flat) < 0.01          # a CV 10% cell at zero: nothing in reach
    assert slow[1] > 0.5 > slow[2]   # -15% at 5 a side: a confirmed slowdown is likely
    assert _chances(0.0, n=CAP) is None and _chances(0.0, se=0.0) is None


def test_the_sum_of_the_family_decides():
    quiet = [(0.0, 0.005, 0.005)] * 40          # 40 hopeless cells: 0.4 decisions to come
    assert family_futile(quiet, bound=0.5)
    assert not family_futile(quiet, bound=0.3)
    # One promising cell among them keeps the whole family measuring.
    assert not family_futile([(0.0, 0.6, 0.0)] + quiet[1:], bound=0.5)
    # A cell that may not stop (before the first look, no noise) keeps it going too.
    assert not family_futile([None] + quiet[1:], bound=0.5)
    assert not family_futile([], bound=0.5)
    assert not family_futile(quiet, bound=0.0)  # off


def test_on_as_shipped():
    """Shipped at the bound it was designed and measured at: a clean 40-cell
    family at the first look stops without the bound being set."""
    assert sequential.FAMILY_FUTILE == sequential.FAMILY_BOUND == 0.3
    verdicts = compare_matrix(_clean(np.random.default_rng(3), 40), fdr=FDR, cap=CAP)
    assert any(v.futile for v in verdicts)


def test_a_clean_family_stops_whole_and_says_why(monkeypatch):
    monkeypatch.setattr(sequential, "FAMILY_FUTILE", sequential.FAMILY_BOUND)
    verdicts = compare_matrix(_clean(np.random.default_rng(3), 40), fdr=FDR, cap=CAP)
    assert more_runs(Comparison(None, None, 0.05, verdicts, [], {}, {})) == {}
    stopped = [v for v in verdicts if v.futile]
    assert stopped, [v.words for v in verdicts]
    for v in stopped:
        assert v.budget_spent and v.needs_runs is None and v.outcome != "regression"
        assert "stopped at 5 runs a side: no decision is in reach by the cap of 20" in v.words


@pytest.mark.parametrize("slowdown", [0.12, 0.15])
def test_one_promising_cell_keeps_the_family_measuring(slowdown, monkeypatch):
    """A slowed cell not yet confirmed at the first look: every cell still unsure
    goes on, the clean ones included (a boot runs them all anyway)."""
    monkeypatch.setattr(sequential, "FAMILY_FUTILE", sequential.FAMILY_BOUND)
    rng = np.random.default_rng(3)
    cells = _clean(rng, 39)
    base = np.exp(rng.normal(0, 0.10, 5))
    cells.append(_cell(39, base, rng.permutation(base) * (1 - slowdown)))
    verdicts = compare_matrix(cells, fdr=FDR, cap=CAP)
    assert verdicts[39].outcome in ("suspected", "inconclusive"), verdicts[39].words
    assert not any(v.futile for v in verdicts)
    wanted = more_runs(Comparison(None, None, 0.05, verdicts, [], {}, {}))
    assert verdicts[39].key.location in wanted and len(wanted) > 1


def test_the_family_rule_never_changes_what_is_confirmed(monkeypatch):
    """Stopping only takes looks away: at any one look the cells confirmed are
    the same with the rule on and off."""
    rng = np.random.default_rng(41)
    for _ in range(30):
        cvs = list(rng.choice([0.03, 0.10, 0.30], 40))
        cells = []
        for i, cv in enumerate(cvs):
            change = float(rng.choice([0.0, 0.0, 0.0, -0.1, -0.2, 0.2]))
            n = int(rng.choice([5, 10, 15]))
            cells.append(_cell(i, np.exp(rng.normal(0, cv, n)),
                               np.exp(rng.normal(math.log1p(change), cv, n))))
        monkeypatch.setattr(sequential, "FAMILY_FUTILE", sequential.FAMILY_BOUND)
        on = compare_matrix(cells, fdr=FDR, cap=CAP)
        monkeypatch.setattr(sequential, "FAMILY_FUTILE", 0.0)
        off = compare_matrix(cells, fdr=FDR, cap=CAP)
        confirmed = lambda vs: [(v.key, v.outcome) for v in vs  # noqa: E731
                                if v.outcome in ("regression", "improvement")]
        assert confirmed(on) == confirmed(off)


def test_a_boot_means_test_may_not_stop_for_futility():
    """On boot means (2 repetitions a boot or more) the family's rule cost -20%
    found on test_paths' draw (96.3% to 94.0%) even from 5 boots a side: such a
    cell may not stop (bench/accuracy/CHECK-STOP.md)."""
    chances = lambda boots: decision_chances(0.0, SE5, 5, worse_sign=-1, delta=LOG5, cap=CAP,  # noqa: E731
                                             q=FDR, family=40, boots=boots)
    assert chances(3) is None and chances(5) is None and chances(10) is None
    assert chances(None) == _chances(0.0) is not None


def test_a_clean_family_in_boots_of_two_measures_on(monkeypatch):
    """The clean family that stops at its first look as independent repetitions
    measures on when its repetitions came two a boot."""
    monkeypatch.setattr(sequential, "FAMILY_FUTILE", sequential.FAMILY_BOUND)
    cells = _clean(np.random.default_rng(3), 40, n=10)
    alone = compare_matrix(cells, fdr=FDR, cap=CAP)
    assert any(v.futile for v in alone), [v.words for v in alone]
    boots = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    booted = compare_matrix([replace(c, base_boots=boots, candidate_boots=boots) for c in cells],
                            fdr=FDR, cap=CAP)
    assert not any(v.futile for v in booted)
    assert more_runs(Comparison(None, None, 0.05, booted, [], {}, {}))


def test_a_small_family_is_held_to_the_per_cell_chance():
    """At 0.3 whatever the size, a study of one or three deciding cells lost 3
    to 3.5 points of -20% found; the bound is at most CHANCE a cell."""
    assert sequential.family_bound(1) == pytest.approx(sequential.CHANCE)
    assert sequential.family_bound(3) == pytest.approx(3 * sequential.CHANCE)
    assert sequential.family_bound(6) == sequential.family_bound(40) == sequential.FAMILY_BOUND
    assert sequential.family_bound(1, bound=0.0) == 0.0


def test_one_cell_with_a_chance_above_the_per_cell_bound_measures_on(monkeypatch):
    """A lone cell whose chances sum to between 0.06 and 0.25 would stop under a
    bound of 0.3; compare_matrix holds its family of one to CHANCE (0.05)."""
    monkeypatch.setattr(sequential, "FAMILY_FUTILE", sequential.FAMILY_BOUND)
    rng = np.random.default_rng(5)
    base = np.exp(rng.normal(0, 0.10, 5))
    cand = rng.permutation(base)
    for slower in np.linspace(0.0, 0.12, 121):
        cell = _cell(0, base, cand * (1 - slower))
        se = float(np.sqrt(np.var(np.log(base), ddof=1) / 5 + np.var(np.log(cand), ddof=1) / 5))
        c = decision_chances(math.log1p(-slower), se, 5, worse_sign=-1, delta=LOG5, cap=CAP, q=FDR)
        if 0.06 < sum(c) < 0.25:
            break
    else:
        pytest.fail("no slowdown gives a lone cell chances between 0.06 and 0.25")
    (held,) = compare_matrix([cell], fdr=FDR, cap=CAP)
    assert not held.futile, held.words
    monkeypatch.setattr(sequential, "family_bound", lambda size, bound=None: sequential.FAMILY_BOUND)
    (loose,) = compare_matrix([cell], fdr=FDR, cap=CAP)
    assert loose.futile, loose.words
