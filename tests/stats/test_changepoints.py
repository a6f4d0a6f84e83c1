"""change_points and candidates: planted steps found, flat noise quiet, the
selection test over a family, Otava as the reference. Whether a candidate is
a regression is the A/B of its segments' repetitions (iowatch.judging;
tests/webapp/test_regressions.py judges it against the store)."""
import numpy as np
import pytest

from iowatch.cells import CellKey
from iowatch.stats import History, candidates, change_points
from iowatch.vocabulary import DEFAULT_CAP as CAP, FDR, DEFAULT_MIN_EFFECT as MIN_EFFECT

KEY = CellKey("s", "h", "ssd", "d", "ext4", "g", "m")


def _steps(seed: int, noise: float = 2.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(100, noise, 40), rng.normal(120, noise, 30),
                           rng.normal(90, noise, 30)])


@pytest.mark.parametrize("seed", range(5))
def test_planted_steps_are_found_where_they_are(seed):
    cps = change_points(_steps(seed), min_magnitude_pct=MIN_EFFECT)
    assert [c.index for c in cps] == [40, 70]
    assert cps[0].change_pct == pytest.approx(20, abs=3) and cps[0].p_value < 0.01
    assert cps[1].change_pct == pytest.approx(-25, abs=3)


@pytest.mark.parametrize("seed", range(5))
def test_flat_noise_has_no_change_point(seed):
    rng = np.random.default_rng(100 + seed)
    assert change_points(rng.normal(100, 1, 120), min_magnitude_pct=MIN_EFFECT) == []


def test_candidates_carry_their_segments_and_selection_p():
    found = candidates([History(KEY, list(_steps(1)), 5.0)], fdr=FDR)[KEY]
    assert [(c.index, c.start, c.end) for c in found] == [(40, 10, 70), (70, 40, 100)]
    assert found[0].change_pct > 0 > found[1].change_pct
    assert all(c.p_selection <= 0.05 for c in found)


def test_a_small_step_below_the_minimum_effect_is_not_a_candidate():
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.normal(100, 0.5, 40), rng.normal(102, 0.5, 40)])
    assert [c.index for c in change_points(x, min_magnitude_pct=1)] == [40]
    assert candidates([History(KEY, list(x), 5.0)], fdr=FDR) == {}


@pytest.mark.parametrize("seed", range(1, 8))
def test_agrees_with_apache_otava_on_planted_steps(seed):
    """Otava is an optional extra (pyproject `otava`): this runs where it is installed.
    Seed 0 is left out: there Otava splits the first step in two (38 and 41)
    while this module finds it at 40, where it was planted. Otava states each
    point's change over its window's segments, this module over the segments
    between neighbouring points: the sizes agree within a point."""
    otava = pytest.importorskip("otava.analysis")
    x = _steps(seed, noise=1.0)
    theirs, _ = otava.compute_change_points(list(x), window_len=30, max_pvalue=0.01, min_magnitude=0.05)
    ours = change_points(x, window=30, max_pvalue=0.01, min_magnitude_pct=5)
    assert [c.index for c in ours] == [int(c.index) for c in theirs] == [40, 70]
    for a, b in zip(ours, theirs):
        assert a.change_pct == pytest.approx(b.stats.forward_change_percent(), abs=1.0)
        assert a.p_value < 0.01 and b.stats.pvalue < 0.01


# A nightly's family: 40 deciding series, 40 kernels each, lognormal noise of CV 5%.
def _family(seed: int, step: float | None = None, cv: float = 0.05):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(40):
        values = 1000 * np.exp(rng.normal(0, cv, 40))
        if step is not None and i == 0:
            values[30:] *= step  # the last 10 kernels slower
        out.append(History(CellKey("s", "h", "ssd", "d", "ext4", "g", f"m{i}"), list(values), 5.0))
    return out


def _regressed(found) -> set[str]:
    """Histories with a candidate step down (higher is better)."""
    return {k.metric for k, cps in found.items() if any(c.change_pct < 0 for c in cps)}


def test_a_family_of_flat_histories_raises_no_alert_though_the_chosen_splits_look_significant():
    """The detector picks each history's best split; the A/B test of that split
    alone ignores the choice. Without the selection test most of these nights
    would raise a regression somewhere (the control, computed below); with it,
    hardly a candidate step down survives, before any A/B."""
    from iowatch.stats import compare_matrix
    from iowatch.stats.verdict import CellInput
    alarms = naive = 0
    for seed in range(20):
        family = _family(1000 + seed)
        alarms += bool(_regressed(candidates(family, fdr=FDR)))
        cells = []
        for h in family:  # each chosen split, A/B between its neighbouring splits
            cps = [c.index for c in change_points(np.asarray(h.values), min_magnitude_pct=5)]
            for a, i, b in zip([0] + cps, cps, cps[1:] + [len(h.values)]):
                cells.append(CellInput(h.key, tuple(h.values[a:i]), tuple(h.values[i:b]), "higher", 5.0))
        naive += any(v.outcome == "regression" for v in compare_matrix(cells, family_size=40,
                                                                       fdr=FDR, cap=CAP))
    assert alarms <= 1, alarms
    assert naive >= 10, naive  # the control: what the A/B test of chosen splits says


@pytest.mark.parametrize("step, cv, at_least", [(0.85, 0.05, 18), (0.80, 0.10, 14)])
def test_a_real_step_in_one_history_of_forty_is_found(step, cv, at_least):
    found = sum("m0" in _regressed(candidates(_family(2000 + seed, step, cv),
                                              fdr=FDR)) for seed in range(20))
    assert found >= at_least, found
