"""The SNIA PTS steady-state rule that ends preconditioning (iowatch.stats.steady_state)."""
import pytest

from iowatch.stats.steady_state import steady_state

# IOPS of an SSD's rounds as preconditioning sees them: high while it has free
# blocks, falling as garbage collection starts, then level.
FRESH_THEN_LEVEL = [52000, 41000, 30500, 21000, 15800, 15200, 15500, 15100, 15400, 15300]


def test_a_level_window_is_steady_and_a_falling_one_is_not():
    assert steady_state(FRESH_THEN_LEVEL).held
    falling = steady_state(FRESH_THEN_LEVEL[:5])
    assert not falling.held and "fit moves" in falling.reason and "data range" in falling.reason
    # The decision reads the last window only: an early fall does not count against it.
    assert steady_state(FRESH_THEN_LEVEL[:9]).held


def test_the_slope_is_a_least_squares_fit_scaled_across_the_window():
    s = steady_state([100, 102, 104, 106, 108], window=5)
    assert s.slope == pytest.approx(2.0)
    # The fit moves 2 x 4 = 8 IOPS across the window: 7.4% of the mean 104.
    assert s.slope_excursion_pct == pytest.approx(100 * 8 / 104, abs=1e-3)
    assert s.held
    assert not steady_state([100, 102, 104, 106, 108], window=5, slope_pct_max=5).held


def test_a_flat_fit_with_a_wide_range_fails_on_the_excursion_alone():
    s = steady_state([100, 130, 100, 130, 100], window=5)
    assert s.slope_excursion_pct < 10 and s.data_excursion_pct == pytest.approx(100 * 30 / 112, abs=1e-3)
    assert not s.held and "data range" in s.reason and "fit moves" not in s.reason
    assert steady_state([100, 130, 100, 130, 100], window=5, excursion_pct_max=30).held


def test_fewer_rounds_than_a_window_are_not_steady_yet():
    s = steady_state([1000, 1000, 1000], window=5)
    assert not s.held and s.mean is None and "3 of the 5 rounds" in s.reason


def test_a_window_needs_two_rounds_and_a_dead_device_is_not_steady():
    with pytest.raises(ValueError, match="at least 2"):
        steady_state([1.0, 2.0], window=1)
    assert not steady_state([0, 0, 0], window=3).held
