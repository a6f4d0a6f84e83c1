"""`iowatch check` as it boots, on boot-clustered simulated checks with a fixed
seed (issue 24 item 1): every round's repetitions of a side in boots of at
most check.REPS_PER_BOOT (round 0 in two boots or more), each value with its
boot and round as the check gives them to compare_sides (bench/accuracy/check_boots.py; the
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

# Clean checks a share of between-boot variance. The goals are held as they are
# (issue 41 item 9), with enough checks that the bound is honest, not widened:
# - false alarms <= 5% a clean check, designed for 3.5%: at 1,000 checks a true
#   3.5% exceeds 5% with probability about 0.5% (binomial);
# - "no change" >= 90%: measured 92.1% [91.0, 93.1] at 10% between boots and
#   91.9% [90.8, 92.9] at 25% (2,400 checks each, seeds 24-29, docs/verdicts.md),
#   so at 1,000 checks a true 92% falls under 90% with probability about 1%.
# The seed is the one the test had; no seed was chosen because it passes.
CLEAN = 1000
GOAL = 0.05


@pytest.fixture(scope="module")
def model():
    return simulate.exact_slowdowns(simulate.lognormal_cells(0.10))


@pytest.fixture(scope="module", params=[0.10, 0.25])
def clean(request, model):
    out = check_boots.run(model, CLEAN, 24, request.param, paths=(check_boots.SHIPPED,),
                          conditions=())
    return out[check_boots.SHIPPED]


def test_clean_checks_in_boots_stay_within_the_rate(clean):
    assert clean.clean == CLEAN
    assert clean.fa <= GOAL, clean.states


def test_clean_checks_in_boots_end_no_change(clean):
    assert clean.share("no-change") >= 0.90, clean.states
    # A boot a repetition: as many boots as runs a side, the first round's 5 at least.
    assert clean.boots == clean.runs and clean.runs / clean.checks >= simulate.FIRST


def test_a_50_percent_slowdown_is_confirmed(model):
    out = check_boots.run(model, 100, 25, 0.10, paths=(check_boots.SHIPPED,), conditions=("slow50",))
    assert out[check_boots.SHIPPED].detected("slow50") >= 0.95


@pytest.mark.parametrize("share", [0.10, 0.25])
def test_a_20_percent_slowdown_in_boots_is_confirmed_95_percent(model, share):
    """Measured 98.75% at 10% and 96.75% at 25% between boots (400 checks, seeds
    26-29, docs/verdicts.md): at 1,000 checks a true 96.75% falls under 95% with
    probability about 0.1% (binomial); 100 checks, as before, could not tell."""
    out = check_boots.run(model, CLEAN, 26, share, paths=(check_boots.SHIPPED,),
                          conditions=("slow20",))
    assert out[check_boots.SHIPPED].detected("slow20") >= 0.95


def test_two_a_boot_would_not_reach_it_at_25_percent(model):
    """Why REPS_PER_BOOT is 1: at 2 a boot the boot-means t has half the
    degrees of freedom, and a -20% cell falls short with 25% between boots."""
    two = "check, <=2 a boot"
    out = check_boots.run(model, 100, 26, 0.25, paths=(two,), conditions=("slow20",))
    assert out[two].detected("slow20") < 0.95
