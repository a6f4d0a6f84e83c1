"""The look schedule of adaptive repetitions, and confounders."""
import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.special import ndtri

from iowatch.stats import confounders, sequential
from iowatch.stats.confounders import kernel_flags
from iowatch.stats.sequential import (LINEAR, POCOCK, alpha_spent, effective_n, look_index,
                                      look_level, looks, next_target)
from iowatch.vocabulary import DEFAULT_CAP as CAP, FDR, DEFAULT_MIN_EFFECT as MIN_EFFECT


def _ever_crosses(levels, times, draws=400_000, seed=5):
    """The share of clean Brownian paths (z at information `times`) that cross
    one-sided `levels` at any look, with its standard error."""
    rng = np.random.default_rng(seed)
    steps = np.diff([0.0, *times])
    score = np.cumsum(rng.standard_normal((draws, len(times))) * np.sqrt(steps), axis=1)
    z = score / np.sqrt(times)
    crossed = (z > -ndtri(np.asarray(levels))).any(axis=1).mean()
    return crossed, math.sqrt(crossed * (1 - crossed) / draws)


def test_the_looks_spend_no_more_than_the_rate():
    """As shipped each look tests at its share of q (a union bound): a clean
    cell followed through every look (simulated, 400,000 paths) crosses one of
    them less often than q."""
    levels = [look_level(n, 0.05, cap=CAP) for n in (5, 10, 15, 20)]
    assert sum(levels) == pytest.approx(0.05)
    assert all(a >= b - 1e-12 for a, b in zip(levels, levels[1:])) and all(a > 0 for a in levels)
    rate, se = _ever_crosses(levels, [0.25, 0.5, 0.75, 1.0])
    assert rate + 4 * se < 0.05
    assert alpha_spent(1, 0.05) == 0.05
    # Every count belongs to one look; past the cap it is the last look's level.
    assert [look_index(n, cap=CAP) for n in (1, 5, 6, 10, 11, 20, 60)] == [1, 1, 2, 2, 3, 4, 4]
    assert look_level(3, 0.05, cap=CAP) == look_level(5, 0.05, cap=CAP)
    assert look_level(60, 0.05, cap=CAP) == levels[-1]


def test_the_exact_levels_spend_the_rate_itself(monkeypatch):
    """sequential.EXACT (off as shipped): each look's level is solved from the
    looks' joint distribution, so a clean cell crosses one with chance q, not
    less (simulated), the first look at its share and the later ones above it:
    the last twice its share at four looks, 4.5 times at twelve (a cap of 60)."""
    monkeypatch.setattr(sequential, "EXACT", True)
    times = [0.25, 0.5, 0.75, 1.0]
    for shape, q in ((LINEAR, FDR), (POCOCK, 0.05), (LINEAR, 0.05)):
        levels = [look_level(n, q, cap=CAP, shape=shape) for n in (5, 10, 15, 20)]
        rate, se = _ever_crosses(levels, times)
        assert abs(rate - q) < 4 * se, (shape, q, rate)
        assert levels[0] == pytest.approx(alpha_spent(0.25, q, shape))
    linear = [look_level(n, FDR, cap=CAP) for n in (5, 10, 15, 20)]
    assert linear == pytest.approx([0.00875, 0.01148, 0.01467, 0.01807], abs=1e-5)
    assert look_level(60, FDR, cap=60) > 4.5 * FDR / 12
    levels = [look_level(n, 0.05, cap=40) for n in range(5, 41, 5)]
    rate, se = _ever_crosses(levels, [k / 8 for k in range(1, 9)])
    assert abs(rate - 0.05) < 4 * se
    with pytest.raises(ValueError, match="must increase"):
        sequential.nominal_levels((0.5, 0.5), FDR)


