"""How often could any check at cap 20 confirm a lone -20% cell among m
(issue 41 item 4: -20% >= 95% at 40% between boots)? A near bound with no
iowatch code in it: normal log values at CV 10% (the variance between boots
added as share / (1 - share) of it, one repetition a boot), Student's t at
the looks 5, 10, 15 and 20 a side, each look at its linear share of q
(a quarter) over m, the level Benjamini-Hochberg gives a lone discovery
among m clean cells, the cell confirmed at the first look it passes. No
futility, no rounds as blocks, no minimum effect, so about the most a check
with the shipped spending can find (Benjamini-Hochberg could add a little
where clean cells pass beside it, which is rare at these levels).

    .venv/bin/python bench/accuracy/ideal_power.py
"""
from __future__ import annotations

import argparse
import math

import numpy as np
from scipy.special import stdtr

LOOKS = (5, 10, 15, 20)


def found(m: int, share: float, *, q: float = 0.035, cv: float = 0.10, change: float = -0.20,
          trials: int = 20000, seed: int = 1) -> float:
    """The share of `trials` lone slowed cells confirmed by the cap among `m`."""
    rng = np.random.default_rng(seed)
    sd = math.sqrt(math.log(1 + cv ** 2) / (1 - share))
    base = rng.normal(0, sd, (trials, LOOKS[-1]))
    cand = rng.normal(math.log1p(change), sd, (trials, LOOKS[-1]))
    hit = np.zeros(trials, dtype=bool)
    for n in LOOKS:
        b, c = base[:, :n], cand[:, :n]
        se = np.sqrt((b.var(axis=1, ddof=1) + c.var(axis=1, ddof=1)) / n)
        hit |= stdtr(2 * n - 2, (c.mean(axis=1) - b.mean(axis=1)) / se) <= q / len(LOOKS) / m
    return float(hit.mean())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=20000)
    args = p.parse_args()
    for m in (3, 11, 40):
        for share in (0.25, 0.40):
            print(f"{m} cells, {share:.0%} between boots: a lone -20% cell confirmed by the cap "
                  f"at most {found(m, share, trials=args.trials):.1%} of the time")


if __name__ == "__main__":
    main()
