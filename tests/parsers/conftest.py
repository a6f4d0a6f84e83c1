"""Shared helpers of the parser tests: running the real tools, reading samples back."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def require(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not on PATH (CI installs it; these tests run the real tool)")


def values(result) -> dict[tuple[str, str, str | None], float]:
    """(metric, group, job) -> value of a ParseResult's samples; keys must be unique."""
    out = {}
    for s in result.samples:
        key = (s.metric, s.group, s.job)
        assert key not in out, f"sample {key} emitted twice"
        out[key] = s.value
    return out


def split_normal_json(output: str) -> tuple[str, str]:
    """fio --output-format=normal,json stdout -> (the JSON, the rest: the normal text)."""
    start = re.search(r"^\{$", output, re.M).start()
    _doc, end = json.JSONDecoder().raw_decode(output, start)
    return output[start:end], output[:start] + output[end:]


@pytest.fixture
def run_fio(tmp_path):
    """Run the real fio with its files in tmp_path; returns its stdout."""
    require("fio")

    def run(*options: str, output_format: str = "json", expect_rc: int = 0,
            with_stderr: bool = False) -> str:
        cmd = ["fio", f"--output-format={output_format}", f"--directory={tmp_path}", *options]
        p = subprocess.run(cmd, cwd=tmp_path, stdout=subprocess.PIPE, text=True, timeout=300,
                           stderr=subprocess.STDOUT if with_stderr else subprocess.PIPE)
        assert p.returncode == expect_rc, f"{cmd} exited {p.returncode}: {p.stderr}"
        return p.stdout

    return run


@pytest.fixture
def run_fsmark(tmp_path):
    """Run the real fs_mark on directories under tmp_path; returns its stdout."""
    require("fs_mark")

    def run(*options: str, dirs: tuple[str, ...] = ("d0",)) -> str:
        # Relative: fs_mark refuses directory names of 40 bytes or more. It also
        # writes fs_log.txt into its working directory.
        cmd = ["fs_mark", *[a for d in dirs for a in ("-d", d)], *options]
        p = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, f"{cmd} exited {p.returncode}: {p.stderr}"
        return p.stdout

    return run
