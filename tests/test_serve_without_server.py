"""A runner-only install (`pip install iowatch`, no [server] extra) asked to
serve says what to install and exits 2, instead of Django's "No module named
django" and "`migrate` failed (exit 1)" (issue 28).

The install without Django is made by a sitecustomize on PYTHONPATH that
marks django as not importable, in this process's children as in a fresh
virtualenv without it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

IOWATCH = str(Path(sys.executable).parent / "iowatch")


@pytest.fixture
def without_django(tmp_path) -> dict:
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\nsys.modules['django'] = None  # import django: ImportError\n")
    env = dict(os.environ, IOWATCH_DATA_DIR=str(tmp_path / "data"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))
    check = subprocess.run([sys.executable, "-c", "import django"], env=env, capture_output=True)
    assert check.returncode != 0, "the sitecustomize did not hide django"
    return env


@pytest.mark.parametrize("command", [["serve", "--port", "1"], ["manage", "check"]])
def test_a_server_command_without_the_server_extra_names_it_and_exits_2(without_django, command):
    r = subprocess.run([IOWATCH, *command], env=without_django, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "pip install 'iowatch[server]'" in r.stderr, r.stderr
    assert "migrate" not in r.stderr and "Traceback" not in r.stderr, r.stderr
