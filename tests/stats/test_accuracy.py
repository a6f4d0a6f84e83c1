"""Simulated checks drawn from real samples, with a fixed seed: iowatch's false
alarms and detection at the default repetitions, beside the anchors' rules.

The samples are tests/fixtures/accuracy/real-samples.json (see its README);
bench/accuracy/simulate.py draws 40-cell checks from them and
bench/accuracy/run.py prints the full table. The draws are seeded, so each
figure here is a fixed number that a change to the verdict can move."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "accuracy"))

import simulate  # noqa: E402

TRIALS = 150
CALIBRATED = simulate.SAMPLES.with_name("real-samples-calibrated.json")
IN_MEMORY = simulate.SAMPLES.with_name("real-samples-in-memory.json")
VLAB = simulate.SAMPLES.with_name("real-samples-vlab.json")
FIXED = "iowatch, 5 a side: suspected or confirmed"
CONFIRMED = "iowatch, 5 a side: confirmed"
ADAPTIVE = "iowatch adaptive (5 to 20 a side): confirmed"


def _by_size(out: dict) -> dict:
    """{rule: {size bin: share of the slowed checks found}}, by the slowdown really achieved."""
    return {rule: {b: t.row()["detected"] for b, t in bins.items()}
            for rule, bins in out["_by_size"].items()}


def _rows(out: dict) -> dict:
    out.pop("_by_cell", None)
    out.pop("_by_size", None)
    return {rule: {c: t.row() for c, t in by.items()} for rule, by in out.items()}


@pytest.fixture(scope="module")
def real():
    """The collection made while other benchmarks loaded the machine (CV 17-55%)."""
    return _rows(simulate.run(simulate.load(), TRIALS, seed=11))


@pytest.fixture(scope="module")
def quiet():
    """The collection made on a quiet machine (CV 9-26%)."""
    return _rows(simulate.run(simulate.load(simulate.SAMPLES.with_name("real-samples-quiet.json")),
                              TRIALS, seed=13, anchors=False))


@pytest.fixture(scope="module")
def calibrated():
    """The collection whose throttles were calibrated by feedback to real 10/20/50% cuts."""
    return _rows(simulate.run(simulate.load(CALIBRATED), TRIALS, seed=17, anchors=False))


@pytest.fixture(scope="module")
def in_memory():
    """The collection with the loop images in memory (tmpfs), throttles calibrated by
    feedback, all its deciding cells: the random readers at CV 10-13%, the direct
    writer, the buffered readers and fs_mark at CV 19-67%."""
    out = simulate.run(simulate.load(IN_MEMORY), TRIALS, seed=19)
    return _rows(dict(out)), _by_size(out)


@pytest.fixture(scope="module")
def in_memory_quiet():
    """Checks drawn only from the in-memory collection's cells at CV <= 15% (ext4 and
    raw random-read IOPS and their ratio): the noise the issue's goals are set for."""
    cells = [c for c in simulate.load(IN_MEMORY) if c.aa.std(ddof=1) / c.aa.mean() <= 0.15]
    out = simulate.run(cells, TRIALS, seed=23)
    return cells, _rows(dict(out)), _by_size(out)


@pytest.fixture(scope="module")
def vlab():
    """Boots of one built kernel in the virtual lab (TCG), slowed by QEMU block throttling:
    the random readers at CV 6.5-7%, the direct writer and buffered readers of the
    150-IOPS hdd at CV 0.1%."""
    out = simulate.run(simulate.load(VLAB), TRIALS, seed=29)
    return _rows(dict(out)), _by_size(out)


@pytest.fixture(scope="module")
def model():
    """The noise the issue names: lognormal at a CV of 10%, slowdowns exact."""
    return _rows(simulate.run(simulate.lognormal_cells(0.10), TRIALS, seed=12, anchors=False))


