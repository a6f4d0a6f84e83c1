"""Screening helper (issue 41 item 3): record each unsure cell's futility inputs at
every look of checks run to the cap, then replay stop rules on the records.

Replaying is approximate: a cell stopped early keeps its look's p in the
family's Benjamini-Hochberg, which the record (the cell measured on) does not
see. Figures from it are for screening; bench/accuracy/futility.py runs the
real loop (bench/accuracy/CHECK-STOP.md).
"""
from __future__ import annotations

import pickle
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402

import check_boots  # noqa: E402
import simulate  # noqa: E402
from iowatch.judging import Comparison  # noqa: E402
from iowatch.stats import verdict  # noqa: E402

_LOG: list = []  # rounds of the check being run: [{cell: (d, se, n_eff, sign, delta, cap, q, m)}]
_orig_family = check_boots._family


def _family(d, base, cand, cap):
    _LOG.append({})
    return _orig_family(d, base, cand, cap)


def _record(s, cell, cap, fdr, family):
    if not (s.size_only or s.d is None or s.se is None or cell.direction == verdict.INFO):
        me = cell.min_effect_pct / 100
        delta = float(np.log1p(me)) if s.log_scale else me
        sign = -1.0 if cell.direction == verdict.HIGHER else 1.0
        _LOG[-1][int(cell.key.device[1:])] = (s.d, s.se, s.n_eff, sign, delta, cap, fdr, family)
    return False


def record(real, trials, seed, share, conditions=("aa", "slow20")):
    """[(condition, slowed index, rounds, final outcomes, state, variant boots)]."""
    check_boots._family = _family
    verdict._futile = _record
    rng = np.random.default_rng(seed)
    out = []
    for condition in conditions:
        for _ in range(trials):
            d = simulate.draw_matrix(real, rng, None if condition == "aa" else condition)
            _LOG.clear()
            verdicts, _, _, vb = check_boots.judge_check(check_boots.SHIPPED, d, rng, share)
            state = Comparison(None, None, 0.05, verdicts, [], {}, {}).state
            out.append((condition, d.slowed, [dict(r) for r in _LOG],
                        [v.outcome for v in verdicts], state, vb))
    return out


if __name__ == "__main__":
    import argparse
    p = argparse.ArgumentParser()
    p.add_argument("--trials", type=int, default=200)
    p.add_argument("--seed", type=int, default=41)
    p.add_argument("--share", type=float, default=0.25)
    p.add_argument("--collection", default="model")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    import futility
    recs = record(futility.cells(a.collection), a.trials, a.seed, a.share)
    Path(a.out).write_bytes(pickle.dumps(recs))
