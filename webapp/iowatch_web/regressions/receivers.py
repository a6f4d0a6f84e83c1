"""Signal receivers: a stored run gets its verdict work queued (regressions/work.py)."""
from __future__ import annotations

from iowatch_web.regressions import work


def verdicts_for_stored_run(sender, run, **kwargs) -> None:
    work.enqueue(run)