def test_both_spending_shapes_spend_the_rate_linear_evenly_pocock_early():
    """The deciding cells spend linearly (q/4 a look at a cap of 20); the
    canaries Pocock's way, most at the first look (iowatch.judging.policy)."""
    linear = [look_level(n, FDR, cap=CAP, shape=LINEAR) for n in (5, 10, 15, 20)]
    pocock = [look_level(n, 0.05, cap=CAP, shape=POCOCK) for n in (5, 10, 15, 20)]
    assert linear == pytest.approx([FDR / 4] * 4) and sum(pocock) == pytest.approx(0.05)
    assert pocock == pytest.approx([0.01787, 0.01314, 0.01039, 0.00860], abs=1e-5)
    with pytest.raises(ValueError, match="spending 'obf'"):
        alpha_spent(0.5, 0.05, "obf")


def test_next_target_walks_the_schedule_up_to_the_cap():
    assert [next_target(n, cap=CAP) for n in (0, 3, 5, 7, 10, 15, 19, 20)] == \
        [5, 5, 10, 10, 15, 20, 20, 20]
    assert next_target(5, cap=8) == 8
    # A fixed side of 5 and a growing side count as fewer runs than the larger.
    assert effective_n(5, 5) == 5 and effective_n(5, 20) == 8


def test_a_larger_cap_adds_looks_and_still_spends_no_more_than_the_rate(monkeypatch):
    from iowatch.stats import CellInput, CellKey, compare_matrix, sequential
    assert looks(cap=CAP) == 4 and looks(40) == 8 and looks(22) == 5
    levels = [look_level(n, 0.05, cap=40) for n in range(5, 41, 5)]
    assert sum(levels) == pytest.approx(0.05) and levels[0] < look_level(5, 0.05, cap=CAP)
    assert [next_target(n, cap=40) for n in (20, 35, 40)] == [25, 40, 40]
    # A cell's own cap (its study's max_runs) overrides the family's default.
    key = CellKey("s", "h", "c", "d", "fs", "g", "m")
    values = [100, 140, 70, 120, 90] * 4  # 20 a side, the same spread both sides
    cells = [CellInput(key, values, values, "higher", MIN_EFFECT),
             CellInput(key, values, values, "higher", MIN_EFFECT, cap=40)]
    at20, at40 = compare_matrix(cells, fdr=FDR, cap=CAP)
    assert (at20.cap, at40.cap) == (20, 40)
    # At its cap the cell ends "no change within X%" (issue 24: not "unsure" for ever).
    # With budget left nothing is in reach by 40 (it trends at zero, at this noise):
    # the family's futility, on as shipped, stops it at 20 and says so.
    assert (at20.outcome, at40.outcome) == ("no-change", "no-change") and at20.within_pct
    assert at20.budget_spent and not at20.futile and at40.futile and at40.needs_runs is None
    assert "stopped at 20 runs a side: no decision is in reach by the cap of 40" in at40.words
    # A trend that 20 more runs a side could confirm keeps it measuring.
    (trend,) = compare_matrix([CellInput(key, values, [v * 0.88 for v in values], "higher",
                                         MIN_EFFECT, cap=40)], fdr=FDR, cap=CAP)
    # Its estimate of runs for the minimum effect is past the cap, so it says so (issue 44).
    assert trend.outcome == "inconclusive" and not trend.budget_spent and not trend.futile
    assert trend.needs_runs is None and "not decidable within the cap (40) at this noise" in trend.words
    # Without futility the trendless cell is unsure too, and says its own cap cannot
    # decide it at this noise (issue 44: no estimate of runs past the cap).
    monkeypatch.setattr(sequential, "FAMILY_FUTILE", 0.0)
    _, at40 = compare_matrix(cells, fdr=FDR, cap=CAP)
    assert at40.outcome == "inconclusive" and not at40.budget_spent and at40.needs_runs is None
    assert "not decidable within the cap (40) at this noise" in at40.words


