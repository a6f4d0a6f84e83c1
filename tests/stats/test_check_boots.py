"""`iowatch check` as it boots, on boot-clustered simulated checks with a fixed
seed (issue 24 item 1): round 0 in two boots a side (3 and 2 repetitions),
every later round one more boot a side, each value with its boot and round
as the check gives them to compare_sides (bench/accuracy/check_boots.py; the
table is `bench/accuracy/run.py --paths`). 40-cell checks of the lognormal
CV 10% model with exact slowdowns that keep their noise."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "accuracy"))

import check_boots  # noqa: E402
import simulate  # noqa: E402

CLEAN = 200


@pytest.fixture(scope="module")
def model():
    return simulate.exact_slowdowns(simulate.lognormal_cells(0.10))


@pytest.mark.parametrize("share", [0.10, 0.25])
def test_clean_checks_in_boots_stay_within_the_rate(model, share):
    out = check_boots.run(model, CLEAN, 24, share, paths=(check_boots.TWO,), conditions=())
    t = out[check_boots.TWO]
    assert t.clean == CLEAN
    assert t.fa <= 0.05, t.states
    assert t.share("no-change") >= 0.90, t.states
    # Every side is two boots from the first look: at least 2 a side on average, and
    # the first round's 5 repetitions a side are the study's total.
    assert t.boots / t.checks >= 2 and t.runs / t.checks >= simulate.FIRST


def test_a_50_percent_slowdown_is_confirmed(model):
    out = check_boots.run(model, 100, 25, 0.10, paths=(check_boots.TWO,), conditions=("slow50",))
    assert out[check_boots.TWO].detected("slow50") >= 0.95


@pytest.mark.xfail(strict=True, reason="not met: a real check adds one boot a side a round, 5 boots "
                   "a side at 20 runs (boot-means t on 8 df over a 40-cell family); measured 54% at "
                   "10% between boots (docs/verdicts.md, \"The check's boots\")")
def test_a_20_percent_slowdown_in_boots_is_confirmed_95_percent(model):
    out = check_boots.run(model, 100, 26, 0.10, paths=(check_boots.TWO,), conditions=("slow20",))
    assert out[check_boots.TWO].detected("slow20") >= 0.95
