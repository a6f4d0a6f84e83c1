"""Issue 41 item 3: "a metric too noisy for its study's minimum effect is a
diagnostic unless the study says why it decides" (iowatch.judging.policy.
too_noisy, NOISY_TIMES; docs/verdicts.md, "Too noisy to decide").

The sides are bundle-shaped manifests built from known values, one run a
repetition, of ext4-dio-randread's ext4 random reads (minimum effect 5%, cap
60): the shipped study says why read.iops decides, and a copy of it here says
nothing. At the base's noise (log sd 0.3) the change's 95% CI at the cap
would be about +-20%, over 3 minimum effects; at log sd 0.03 about +-1%."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from iowatch.judging import NOISY_TIMES, compare_sides, too_noisy
from iowatch.report import render_json, render_text
from iowatch.side_data import Side
from iowatch.stats.detectable import width_at_cap_pct
from iowatch.studies import load_studies

STUDIES = load_studies(Path(__file__).resolve().parents[2] / "jobs" / "studies")
STUDY = "ext4-dio-randread"
CAP = STUDIES[STUDY].max_runs


def _without_why(studies: dict) -> dict:
    """The studies with ext4-dio-randread's read.iops saying no why (a study
    written without one, as a user's might be)."""
    study = studies[STUDY]
    metrics = tuple(dataclasses.replace(m, why=None) if m.metric == "read.iops" else m
                    for m in study.metrics)
    return {**studies, STUDY: dataclasses.replace(study, metrics=metrics)}


def _side(name: str, values, start: int) -> Side:
    runs = [{"run_id": f"run-{start + i}", "status": "passed", "kernel": {"release": "6.12"},
             "host": {"name": "vlab", "kind": "qemu"}, "devices": [{"name": "vssd", "class": "ssd"}],
             "cells": [{"id": f"{STUDY}/vssd/ext4", "study": STUDY, "device": "vssd", "filesystem": "ext4",
                        "status": "passed", "repetitions": [{"index": 1, "status": "passed", "samples": [
                            {"metric": "read.iops", "value": float(v), "group": "randread", "job": None}]}]}]}
            for i, v in enumerate(values)]
    return Side(name, "test", runs)


def _sides(base_sd: float, cand_sd: float, change: float = 0.0, n: int = 10, seed: int = 3):
    rng = np.random.default_rng(seed)
    base = 10_000 * np.exp(rng.normal(0, base_sd, n))
    cand = 10_000 * (1 + change) * np.exp(rng.normal(0, cand_sd, n))
    return _side("base", base, 0), _side("candidate", cand, 100), base


def test_a_noisy_deciding_metric_without_a_why_is_shown_not_judged_and_says_so():
    base, cand, values = _sides(0.3, 0.3, change=-0.5)
    width = width_at_cap_pct(values, CAP)
    assert width > NOISY_TIMES * 5
    cmp = compare_sides(base, cand, studies=_without_why(STUDIES))
    assert [v for v in cmp.verdicts if v.key.metric == "read.iops"] == []
    (shown,) = [v for v in cmp.diagnostics if v.key.metric == "read.iops"]
    assert shown.direction == "info" and cmp.regressions == [] and cmp.state != "regression"
    (key,) = cmp.too_noisy
    assert key.metric == "read.iops" and cmp.too_noisy[key] == pytest.approx(width)
    text = render_text(cmp)
    assert (f"[randread] read.iops decides in {STUDY}, but is too noisy for its 5% minimum effect: "
            f"at the cap of {CAP} a side its 95% CI would be about ±{width:.0f}%") in text
    assert "shown, not judged" in text
    (row,) = json.loads(render_json(cmp))["too_noisy"]
    assert (row["metric"], row["width_at_cap_pct"]) == ("read.iops", round(width, 1))


def test_the_same_cell_decides_when_the_study_says_why():
    """The shipped study says why read.iops decides (the post's figure): the
    same noisy -50% is judged, and found."""
    base, cand, _ = _sides(0.3, 0.3, change=-0.5)
    assert STUDIES[STUDY].decides_why[("randread", "read.iops")].startswith("the post's")
    cmp = compare_sides(base, cand, studies=STUDIES)
    (cell,) = [v for v in cmp.verdicts if v.key.metric == "read.iops"]
    assert cell.outcome == "regression" and cmp.too_noisy == {}


def test_a_quiet_metric_decides_without_a_why():
    base, cand, values = _sides(0.03, 0.03, change=-0.2)
    assert width_at_cap_pct(values, CAP) < NOISY_TIMES * 5
    cmp = compare_sides(base, cand, studies=_without_why(STUDIES))
    (cell,) = [v for v in cmp.verdicts if v.key.metric == "read.iops"]
    assert cell.outcome == "regression" and cmp.too_noisy == {}


def test_a_patch_that_makes_a_quiet_metric_erratic_is_still_judged():
    """The base's noise decides, not the candidate's: a patch cannot hide its
    own slowdown by making the metric noisy."""
    base, cand, _ = _sides(0.03, 0.6, change=-0.5)
    cmp = compare_sides(base, cand, studies=_without_why(STUDIES))
    assert [v.key.metric for v in cmp.verdicts] == ["read.iops"] and cmp.too_noisy == {}


def test_too_noisy_needs_three_runs_and_a_study():
    study = _without_why(STUDIES)[STUDY]
    assert too_noisy(study, "randread", "read.iops", [100.0, 300.0]) is None      # nothing to tell yet
    assert too_noisy(None, "randread", "read.iops", [100.0, 300.0, 50.0]) is None  # no study: judged
    assert too_noisy(study, "randread", "read.iops", [100.0, 300.0, 50.0]) > NOISY_TIMES * 5
    assert too_noisy(STUDIES[STUDY], "randread", "read.iops", [100.0, 300.0, 50.0]) is None