BASE = {
    "kernel": {"release": "6.12", "cmdline": "quiet", "config": {
        "CONFIG_XFS_DEBUG": "n", "CONFIG_PROVE_LOCKING": "n", "CONFIG_PREEMPT_NONE": "y", "CONFIG_HZ": "250"}},
    "tools": {"fio": "fio-3.33", "fs_mark": "3.3", "python": "3.11.7"},
    "devices": [{"name": "sd0", "class": "sdcard", "model": "SanDisk SC32G", "rotational": False}],
    "environment": {"host": {"cpu_governor": "performance"},
                    "devices": {"sd0": {"scheduler": "mq-deadline", "loop_direct_io": True,
                                        "wbt_lat_usec": 75000}}},
    "cells": [{"study": "f2fs-dio-write", "device": "sd0", "filesystem": "f2fs",
               "mkfs_options": "-f", "mount_options": "noatime",
               "params": {"queue": {"scheduler": "mq-deadline", "wbt_lat_usec": 75000}}}],
}


def test_identical_runs_have_no_confounders():
    assert confounders(BASE, copy.deepcopy(BASE)) == []


def test_every_kind_of_difference_is_named_with_why():
    cand = copy.deepcopy(BASE)
    cand["kernel"]["config"].update(CONFIG_XFS_DEBUG="y", CONFIG_PROVE_LOCKING="y",
                                    CONFIG_PREEMPT_NONE="n", CONFIG_HZ="1000")
    cand["kernel"]["cmdline"] = "quiet mitigations=off"
    cand["tools"].update(fio="fio-3.36", python="3.12")
    cand["devices"][0]["model"] = "Kingston SDC10G2"
    cand["environment"]["host"]["cpu_governor"] = "powersave"
    cand["environment"]["devices"]["sd0"].update(scheduler="bfq", loop_direct_io=False, wbt_lat_usec=0)
    cand["cells"][0]["mount_options"] = "noatime,discard"
    cand["cells"][0]["params"]["queue"] = {"scheduler": "bfq", "wbt_lat_usec": 0}
    found = {c.name: c for c in confounders(BASE, cand)}
    assert set(found) == {
        "kernel CONFIG_XFS_DEBUG", "kernel CONFIG_PROVE_LOCKING", "kernel CONFIG_PREEMPT_NONE",
        "kernel CONFIG_HZ", "kernel cmdline", "fio version", "sd0 model", "cpu_governor",
        "sd0 scheduler", "sd0 wbt_lat_usec", "sd0 loop_direct_io",
        "f2fs-dio-write/sd0/f2fs mount_options", "f2fs-dio-write/sd0/f2fs scheduler",
        "f2fs-dio-write/sd0/f2fs wbt_lat_usec"}
    assert "lockdep" in found["kernel CONFIG_PROVE_LOCKING"].why
    assert (found["fio version"].base, found["fio version"].candidate) == ("fio-3.33", "fio-3.36")


def test_what_one_side_does_not_record_is_not_a_confounder():
    published = {"kernel": {"release": "2.6.32-rc7"}, "devices": [{"name": "sd0", "class": "sdcard"}]}
    assert confounders(BASE, published) == []


def _guest_bundle(n: int) -> dict:
    root = Path(__file__).resolve().parents[1] / "fixtures" / "e2e-check"
    return json.loads((root / f"guest-{n:02d}" / "bundle" / "bundle.json").read_text())


def test_the_virtual_labs_per_run_boot_parameters_are_no_confounder():
    # Two real guests of one check: their command lines differ only in virtme.exec
    # (base64 of each guest's own `iowatch run`) and the host directory it mounts.
    base, cand = _guest_bundle(1), _guest_bundle(2)
    assert base["kernel"]["cmdline"] != cand["kernel"]["cmdline"]
    assert "virtme_initmount0=tmp/iowatch-e2e-final/guest-01" in base["kernel"]["cmdline"]
    assert confounders(base, cand) == []
    # On a lab host the kernel role names the commit it booted, and grub the image.
    for doc, commit in ((base, "44a585509f52"), (cand, "670e525aa2b2")):
        for where in (doc["kernel"], doc["environment"]["host"]):
            where["cmdline"] += f" BOOT_IMAGE=/boot/vmlinuz-6.12.117-{commit} iowatch.commit={commit}"
    assert confounders(base, cand) == []

    # What does change the kernel's behaviour still is one, on the same manifests.
    for doc in (cand["kernel"], cand["environment"]["host"]):
        doc["cmdline"] += " mitigations=off"
    cand["kernel"]["config"]["CONFIG_EXT4_DEBUG"] = "y"
    cand["environment"]["devices"]["vhdd"]["scheduler"] = "mq-deadline"
    found = {c.name: c for c in confounders(base, cand)}
    assert set(found) == {"kernel cmdline", "kernel CONFIG_EXT4_DEBUG", "vhdd scheduler"}
    assert found["kernel cmdline"].candidate.endswith("mitigations=off")
    assert "virtme.exec" not in found["kernel cmdline"].candidate
    assert "ext4 debug" in found["kernel CONFIG_EXT4_DEBUG"].why
    assert (found["vhdd scheduler"].base, found["vhdd scheduler"].candidate) == ("bfq", "mq-deadline")


