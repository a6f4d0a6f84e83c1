"""`iowatch compare` of run ids and kernels that only this machine's store
holds: the web app's store_side command hands the sides back as data
(iowatch.local_store.store_side). A store that was never written says so and
what to do, not a traceback; a side that matches nothing names it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

IOWATCH = str(Path(sys.executable).parent / "iowatch")


def compare(data_dir: Path, *sides: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "IOWATCH_DATA_DIR": str(data_dir)}
    env.pop("DATABASE_URL", None)  # the embedded store of this data directory
    return subprocess.run([IOWATCH, "compare", *sides], capture_output=True, text=True,
                          env=env, timeout=300)


def test_a_store_never_written_says_what_to_do(tmp_path):
    r = compare(tmp_path, "6.12.0-base", "6.12.0-patched")
    assert r.returncode == 2
    assert "base '6.12.0-base': this machine's store (" in r.stderr
    assert "store runs first" in r.stderr and "Traceback" not in r.stderr


def test_a_side_the_store_does_not_hold_is_named(tmp_path):
    env = {**os.environ, "IOWATCH_DATA_DIR": str(tmp_path)}
    env.pop("DATABASE_URL", None)
    subprocess.run([IOWATCH, "manage", "migrate", "-v", "0"], env=env, check=True,
                   capture_output=True, timeout=300)
    r = compare(tmp_path, "6.12.0-base", "6.12.0-patched")
    assert r.returncode == 2
    assert "base '6.12.0-base': not a bundle directory, and this machine's store has no run" \
        in r.stderr
