"""The iowatch wheel as a lab admin builds it, for the tests that install it
(tests/packaging/test_wheel.py, tests/lab_ops/test_common_role.py): from a copy
of the tree without .git, with Chart.js already copied in by scripts/setup.sh."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENDOR = ROOT / "webapp" / "iowatch_web" / "dashboard" / "static" / "dashboard" / "vendor"


def build_wheel(src: Path, out: Path) -> Path:
    """Copy the tree into `src` (no .git, venv, node_modules, build leftovers),
    build the wheel into `out` and return its path; AssertionError with pip's
    output when it fails, or when Chart.js is missing."""
    assert (VENDOR / "chart.umd.js").exists(), (
        f"{VENDOR}/chart.umd.js is missing: run scripts/setup.sh first "
        "(it copies Chart.js from npm into the static files the wheel ships)")
    for cmd in (["rsync", "-a", "--exclude", ".git", "--exclude", ".venv", "--exclude", "node_modules",
                 "--exclude", "*.egg-info", "--exclude", "build", "--exclude", "test-artifacts",
                 f"{ROOT}/", f"{src}/"],
                [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(out), str(src)]):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, (f"{' '.join(cmd)} exited {done.returncode}\n"
                                      f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    (found,) = out.glob("iowatch-*.whl")
    return found