def test_kernel_flags_name_the_debug_and_preemption_options_in_force():
    config = _guest_bundle(2)["kernel"]["config"]
    assert [(f.option, f.kind) for f in kernel_flags(config)] == [
        ("CONFIG_PREEMPT_DYNAMIC", "preemption"), ("CONFIG_PREEMPT_VOLUNTARY", "preemption")]
    flags = kernel_flags({**config, "CONFIG_EXT4_DEBUG": "y", "CONFIG_DEBUG_ATOMIC_SLEEP": "y",
                          "CONFIG_KASAN": "y", "CONFIG_HZ": "1000", "CONFIG_EXT4_FS": "y"})
    debug = {f.option: f.why for f in flags if f.kind == "debug"}
    assert set(debug) == {"CONFIG_EXT4_DEBUG", "CONFIG_DEBUG_ATOMIC_SLEEP", "CONFIG_KASAN"}
    assert "KASAN" in debug["CONFIG_KASAN"]


@pytest.mark.parametrize("exact", [False, True])
def test_a_fixed_side_spends_only_the_information_the_growing_side_adds(monkeypatch, exact):
    from iowatch.stats.sequential import information, level_at
    monkeypatch.setattr(sequential, "EXACT", exact)
    # Equal sides on the schedule: the looks' levels.
    assert [level_at(n, n, q=FDR, cap=CAP) for n in (5, 10, 15, 20)] == pytest.approx(
        [look_level(n, q=FDR, cap=CAP) for n in (5, 10, 15, 20)])
    assert information(5, cap=CAP) == 0.25 and information(30, cap=CAP) == 1
    assert information(7.5, cap=CAP) == pytest.approx(0.375)
    # A fixed base of 5 and a candidate grown to 10, 15 and 20 (n_eff 6.7, 7.5,
    # 8): each look spends what its information added, never the second look's
    # share again. A clean cell followed through the four looks (known sd,
    # 400,000 draws of the real means) crosses one with at most the spending
    # function's chance at n_eff 8: as shipped less (the union bound), exact it.
    levels = [level_at(5, n, q=FDR, cap=CAP) for n in (5, 10, 15, 20)]
    assert levels[0] == pytest.approx(look_level(5, q=FDR, cap=CAP)) and all(lv > 0 for lv in levels)
    rng = np.random.default_rng(11)
    base = rng.standard_normal((400_000, 5)).mean(axis=1)
    grown = rng.standard_normal((400_000, 20)).cumsum(axis=1)
    z = np.stack([(grown[:, n - 1] / n - base) / math.sqrt(1 / 5 + 1 / n) for n in (5, 10, 15, 20)], axis=1)
    crossed = (z > -ndtri(np.asarray(levels))).any(axis=1).mean()
    spent = alpha_spent(information(8, cap=CAP), FDR)
    se = math.sqrt(spent * (1 - spent) / 400_000)
    if exact:
        assert abs(crossed - spent) < 4 * se
    else:
        assert sum(levels) == pytest.approx(spent) and crossed + 4 * se < spent
        assert levels[1] > levels[2] > levels[3]
        assert sum(levels) < look_level(5, q=FDR, cap=CAP) + 3 * look_level(10, q=FDR, cap=CAP)
    # A function of the counts alone: either side may be the fixed one.
    assert level_at(20, 5, q=FDR, cap=CAP) == level_at(5, 20, q=FDR, cap=CAP)
