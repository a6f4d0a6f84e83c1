"""The platform canary (issue 24 item 2): a canary study's cell never decides,
and when it moves between the two kernels or drifts between a check's rounds,
a comparison says the platform drifted instead of judging through it
(iowatch.judging.compare_sides; docs/verdicts.md, "The canary").

The sides are bundle-shaped manifests built from known values, one run (one
boot) a repetition, as a check runs them: a normal cell of ext4-dio-randread
and the canary cell of canary-tmpfs-read on the same host."""
from pathlib import Path

import numpy as np
import pytest

from iowatch import exit_status
from iowatch.side_data import Side
from iowatch.judging import compare_sides, more_runs, platform_words
from iowatch.report import render_json, render_text
from iowatch.studies import load_studies, load_study
from iowatch.yamlfile import DataFileError

STUDIES_DIR = Path(__file__).resolve().parents[2] / "jobs" / "studies"
STUDIES = load_studies(STUDIES_DIR)
CANARY = "canary-tmpfs-read"


def _run(i: int, iops: float | None, canary: float | None, round_no: int | None = None) -> dict:
    """One boot's bundle: one repetition of the ext4 random reads, one of the canary."""
    cells = []
    if iops is not None:
        cells.append({"id": "ext4-dio-randread/vssd/ext4", "study": "ext4-dio-randread",
                      "device": "vssd", "filesystem": "ext4", "status": "passed",
                      "repetitions": [{"index": 1, "status": "passed", "samples": [
                          {"metric": "read.iops", "value": iops, "group": "randread", "job": None}]}]})
    if canary is not None:
        cells.append({"id": f"{CANARY}/vssd/tmpfs", "study": CANARY, "device": "vssd",
                      "filesystem": "tmpfs", "status": "passed",
                      "repetitions": [{"index": 1, "status": "passed", "samples": [
                          {"metric": "read.bw_kib_s", "value": canary, "group": "canary", "job": None},
                          # The runner's other samples of the canary: neither the patch's nor the platform's.
                          {"metric": "read.clat_p99_us", "value": 20.0, "group": "canary", "job": None}]}]})
    run = {"run_id": f"run-{i}", "status": "passed", "kernel": {"release": "6.12"},
           "host": {"name": "vlab", "kind": "qemu"},
           "devices": [{"name": "vssd", "class": "ssd"}], "cells": cells}
    if round_no is not None:
        run["round"] = round_no
    return run


def _side(name: str, iops, canary, rounds=None, start: int = 0) -> Side:
    rounds = rounds if rounds is not None else [None] * len(iops)
    return Side(name, "test", [_run(start + k, a, c, r)
                               for k, (a, c, r) in enumerate(zip(iops, canary, rounds))])


def _noisy(rng, centre: float, n: int, cv: float = 0.03) -> list[float]:
    return list(centre * np.exp(rng.normal(0, cv, n)))


def _regressed_sides(canary_change: float, seed: int = 7):
    """A confirmed -30% of ext4 random reads (10 boots a side, CV 3%), and a
    canary whose candidate side moved by `canary_change`."""
    rng = np.random.default_rng(seed)
    base = _side("base", _noisy(rng, 10_000, 10), _noisy(rng, 5e6, 10))
    cand = _side("candidate", _noisy(rng, 7_000, 10),
                 _noisy(rng, 5e6 * (1 + canary_change), 10), start=100)
    return base, cand


def test_a_canary_that_moved_between_the_kernels_makes_a_confirmed_regression_unsure():
    base, cand = _regressed_sides(-0.20)
    cmp = compare_sides(base, cand, studies=STUDIES)
    # The normal cell's own test still finds the regression ...
    (cell,) = cmp.verdicts
    assert cell.key.study == "ext4-dio-randread" and cell.outcome == "regression"
    # ... but the comparison does not stand behind it: the platform moved under it.
    assert cmp.state == "unsure" and cmp.regressions == []
    (drift,) = cmp.platform
    assert drift.between == "kernels" and drift.canary.key.study == CANARY
    assert drift.change_pct == pytest.approx(-20, abs=3)
    lo, hi = drift.ci
    assert lo < drift.change_pct < hi < -5
    words = platform_words(cmp)
    assert words.startswith(f"the platform drifted (canary {CANARY} read.bw_kib_s moved -")
    assert "between the kernels" in words and words.endswith("rerun on a quiet host")
    assert exit_status.of_states([cmp.state]) == exit_status.UNDECIDED
    text = render_text(cmp)
    assert f"verdict: UNSURE: {words}" in text and "MOVED" in text
    assert '"drifted": true' in render_json(cmp)


def test_a_canary_that_rose_is_a_move_too():
    base, cand = _regressed_sides(+0.20)
    cmp = compare_sides(base, cand, studies=STUDIES)
    assert cmp.state == "unsure" and [d.between for d in cmp.platform] == ["kernels"]
    assert cmp.platform[0].change_pct > 5


