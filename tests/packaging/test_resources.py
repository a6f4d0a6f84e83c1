"""Run-time data is found through iowatch.resources, and a user's own studies
take its place with --studies DIR or IOWATCH_STUDIES."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from iowatch import resources
from iowatch.studies import load_matrix

IOWATCH = str(Path(sys.executable).parent / "iowatch")
COMPARE = ["compare", "--published", "odirect-vs-readers", "--base", "2.6.32-rc7",
           "--candidate", "for-2.6.33", "--format", "json"]


def test_a_matrix_is_a_path_or_the_name_of_a_packaged_matrix_or_study(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("IOWATCH_STUDIES", raising=False)
    assert resources.matrix_path("smoke") == resources.jobs_dir() / "smoke.yml"
    assert resources.matrix_path("jobs/studies/f2fs-nat-flush.yml") == \
        resources.jobs_dir() / "studies" / "f2fs-nat-flush.yml"
    assert load_matrix("smoke").name == "smoke"
    assert "check-quick" in resources.matrix_names() and "odirect-vs-readers" in resources.matrix_names()
    mine = tmp_path / "smoke.yml"  # a file that exists wins over the packaged name
    mine.write_text("matrix: mine\nstudies:\n  - study: odirect-vs-readers\n")
    (tmp_path / "studies").mkdir()
    shutil.copy(resources.studies_dir() / "odirect-vs-readers.yml", tmp_path / "studies")
    assert resources.matrix_path("smoke.yml") == Path("smoke.yml")
    assert load_matrix("smoke.yml").name == "mine"
    assert str(resources.matrix_path("no-such-matrix")) == "no-such-matrix"


def _verdict(args, env) -> set:
    done = subprocess.run([IOWATCH, *args], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    return {(c["group"], c["outcome"]) for c in json.loads(done.stdout)["cells"]}


def test_own_studies_judge_with_studies_or_the_environment(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "IOWATCH_STUDIES"}
    packaged = _verdict(COMPARE, env)
    assert ("writer", "regression") in packaged
    own = tmp_path / "studies"
    own.mkdir()
    study = yaml.safe_load((resources.studies_dir() / "odirect-vs-readers.yml").read_text())
    study["min_effect_pct"] = 99.9  # the writer fell 99.4%: below this study's minimum effect
    (own / "odirect-vs-readers.yml").write_text(yaml.safe_dump(study, sort_keys=False))
    assert ("writer", "no-change") in _verdict(["--studies", str(own), *COMPARE], env)
    assert ("writer", "no-change") in _verdict(COMPARE, {**env, "IOWATCH_STUDIES": str(own)})
