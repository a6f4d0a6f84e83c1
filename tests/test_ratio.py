"""iowatch.ratio: a ratio study's filesystem/raw ratio is one value per repetition
pair of one run, derived again from the recorded IOPS whatever ratio a bundle held."""
from __future__ import annotations

import pytest

from iowatch import resources
from iowatch.ratio import METRIC, derive
from iowatch.studies import load_studies

STUDY = "ext4-dio-randread"


@pytest.fixture(scope="module")
def studies():
    return load_studies(resources.studies_dir())


def _cell(fs: str, iops: dict[int, float], status: dict[int, str] | None = None,
          recorded_ratio: float | None = None) -> dict:
    reps = []
    for index, value in iops.items():
        samples = [{"metric": "read.iops", "value": value, "group": "randread", "job": None},
                   {"metric": "read.iops", "value": value / 2, "group": "randread", "job": "randread"}]
        if recorded_ratio is not None:
            samples.append({"metric": METRIC, "value": recorded_ratio, "group": "randread", "job": None})
        reps.append({"index": index, "status": (status or {}).get(index, "passed"), "samples": samples})
    return {"id": f"{STUDY}/vssd/{fs}", "study": STUDY, "device": "vssd", "filesystem": fs,
            "repetitions": reps}


def _ratios(cell: dict) -> dict[int, float]:
    return {r["index"]: s["value"] for r in cell["repetitions"] for s in r["samples"]
            if s["metric"] == METRIC}


def test_each_repetition_is_divided_by_the_raw_repetition_of_its_index(studies):
    ext4 = _cell("ext4", {1: 4000, 2: 6000, 3: 3000, 4: 5000}, status={4: "failed"},
                 recorded_ratio=0.123)
    raw = _cell("raw", {1: 8000, 2: 6000, 3: 10000})
    doc = derive({"cells": [ext4, raw]}, studies)
    # Not over the raw median (8000): pair by pair. A failed repetition gives none.
    assert _ratios(doc["cells"][0]) == pytest.approx({1: 0.5, 2: 1.0, 3: 0.3})
    assert _ratios(doc["cells"][1]) == {}
    [sample] = [s for s in ext4["repetitions"][0]["samples"] if s["metric"] == METRIC]
    assert (sample["group"], sample["job"], sample["unit"]) == ("randread", None, "ratio")


def test_a_repetition_without_a_partner_in_its_run_has_no_ratio(studies):
    ext4 = _cell("ext4", {1: 4000, 2: 6000, 3: 3000}, recorded_ratio=0.5)
    assert _ratios(derive({"cells": [ext4, _cell("raw", {2: 5000})]}, studies)["cells"][0]) == \
        pytest.approx({2: 1.2})
    # A round that re-ran only the filesystem cell: its recorded ratio goes.
    alone = _cell("ext4", {1: 4000}, recorded_ratio=0.5)
    assert _ratios(derive({"cells": [alone]}, studies)["cells"][0]) == {}
    # Another study's cells are left as they are.
    other = dict(_cell("ext4", {1: 4000}, recorded_ratio=0.5), study="f2fs-dio-write")
    assert _ratios(derive({"cells": [other]}, studies)["cells"][0]) == {1: 0.5}
