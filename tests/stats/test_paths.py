"""Every path of the product on simulated 40-cell checks with a fixed seed (issue 24):
`iowatch check`'s adaptive loop, a fixed 5 a side and `iowatch run --against` a
fixed base, on the noise model the goals are set for (lognormal, CV 10%, exact
slowdowns that keep their noise). bench/accuracy/run.py --paths prints the full
table; the draws here are seeded, so each figure is a fixed number that a change
to the verdict can move."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "accuracy"))

import simulate  # noqa: E402

CLEAN = 200  # clean checks per path: a share near 90% is then measured to about +-2 points


@pytest.fixture(scope="module")
def model():
    return simulate.exact_slowdowns(simulate.lognormal_cells(0.10))


def test_a_clean_check_ends_no_change(model):
    """No clean check ended "no change" before: 13-17% of unchanged cells stayed
    unsure at 20 a side, so every clean check ended unsure or suspected."""
    out = simulate.run_paths(model, CLEAN, 42, simulate.Boots(), paths=("check adaptive",),
                             anchors=False, conditions=())
    t = out["check adaptive"]
    assert t.clean == CLEAN
    assert t.share("no-change") >= 0.90, t.states
    assert t.share("suspected") <= 0.05 and t.share("unsure") == 0, t.states
    assert t.fa <= 0.05


def test_run_against_a_fixed_base_keeps_false_alarms_within_the_rate(model):
    """`iowatch run --against` a fixed 5-run base: the candidate grows to 20, the
    base cannot. Spending by look number spent the second look's level three
    times (9.5% false alarms per clean 40-cell check); spending by information
    keeps it within 5%."""
    out = simulate.run_paths(model, CLEAN, 7, simulate.Boots(), paths=("run --against",),
                             anchors=False, conditions=())
    t = out["run --against"]
    assert t.clean == CLEAN and t.runs / t.checks > simulate.AGAINST_BASE  # the candidate grew
    assert t.fa <= 0.05, t.states
    assert t.share("unsure") == 0, t.states  # at the candidate's cap the cell is decided


BOOT_CHECKS = 1000


@pytest.mark.parametrize("share", [0.10, 0.25])
def test_boot_clustered_clean_checks_stay_clean_and_end_no_change(model, share):
    """Repetitions nested in boots (2 a boot, each round new boots), 10% and 25%
    of the variance between boots: judged as independent repetitions, the issue
    measured 28.5% and 74% false alarms per clean check; on boot means the
    adaptive check stays within the rate and ends "no change". The goals are
    held as they are, on enough checks that the bound is honest (issue 41 item
    9): at BOOT_CHECKS = 1,000 a true 3.5% (the design) exceeds 5% with
    probability about 0.5%. Measured on this seed (the one the test had, not
    chosen to pass), 2026-11-28: false alarms 4.4% [3.3, 5.9] at 10% between
    boots and 3.2% [2.3, 4.5] at 25%; "no change" 92.8% [91.0, 94.2] and
    94.3% [92.7, 95.6] (95% Wilson intervals). At 10% the rate is above the
    3.5% the goal was designed for: the test can fail on a change that moves
    it little."""
    out = simulate.run_paths(model, BOOT_CHECKS, 102, simulate.Boots(share, 2),
                             paths=("check adaptive",), anchors=False, conditions=())
    t = out["check adaptive"]
    assert t.fa <= 0.05, t.states
    assert t.share("no-change") >= 0.90, t.states


def test_boot_clustered_a_20_percent_slowdown_is_confirmed(model):
    """On 1,000 checks (100 before, which could not tell 94% from 96%): measured
    96.3% [94.9, 97.3] on this seed with the verdict designed at 3.5% (stop 51);
    a true 96.3% falls under 95% at 1,000 checks with probability about 1.5%."""
    out = simulate.run_paths(model, BOOT_CHECKS, 44, simulate.Boots(0.10, 2),
                             paths=("check adaptive",), anchors=False, conditions=("slow20",))
    assert out["check adaptive"].detected("slow20") >= 0.95


def test_the_drift_path_speeds_up_both_sides_from_its_round_and_blocks_only_when_told(model):
    """bench/accuracy's drift path (issue 24 item 2): from the third round of a
    check (round 2) the machine is twice as fast on both sides; `check
    adaptive, blocked` gives the rounds to the verdict, `check adaptive` pools."""
    import numpy as np
    boots = simulate.Boots(0.0, 2, drift=2.0)
    pool = model[0].aa
    side = simulate.SideDraw(pool, boots, np.random.default_rng(0), "b", "higher")
    side.grow(5, 0)
    side.grow(5, 2)
    assert side.rounds == [0] * 5 + [2] * 5
    assert min(side.values[5:]) >= 2 * min(pool) and max(side.values[:5]) <= max(pool)
    slow = simulate.SideDraw(pool, boots, np.random.default_rng(0), "b", "lower")
    slow.grow(5, 2)
    assert max(slow.values) <= max(pool) / 2
    rng = np.random.default_rng(3)
    seen = {path: set() for path in simulate.DRIFT_PATHS}
    for _ in range(20):
        d = simulate.draw_matrix(model, rng, None)
        for path in simulate.DRIFT_PATHS:
            verdicts, _ = simulate.judge_path(path, d, rng, boots)
            seen[path] |= {v.blocked for v in verdicts if min(v.base.n, v.candidate.n) > 10}
    assert seen["check adaptive"] == {False} and True in seen[simulate.BLOCKED]