def test_the_samples_are_real_and_some_cells_were_slowed():
    cells = simulate.load()
    assert len(cells) >= 5 and all(len(c.aa) >= 20 for c in cells)
    slowed = [c for c in cells if c.slowed]
    assert slowed and all(len(v) >= 20 for c in slowed for v in c.slowed.values())


def test_the_calibrated_collection_says_what_each_throttle_really_cut():
    doc = json.loads(CALIBRATED.read_text())
    calibrated = [c for c in doc["cells"] if c["calibrated_on"]]
    assert len(calibrated) == 3
    for c in calibrated:
        for cond, target in (("slow10", 10), ("slow20", 20), ("slow50", 50)):
            achieved = c["achieved_change_pct"][cond]
            # within_tolerance is the collection's own verdict on its +-3 points
            assert c["within_tolerance"][cond] == (abs(achieved + target) <= doc["calibration"]["tolerance_points"])
    for cond in ("slow10", "slow20", "slow50"):
        search = doc["calibration"]["conditions"][cond]
        assert search["final_rules"] and all(search["probes"].values())
        # the rules collected with are the rules the throttle section shows
        shown = {f"{dev.split(' ')[0]} {f.removeprefix('blkio.throttle.')}": v
                 for dev, files in doc["throttle"][cond].items() for f, v in files.items()}
        assert shown == search["final_rules"]


def test_on_the_calibrated_collection_false_alarms_stay_near_the_goal(calibrated):
    # False alarms: 3.9% [2.9, 5.3] of 1,000 clean checks on this collection (CV 20-40%,
    # taken beside a QEMU guest), at the goal, not under it: not asserted (see
    # test_clean_checks_hold_the_false_alarm_goal).
    assert calibrated[FIXED]["aa"]["clean cells flagged"] <= 0.03
    # Its slow50 condition holds the writer's -60.6% and ext4's -51.3% but also the
    # readers' -10.7% (the read_bps rule did not bite harder): 75% in the bench.
    assert calibrated[ADAPTIVE]["slow50"]["detected"] >= 0.60


# Clean checks for the false-alarm goal (issue 41 item 9): at most 5% of clean
# 40-cell checks raise a confirmed regression, held on enough checks that the
# bound is honest. Measured on 1,000 clean checks each (seed 11, with futility on at
# 5%; off, as shipped, the loaded collection gave 2.6% [1.8, 3.8] against 2.3%):
# the loaded collection 2.3% [1.5, 3.4], the quiet one 2.7% [1.9, 3.9], the
# virtual lab's 2.9% [2.0, 4.1]: a true 3.5% exceeds 5% in 1,000 checks with
# probability about 0.5%. The lognormal CV 10% model (5.0% [3.8, 6.5]), the
# calibrated collection (3.9% [2.9, 5.3]) and the in-memory one (4.1% [3.0, 5.5])
# sit at the goal, not designed under it: the FDR of 5% is spent whole on a clean
# family, so a test at 5% there would pass or fail by the draw. They are not
# asserted here, and the closing note of issue 41 says so.
CLEAN_CHECKS = 1000
DESIGNED = {"real": simulate.SAMPLES, "quiet": simulate.SAMPLES.with_name("real-samples-quiet.json"),
            "vlab": VLAB}


@pytest.mark.parametrize("collection", sorted(DESIGNED))
def test_clean_checks_hold_the_false_alarm_goal(collection):
    """... and on the same draws every anchor's rule at 5 a side raises more. The
    anchors' lowest on 1,000 checks: the virtual lab's LKP 7.3% [5.8, 9.1] (at 150
    checks iowatch's 4.7% against LKP's 4.0% was the draw's), the loaded
    collection's mmtests 9.6% [7.9, 11.6], the quiet one's mmtests 10.4% [8.7, 12.4]."""
    cells = simulate.load(DESIGNED[collection])
    rng = np.random.default_rng(11)
    alarms, theirs = 0, dict.fromkeys(simulate.ANCHORS, 0)
    for _ in range(CLEAN_CHECKS):
        d = simulate.draw_matrix(cells, rng, None, simulate.MATRIX_CELLS)
        verdicts, _ = simulate.iowatch_adaptive(d, rng)
        alarms += any(v.outcome == "regression" for v in verdicts)
        _, base, cand = simulate.iowatch_fixed(d, rng)
        for name, rule in simulate.ANCHORS.items():
            theirs[name] += any(rule(b, c, cell.direction) for b, c, cell in zip(base, cand, d.cells))
    assert alarms <= 0.05 * CLEAN_CHECKS, alarms
    assert all(alarms < n for n in theirs.values()), (alarms, theirs)


