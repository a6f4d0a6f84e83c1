"""Signal receivers: a stored run gets its verdicts (the logic is in verdicts)."""
from __future__ import annotations

from regressions.verdicts import verdicts_for_run


def verdicts_for_stored_run(sender, run, **kwargs) -> None:
    verdicts_for_run(run)
