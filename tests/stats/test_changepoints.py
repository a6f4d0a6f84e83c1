"""change_points: planted steps found, flat noise quiet, Otava as the reference."""
import numpy as np
import pytest

from iowatch.stats import change_points, confirmed_change_points


def _steps(seed: int, noise: float = 2.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(100, noise, 40), rng.normal(120, noise, 30),
                           rng.normal(90, noise, 30)])


@pytest.mark.parametrize("seed", range(5))
def test_planted_steps_are_found_where_they_are(seed):
    cps = change_points(_steps(seed))
    assert [c.index for c in cps] == [40, 70]
    assert cps[0].change_pct == pytest.approx(20, abs=3) and cps[0].p_value < 0.01
    assert cps[1].change_pct == pytest.approx(-25, abs=3)


@pytest.mark.parametrize("seed", range(5))
def test_flat_noise_has_no_change_point(seed):
    rng = np.random.default_rng(100 + seed)
    assert change_points(rng.normal(100, 1, 120)) == []


def test_confirmed_change_points_carry_the_ab_verdict():
    x = _steps(1)
    confirmed = confirmed_change_points(x, "higher", 5)
    assert [(c.index, c.verdict.outcome) for c in confirmed] == [(40, "improvement"), (70, "regression")]
    # Lower is better: the same steps read the other way round.
    assert [c.verdict.outcome for c in confirmed_change_points(x, "lower", 5)] == ["regression", "improvement"]


def test_a_small_step_below_the_minimum_effect_is_not_confirmed():
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.normal(100, 0.5, 40), rng.normal(102, 0.5, 40)])
    assert [c.index for c in change_points(x, min_magnitude_pct=1)] == [40]
    assert confirmed_change_points(x, "higher", 5) == []


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
