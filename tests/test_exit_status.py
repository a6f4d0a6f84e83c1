"""Issue 24 item 3: an undecided check is not a pass. The commands that judge exit 3
when a deciding cell is still unsure or suspected, beside 0, 1 and 2, and say so
in their --help."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from iowatch import exit_status
from iowatch.nightly import NightlyOutcome

IOWATCH = str(Path(sys.executable).parent / "iowatch")


def test_states_map_to_statuses():
    assert exit_status.of_states(["no-change", "improvement"]) == 0
    assert exit_status.of_states(["no-change", "unsure"]) == 3
    assert exit_status.of_states(["suspected"]) == 3
    assert exit_status.of_states(["suspected", "regression"]) == 1
    assert exit_status.of_states([]) == 0


def test_a_nightly_left_undecided_by_the_server_exits_3():
    assert NightlyOutcome(undecided=2).exit_code == 3
    assert NightlyOutcome(undecided=2, error="boot").exit_code == 2
    assert NightlyOutcome().exit_code == 0


@pytest.mark.parametrize("command", ["check", "run", "nightly", "bisect"])
def test_each_command_documents_the_undecided_status(command):
    r = subprocess.run([IOWATCH, command, "--help"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert "3" in text and "undecided" in text, text[-600:]
