"""When to stop adding repetitions: a group-sequential rule that keeps the false-alarm rate.

A cell that is inconclusive after the first `first` repetitions per side gets
`step` more per side, up to `max_runs`. Each look tests at a nominal level
from Lan–DeMets alpha spending with the Pocock-type function
α(t) = α·ln(1 + (e − 1)·t), t = runs so far / max_runs; the level at a look is
what the function spends between the previous look and this one. The levels
sum to α, so however many looks are taken the chance of ever calling an A/A
cell a regression or an improvement stays at most α (a union bound; the exact
boundaries would be a little less strict). Pocock's shape rather than
O'Brien–Fleming's because Mann–Whitney at 5 runs per side cannot go below
p = 0.008: O'Brien–Fleming would spend 0.00009 at the first look and waste it.
Stopping for "no-change" (the effect that matters is ruled out) never raises
the false-alarm rate.
"""
from __future__ import annotations

import math
from typing import Sequence

from iowatch.stats.verdict import INCONCLUSIVE, compare


def alpha_spent(t: float, alpha: float) -> float:
    """Pocock-type spending function: the share of alpha usable by information fraction t."""
    return alpha * math.log(1 + (math.e - 1) * min(max(t, 0.0), 1.0))


def look_level(n: int, *, alpha: float, first: int, step: int, max_runs: int) -> float:
    """The nominal level of the look taken at n runs per side."""
    previous = 0 if n <= first else n - step
    return alpha_spent(n / max_runs, alpha) - alpha_spent(previous / max_runs, alpha)


def next_step(base: Sequence[float], candidate: Sequence[float], *, direction: str,
              min_effect_pct: float = 5.0, alpha: float = 0.05, first: int = 5, step: int = 5,
              max_runs: int = 20, seed: int = 0) -> str:
    """"decide" when the cell is decided (or the budget is spent), else "add N":
    N more repetitions on each side."""
    n = min(len(base), len(candidate))
    if n < first:
        return f"add {first - n}"
    level = look_level(n, alpha=alpha, first=first, step=step, max_runs=max_runs)
    v = compare(base, candidate, direction=direction, min_effect_pct=min_effect_pct,
                alpha=level, seed=seed)
    if v.outcome != INCONCLUSIVE or n >= max_runs:
        return "decide"
    return f"add {min(step, max_runs - n)}"
