"""The virtual lab's record of its noise between boots, for tests that judge
real vlab bundles measured in one boot a variant (tests/fixtures/e2e-check,
made before a check booted every variant twice).

tests/fixtures/e2e-boots/aabb is six real boots of one kernel on the `vlab`
host running jobs/e2e.yml (that directory's README): the host's record of the
same cells. With it a one-boot side's offset is in the test, as on a lab host
that keeps calibration runs; without it such a cell is held "suspected: one
boot a side" (iowatch.stats.boots.HOLD_WITHOUT_RECORD)."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import pytest

from iowatch.side_sources import bundles_history

AABB = Path(__file__).resolve().parent / "fixtures" / "e2e-boots" / "aabb"


def vlab_record():
    """The aabb boots as a history (iowatch.judging.boots), read as `--history` reads them."""
    return bundles_history([str(AABB)])


@contextmanager
def hold_off():
    """Judge one boot a side with no record as if its repetitions were
    independent (stats.boots.HOLD_WITHOUT_RECORD off), for tests of a rule that
    sits on top of a confirmed change made from bundles of a host that keeps no
    record (tests/fixtures/lab-vm-bisect). The hold itself is held by
    tests/stats/test_one_boot.py and tests/compare/test_one_boot_sides.py."""
    from iowatch.stats import boots
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(boots, "HOLD_WITHOUT_RECORD", False)
        yield
