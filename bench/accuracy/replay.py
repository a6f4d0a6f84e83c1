"""Screening stop rules for the check (issue 41 item 3) on traj.py's records:
each rule replayed on the same checks run to the cap, then the look-1 bound
on what any rule can buy. Approximate (see traj.py); futility.py runs the real
loop on the rules kept.

    .venv/bin/python bench/accuracy/traj.py --trials 400 --seed 41 --share 0.25 --out t25.pkl
    .venv/bin/python bench/accuracy/replay.py t25.pkl t40.pkl
"""
from __future__ import annotations

import itertools
import math
import pickle
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402
from scipy.special import ndtr, ndtri  # noqa: E402

from iowatch.stats.sequential import Z_95, decision_chances, look_level  # noqa: E402


def replay(recs, cell_rule=None, check_rule=None, ends=None):
    """(clean checks' mean variant boots, clean false alarms, slowed found); `ends`, a
    dict, counts the clean checks by their boots a variant. cell_rule(a)
    True: that cell stops at that look; check_rule([a of the open cells]) True: all stop.
    a = (d, se, n_eff, worse_sign, delta, cap, q, family)."""
    boots = fa = found = clean = slowed = 0
    for cond, si, rounds, outcomes, _, _ in recs:
        last, stopped = {}, set()
        for r, cells in enumerate(rounds):
            live = {i: a for i, a in cells.items() if i not in stopped}
            last.update({i: r + 1 for i in live})
            for i, a in live.items():
                if cell_rule and cell_rule(a):
                    stopped.add(i)
                    last[i] = r
            live = {i: a for i, a in live.items() if i not in stopped}
            if check_rule and live and check_rule(list(live.values())):
                stopped |= set(live)
                last.update({i: r for i in live})
        confirmed = [o == "regression" and i not in stopped for i, o in enumerate(outcomes)]
        if cond == "aa":
            clean += 1
            end = 5 * (max(last.values(), default=0) + 1)  # one repetition a boot
            boots += end
            if ends is not None:
                ends[end] = ends.get(end, 0) + 1
            fa += any(confirmed)
        else:
            slowed += 1
            found += confirmed[si]
    return boots / clean, fa / clean, found / max(slowed, 1)


def chances(a, tau=None):
    """decision_chances; with `tau`, the predictive chances under a N(0, tau^2)
    prior on the change (shrunk toward no change) instead of the current trend."""
    d, se, n, sign, delta, cap, q, fam = a
    if not tau:
        return decision_chances(d, se, n, worse_sign=sign, delta=delta, cap=cap, q=q, family=fam)
    t, prec = n / cap, 1 / se ** 2 + 1 / tau ** 2
    se_cap = se * math.sqrt(t)
    mean = t * d + (1 - t) * d / se ** 2 / prec
    sd = math.sqrt(se_cap ** 2 * (1 - t) + (1 - t) ** 2 / prec)
    edge = delta - Z_95 * se_cap
    same = 0.0 if edge <= 0 else float(ndtr((edge - mean) / sd) - ndtr((-edge - mean) / sd))
    conf = max(delta, -float(ndtri(look_level(cap, q, cap=cap) / fam)) * se_cap)
    worse, better = (1 - float(ndtr((conf - k * sign * mean) / sd)) for k in (1, -1))
    return same, worse, better


def per_cell(worse, others=1.01, tau=None):
    """Stop a cell when its slowdown's chance is below `worse` and the others' below `others`."""
    def rule(a):
        c = chances(a, tau)
        return c is not None and c[1] < worse and c[0] < others and c[2] < others
    return rule


def family_sum(bound, tau=None, worse_only=False):
    """Stop every open cell when their chances (all three, or the slowdown's) sum below `bound`."""
    def rule(lst):
        cs = [chances(a, tau) for a in lst]
        return None not in cs and sum(c[1] if worse_only else sum(c) for c in cs) < bound
    return rule


def z_frontier(recs, target):
    """The fewest clean boots of rules 'go on while the slowdown's z >= c_k at look k'
    over a grid, among those that find at least `target` of the slowed cells."""
    best = None
    for c in itertools.product(np.arange(0, 2.6, 0.25), np.arange(0.5, 3.1, 0.25),
                               np.arange(1, 3.6, 0.25)):
        rule = lambda a, c=c: a[3] * a[0] / a[1] < c[min(round(a[2] / 5) - 1, 2)]  # noqa: E731
        b, _, f = replay(recs, cell_rule=rule)
        if f >= target and (best is None or b < best[0]):
            best = (b, f, tuple(float(x) for x in c))
    return best


def look1_bound(recs, stop_share=0.4):
    """What stopping `stop_share` of the clean checks at the first look costs at least:
    the slowed checks the likelihood-ratio rule (one cell of 40 shifted, the most
    powerful for a lone slowdown) stops there unconfirmed, at the threshold that
    stops that share of the clean checks. A mean of <= 8 boots at looks of 5, 10,
    15 and 20 needs >= 40% of clean checks stopped at 5."""
    clean, slow, n_slow = [], [], 0
    for cond, si, rounds, *_ in recs:
        z = np.zeros(40)
        for i, a in rounds[0].items():
            z[i] = a[3] * a[0] / a[1]
        if cond == "aa":
            clean.append(z)
        else:
            n_slow += 1
            if si in rounds[0]:  # not confirmed at the first look
                slow.append(z)
    out = {}
    for mu in (2.5, 3.0, 3.5):
        lr = lambda z: np.mean(np.exp(mu * z - mu * mu / 2), axis=-1)  # noqa: E731
        thr = np.quantile(lr(np.array(clean)), stop_share)
        out[mu] = float(np.sum(lr(np.array(slow)) < thr)) / n_slow
    return out


def load(path):
    return pickle.loads(Path(path).read_bytes())


def main(paths):
    rules = [("none", {}),
             *[(f"per cell, CP all three < {a}", dict(cell_rule=per_cell(a, a)))
               for a in (0.05, 0.01, 0.005)],
             *[(f"per cell, CP slowdown < {a}", dict(cell_rule=per_cell(a)))
               for a in (0.05, 0.01)],
             *[(f"per cell, predictive tau {t} slowdown < {a}", dict(cell_rule=per_cell(a, tau=t)))
               for t in (0.05, 0.1, 0.2) for a in (0.05, 0.01)],
             *[(f"family, CP sum < {b}", dict(check_rule=family_sum(b)))
               for b in (0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5)],
             *[(f"family, CP slowdowns' sum < {b}", dict(check_rule=family_sum(b, worse_only=True)))
               for b in (0.3, 0.5)],
             *[(f"family, predictive tau 0.2 sum < {b}", dict(check_rule=family_sum(b, 0.2)))
               for b in (0.3, 0.5)]]
    recs = {p: load(p) for p in paths}
    for name, kw in rules:
        print(f"{name:42}", " | ".join(
            "boots %5.2f fa %.3f found %.3f" % replay(r, **kw) for r in recs.values()), flush=True)
    for p, r in recs.items():
        for name, kw in (("none", {}), ("family, CP sum < 0.3", dict(check_rule=family_sum(0.3)))):
            ends = {}
            replay(r, ends=ends, **kw)
            print(p, name, "clean checks by boots a variant:", dict(sorted(ends.items())))
        print(p, "z-threshold frontier:", {t: z_frontier(r, t) for t in (0.95, 0.90, 0.80)})
        print(p, "look-1 bound (lost share of slowed checks by mu):", look1_bound(r))


if __name__ == "__main__":
    main(sys.argv[1:])
