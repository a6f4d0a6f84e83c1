"""next_step (the sequential rule) and confounders."""
import copy

import numpy as np

from iowatch.stats import confounders, next_step
from iowatch.stats.sequential import alpha_spent, look_level


def test_the_looks_spend_no_more_than_alpha():
    levels = [look_level(n, alpha=0.05, first=5, step=5, max_runs=20) for n in (5, 10, 15, 20)]
    assert sum(levels) == __import__("pytest").approx(0.05)
    assert all(a > 0 for a in levels) and alpha_spent(1, 0.05) == 0.05


def test_next_step_adds_runs_until_decided_or_budget_spent():
    assert next_step([1, 2], [1, 2, 3], direction="higher") == "add 3"
    rng = np.random.default_rng(1)
    clear = next_step(rng.normal(100, 1, 5), rng.normal(50, 1, 5), direction="higher")
    assert clear == "decide"
    noisy = next_step(rng.normal(100, 20, 5), rng.normal(92, 20, 5), direction="higher")
    assert noisy == "add 5"
    assert next_step(rng.normal(100, 20, 20), rng.normal(92, 20, 20), direction="higher") == "decide"


BASE = {
    "kernel": {"release": "6.12", "cmdline": "quiet", "config": {
        "CONFIG_XFS_DEBUG": "n", "CONFIG_PROVE_LOCKING": "n", "CONFIG_PREEMPT_NONE": "y", "CONFIG_HZ": "250"}},
    "tools": {"fio": "fio-3.33", "fs_mark": "3.3", "python": "3.11.7"},
    "devices": [{"name": "sd0", "class": "sdcard", "model": "SanDisk SC32G", "rotational": False}],
    "environment": {"host": {"cpu_governor": "performance"},
                    "devices": {"sd0": {"scheduler": "mq-deadline", "loop_direct_io": True}}},
    "cells": [{"study": "f2fs-dio-write", "device": "sd0", "filesystem": "f2fs",
               "mkfs_options": "-f", "mount_options": "noatime"}],
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
    cand["environment"]["devices"]["sd0"].update(scheduler="bfq", loop_direct_io=False)
    cand["cells"][0]["mount_options"] = "noatime,discard"
    found = {c.name: c for c in confounders(BASE, cand)}
    assert set(found) == {
        "kernel CONFIG_XFS_DEBUG", "kernel CONFIG_PROVE_LOCKING", "kernel CONFIG_PREEMPT_NONE",
        "kernel CONFIG_HZ", "kernel cmdline", "fio version", "sd0 model", "cpu_governor",
        "sd0 scheduler", "sd0 loop_direct_io", "f2fs-dio-write/sd0/f2fs mount_options"}
    assert "lockdep" in found["kernel CONFIG_PROVE_LOCKING"].why
    assert (found["fio version"].base, found["fio version"].candidate) == ("fio-3.33", "fio-3.36")


def test_what_one_side_does_not_record_is_not_a_confounder():
    published = {"kernel": {"release": "2.6.32-rc7"}, "devices": [{"name": "sd0", "class": "sdcard"}]}
    assert confounders(BASE, published) == []