def _within(goal: float, n: int) -> float:
    """The goal plus two standard errors of a share measured on n draws: a share whose
    true value is the goal lands below this 97.7% of the time."""
    return goal + 2 * math.sqrt(goal * (1 - goal) / n)


def test_at_five_runs_few_clean_cells_are_even_suspected(real, quiet, model):
    # Goal: at most 2% of unchanged cells flagged (suspected or confirmed). The
    # suspicion test is one-sided at 2% a cell (SUSPECT_P), so on the moderated t the
    # share sits at the goal: 1.8-2.0% here, 150 checks x 39 clean cells a collection.
    for rows in (real, quiet, model):
        assert rows[FIXED]["aa"]["clean cells flagged"] <= _within(0.02, TRIALS * 39)


def test_iowatch_raises_fewer_false_alarms_per_check_than_every_anchor(real):
    ours = real[ADAPTIVE]["aa"]["false alarm per check"]
    anchors = {k: v["aa"]["false alarm per check"] for k, v in real.items()
               if not k.startswith("iowatch")}
    assert len(anchors) == 5
    assert all(ours < theirs for theirs in anchors.values()), anchors


def test_a_large_slowdown_is_confirmed(real, model):
    assert real[ADAPTIVE]["slow50"]["detected"] >= 0.90
    assert model[ADAPTIVE]["slow50"]["detected"] >= 0.99
    assert model[ADAPTIVE]["slow20"]["detected"] >= 0.95


def test_at_five_runs_a_20_percent_drop_is_flagged_on_the_model(model):
    # Goal: a lone -20% cell in a 40-cell check at least suspected in 90% at CV 10%.
    # The plain per-cell t reached about 80% (its variance on 8 degrees of freedom);
    # the moderated t borrows the family's and reaches the goal (bench/accuracy, 400
    # checks, has the figure); here within two standard errors of 150 checks.
    assert model[FIXED]["slow20"]["detected"] >= 0.90 - 2 * math.sqrt(0.9 * 0.1 / TRIALS)


def test_on_the_quiet_machine_the_throttled_cells_are_found(quiet):
    # The throttles cut more than their nominal size there (the writer 24.5, 30.9
    # and 55%; see tests/fixtures/accuracy/README.md): these are those cells.
    assert quiet[ADAPTIVE]["slow10"]["detected"] >= 0.80
    assert quiet[ADAPTIVE]["slow20"]["detected"] >= 0.95
    assert quiet[FIXED]["slow20"]["detected"] >= 0.90


def test_on_in_memory_noise_the_goals_hold_on_real_slowdowns_at_cv_10_percent(in_memory_quiet):
    """The issue's goals for a 40-cell check, on real runs and real throttled slowdowns of
    the cells at CV <= 15% (ext4 -13.8/-24.3/-54.3%, raw -21.9/-32.9/-59.6%: the
    fixture README has each)."""
    cells, rows, by_size = in_memory_quiet
    assert {c.name.split(" ")[-1] for c in cells} == {"read.iops", "ratio.fs_to_raw"}
    assert rows[ADAPTIVE]["aa"]["false alarm per check"] <= 0.05
    assert rows[FIXED]["aa"]["clean cells flagged"] <= _within(0.02, TRIALS * 39)
    assert by_size[ADAPTIVE]["5-15%"] >= 0.80      # -10%: confirmed >= 80%
    assert by_size[ADAPTIVE]["15-25%"] >= 0.95     # -20%: confirmed >= 95%
    assert by_size[FIXED]["15-25%"] >= 0.90        # -20% at 5 a side: flagged >= 90%
    assert by_size[ADAPTIVE]["40% or more"] >= 0.99


