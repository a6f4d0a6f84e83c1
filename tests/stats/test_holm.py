"""Confirmation holds Holm's step-down beside Benjamini–Hochberg (issue 41 item
6): after a true discovery BH lowers the bar for the rest of the family, and an
unchanged cell was confirmed beside a true slowdown in 2-14% of slowed checks;
Holm bounds that chance by the rate whatever else changed."""
from __future__ import annotations

import numpy as np
import pytest

from iowatch.cells import CellKey
from iowatch.stats.verdict import CellInput, benjamini_hochberg, compare_matrix, holm


def test_holm_is_the_step_down_bonferroni():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04 -> monotone 0.06
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.01], family_size=40) == pytest.approx([0.4])  # untested members count
    assert holm([]) == []
    # Never below BH's: what Holm confirms, BH does.
    rng = np.random.default_rng(6)
    for _ in range(200):
        ps = rng.uniform(0, 0.2, 12).tolist()
        assert all(h >= b - 1e-12 for h, b in zip(holm(ps, 20), benjamini_hochberg(ps, 20)))


def _family(rng, slowed: dict[int, float], m: int = 40, n: int = 10) -> list[CellInput]:
    return [CellInput(CellKey("s", "h", "ssd", f"d{i}", "ext4", "g", "write.bw_kib_s"),
                      list(rng.lognormal(0, 0.1, n) * 1000),
                      list(rng.lognormal(0, 0.1, n) * 1000 * (1 - slowed.get(i, 0.0))),
                      "higher", 5.0, 20) for i in range(m)]


def test_a_cell_is_confirmed_only_when_holm_holds_it():
    """Over many families with several slowed cells, every confirmed cell's
    adjusted p (what the verdict reports and confirmation holds) is Holm's and
    within its look's level; a cell BH alone would confirm is at most suspected."""
    rng = np.random.default_rng(41)
    held_by_holm = 0
    for _ in range(60):
        cells = _family(rng, {0: 0.5, 1: 0.08, 2: 0.08, 3: 0.08})
        verdicts = compare_matrix(cells, fdr=0.05, cap=20)
        p_worse = [v.p_worse for v in verdicts]
        bh, hm = benjamini_hochberg(p_worse, 40), holm(p_worse, 40)
        for v, b, h in zip(verdicts, bh, hm):
            assert v.p_adjusted == pytest.approx(max(b, h))
            if v.outcome == "regression":
                assert h <= v.level
            elif b <= v.level and v.change_pct <= -5.0:
                held_by_holm += 1
                assert v.outcome in ("suspected", "inconclusive")
    assert held_by_holm > 0  # the families above do reach BH's looser bar
