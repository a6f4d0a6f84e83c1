"""Where iowatch keeps its files on this machine.

IOWATCH_DATA_DIR (default ~/.local/share/iowatch) holds the embedded SQLite
store, the upload spool, image files of the local target and caches. The web
app reads the same function so both sides agree.
"""
from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    d = os.environ.get("IOWATCH_DATA_DIR") or os.path.join(
        os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"), "iowatch")
    path = Path(d)
    path.mkdir(parents=True, exist_ok=True)
    return path


def spool_dir() -> Path:
    return Path(os.environ.get("IOWATCH_SPOOL") or data_dir() / "spool")