def test_on_the_whole_in_memory_collection_false_alarms_hold_and_big_drops_are_found(in_memory):
    # With the noisy cells too (buffered readers at CV 67%), the false-alarm goals hold,
    # and a real slowdown of 25% or more is confirmed; 10-20% on a cell at CV 38-67% is
    # not (docs/verdicts.md gives the figures).
    rows, by_size = in_memory
    # False alarms: 4.1% [3.0, 5.5] of 1,000 clean checks, at the goal, not under it:
    # not asserted (see test_clean_checks_hold_the_false_alarm_goal).
    assert rows[FIXED]["aa"]["clean cells flagged"] <= _within(0.02, TRIALS * 39)
    assert by_size[ADAPTIVE]["25-40%"] >= 0.95
    assert by_size[ADAPTIVE]["40% or more"] >= 0.99


def test_on_in_memory_noise_iowatch_is_above_every_anchor(in_memory, in_memory_quiet):
    """Fewer false alarms per check than every anchor's rule, and at least as many
    real 5-15% and 15-25% slowdowns found as each of them."""
    rows, by_size = in_memory
    _, quiet_rows, quiet_by_size = in_memory_quiet
    anchors = [k for k in rows if not k.startswith("iowatch")]
    assert len(anchors) == 5
    for rule in anchors:
        assert rows[ADAPTIVE]["aa"]["false alarm per check"] < rows[rule]["aa"]["false alarm per check"], rule
        assert quiet_rows[ADAPTIVE]["aa"]["false alarm per check"] < quiet_rows[rule]["aa"]["false alarm per check"], rule
        for size in ("5-15%", "15-25%"):
            assert by_size[ADAPTIVE][size] >= by_size[rule][size], (rule, size)
            assert quiet_by_size[ADAPTIVE][size] >= quiet_by_size[rule][size], (rule, size)


def test_the_virtual_lab_collection_is_real_boots_with_real_slowdowns():
    doc = json.loads(VLAB.read_text())
    assert doc["guest"]["accel"] and set(doc["completed_boots"]) == {"aa", "slow10", "slow20", "slow50"}
    assert all(b["status"] == "passed" for b in doc["boots"])
    for cell in doc["cells"]:
        for cond, values in cell["samples"].items():
            boots = cell["boot_of_samples"][cond]
            assert len(boots) == len(values) >= 10
            # every sample's boot ran under its condition, and the conditions were interleaved
            assert {doc["boots"][i]["condition"] for i in boots} == {cond}
        if cell["calibrated_on"]:
            changes = cell["achieved_change_pct"]
            assert changes["slow50"] < changes["slow20"] < changes["slow10"] < 0, cell


def test_in_the_virtual_lab_the_goals_hold_on_real_slowdowns(vlab):
    """Every deciding cell of the vlab collection is at CV <= 15%: the issue's goals by the
    slowdown really achieved (the fixture README has each cell's)."""
    rows, by_size = vlab  # its false alarms: test_clean_checks_hold_the_false_alarm_goal
    assert rows[FIXED]["aa"]["clean cells flagged"] <= _within(0.02, TRIALS * 39)
    assert by_size[ADAPTIVE]["5-15%"] >= 0.80
    assert by_size[ADAPTIVE]["15-25%"] >= 0.95
    assert by_size[FIXED]["15-25%"] >= 0.90
    assert by_size[ADAPTIVE]["40% or more"] >= 0.99
    # Its false alarms beside the anchors': test_clean_checks_hold_the_false_alarm_goal.