def test_a_steady_canary_leaves_the_verdict_alone():
    base, cand = _regressed_sides(0.0)
    cmp = compare_sides(base, cand, studies=STUDIES)
    assert cmp.platform == [] and cmp.state == "regression"
    assert [v.key.study for v in cmp.regressions] == ["ext4-dio-randread"]
    assert platform_words(cmp).startswith(f"the platform held (canary {CANARY} read.bw_kib_s ")
    # The same sides without a canary: the same verdict, and nothing said of the platform.
    strip = lambda side: Side(side.spec, side.source, [  # noqa: E731
        {**r, "cells": [c for c in r["cells"] if c["study"] != CANARY]} for r in side.runs])
    bare = compare_sides(strip(base), strip(cand), studies=STUDIES)
    assert bare.state == "regression" and bare.canaries == [] and platform_words(bare) == ""
    # A clean patch on a steady platform stays "no change".
    rng = np.random.default_rng(3)
    clean = compare_sides(_side("b", _noisy(rng, 10_000, 10), _noisy(rng, 5e6, 10)),
                          _side("c", _noisy(rng, 10_000, 10), _noisy(rng, 5e6, 10), start=100),
                          studies=STUDIES)
    assert clean.state == "no-change" and clean.platform == []


def test_a_canary_never_decides_nor_counts_as_a_regression():
    # The canary alone, 30% slower on the candidate side: a move of the platform,
    # never a regression of the patch, and never a cell that asks for more runs.
    rng = np.random.default_rng(11)
    base = _side("b", [None] * 5, _noisy(rng, 5e6, 5))
    cand = _side("c", [None] * 5, _noisy(rng, 3.5e6, 5), start=100)
    cmp = compare_sides(base, cand, studies=STUDIES)
    assert cmp.verdicts == [] and cmp.regressions == [] and cmp.diagnostics == []
    assert [v.key.metric for v in cmp.canaries] == ["read.bw_kib_s"]  # its other metrics: not judged
    assert cmp.canaries[0].outcome == "regression"  # its own test's word, read as a move
    assert cmp.state == "unsure" and cmp.platform[0].between == "kernels"
    assert more_runs(cmp) == {}
    assert STUDIES[CANARY].deciding == set()
    assert STUDIES[CANARY].watched == {("canary", "read.bw_kib_s")}
    # Beside a normal cell, the family of deciding cells is the normal cell alone.
    base, cand = _regressed_sides(0.0)
    mixed = compare_sides(base, cand, studies=STUDIES)
    assert {v.key.study for v in mixed.verdicts} == {"ext4-dio-randread"}
    assert {v.key.study for v in mixed.canaries} == {CANARY}


def test_a_canary_that_drifted_between_rounds_makes_no_change_unsure():
    # A clean patch measured in three rounds of 4 boots a side; in round 2 the
    # machine is 30% faster for both kernels' canary. The ext4 cell is unchanged
    # and steady (the drift is what only the canary saw).
    rng = np.random.default_rng(5)
    rounds = [0] * 4 + [1] * 4 + [2] * 4
    level = [1.0] * 8 + [1.3] * 4
    base = _side("b", _noisy(rng, 10_000, 12),
                 [v * s for v, s in zip(_noisy(rng, 5e6, 12), level)], rounds)
    cand = _side("c", _noisy(rng, 10_000, 12),
                 [v * s for v, s in zip(_noisy(rng, 5e6, 12), level)], rounds, start=100)
    cmp = compare_sides(base, cand, studies=STUDIES)
    (cell,) = cmp.verdicts
    assert cell.outcome == "no-change"
    (drift,) = cmp.platform
    assert drift.between == "rounds" and drift.canary.drift_rounds == (0, 2)
    assert drift.change_pct == pytest.approx(30, abs=5) and drift.ci[0] > 5
    assert cmp.state == "unsure"
    assert "moved +" in platform_words(cmp) and "between rounds 0 and 2" in platform_words(cmp)
    # The same rounds without the drift: the platform held and "no change" stands.
    flat = compare_sides(
        _side("b", _noisy(rng, 10_000, 12), _noisy(rng, 5e6, 12), rounds),
        _side("c", _noisy(rng, 10_000, 12), _noisy(rng, 5e6, 12), rounds, start=100),
        studies=STUDIES)
    assert flat.platform == [] and flat.state == "no-change"


def test_the_canary_study_file_validates(tmp_path):
    study = load_study(STUDIES_DIR / f"{CANARY}.yml")
    assert study.canary and study.seed is None and study.filesystems == ("tmpfs",)
    assert study.workload("quick", "ssd")["fio"]["global"]["ioengine"] == "psync"
    text = (STUDIES_DIR / f"{CANARY}.yml").read_text()
    # A canary writes to no device: tmpfs only.
    bad = tmp_path / f"{CANARY}.yml"
    bad.write_text(text.replace("filesystems: [tmpfs]", "filesystems: [ext4]"))
    with pytest.raises(DataFileError, match="filesystems"):
        load_study(bad)
    # A canary watches a metric.
    bad.write_text(text.replace("direction: higher, decides: true", "direction: higher"))
    with pytest.raises(DataFileError, match="a canary needs a metric to watch"):
        load_study(bad)
    # No study but a canary runs on tmpfs, and without `canary: true` a study needs its seed post.
    bad.write_text(text.replace("canary: true\n", ""))
    with pytest.raises(DataFileError, match="filesystems.0: 'tmpfs' should not be valid"):
        load_study(bad)
    bad.write_text(text.replace("canary: true\n", "").replace("[tmpfs]", "[ext4]"))
    with pytest.raises(DataFileError, match="'seed' is a required property"):
        load_study(bad)
