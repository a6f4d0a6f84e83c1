"""A study's `precondition:` field: loaded as typed settings, and refused by line
when it cannot work."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from iowatch.studies import Precondition, load_study
from iowatch.yamlfile import DataFileError

STUDIES = Path(__file__).resolve().parents[2] / "jobs" / "studies"


def study_file(tmp_path: Path, slug: str, **changes) -> Path:
    data = yaml.safe_load((STUDIES / f"{slug}.yml").read_text())
    data.update(changes)
    path = tmp_path / f"{slug}.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_a_precondition_loads_with_the_pts_defaults(tmp_path):
    s = load_study(study_file(tmp_path, "ext4-dio-randread", precondition={"rounds_max": 25, "window": 5}))
    assert s.precondition == Precondition(rounds_max=25, window=5, fill=1, slope_pct_max=10.0,
                                          excursion_pct_max=20.0, round_s=60, bs="4k", iodepth=32)
    assert load_study(STUDIES / "ext4-dio-randread.yml").precondition is None


def test_a_window_longer_than_the_rounds_is_refused_at_its_line(tmp_path):
    path = study_file(tmp_path, "ext4-dio-randread", precondition={"rounds_max": 3, "window": 5})
    with pytest.raises(DataFileError, match=r"precondition: window 5 is more than rounds_max 3") as e:
        load_study(path)
    assert str(path) in str(e.value) and e.value.line is not None


def test_a_study_without_an_ssd_class_cannot_ask_for_it(tmp_path):
    path = study_file(tmp_path, "odirect-vs-readers", precondition={"rounds_max": 10, "window": 5})
    with pytest.raises(DataFileError, match=r"applies to ssd, ssd-raid0, nvme devices, and the "
                                            r"study runs on none \(hdd\)"):
        load_study(path)


def test_unknown_keys_and_bad_values_are_refused_by_the_schema(tmp_path):
    with pytest.raises(DataFileError, match="slope_max"):
        load_study(study_file(tmp_path, "ext4-dio-randread",
                              precondition={"rounds_max": 10, "window": 5, "slope_max": 10}))
    with pytest.raises(DataFileError, match="window"):
        load_study(study_file(tmp_path, "ext4-dio-randread", precondition={"rounds_max": 10, "window": 1}))
