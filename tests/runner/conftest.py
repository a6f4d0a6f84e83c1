"""Fixtures of the runner's in-process tests."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from iowatch import inventory
from iowatch.studies import load_matrix
from loop_devices import data_dir  # noqa: F401 (a fixture)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def small_fio_lab(tmp_path, data_dir):  # noqa: F811
    """The local target's hdd image and a matrix of one small fio study, three
    repetitions of a second or so: (host, matrix, data dir). Loop devices over
    the data dir are detached after the test (loop_devices.data_dir)."""
    studies = tmp_path / "jobs" / "studies"
    studies.mkdir(parents=True)
    study = yaml.safe_load((ROOT / "jobs/studies/odirect-vs-readers.yml").read_text())
    study["profiles"]["quick"]["jobs"] = {"seqwrite": {"size": "8M"}, "seqread": {"size": "4M"}}
    (studies / "odirect-vs-readers.yml").write_text(yaml.safe_dump(study))
    matrix = tmp_path / "jobs" / "m.yml"
    matrix.write_text("matrix: m\nprofile: quick\nreps: 3\nstudies:\n  - study: odirect-vs-readers\n")
    return inventory.load(ROOT / "hardware-inventory.yml").host("localhost"), load_matrix(matrix), data_dir
