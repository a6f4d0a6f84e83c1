"""How many repetitions a verdict rests on: the look schedule and when to add runs.

A cell is judged at looks of 5, 10, 15 and 20 repetitions a side (the cap: its
study's max_runs, which adds looks every 5; the callers pass it and the rate q,
this module assumes neither). Each look tests at a share of the false-discovery
rate q from Lan–DeMets alpha spending with the linear function α(t) = q·t
(Kim and DeMets' power family at ρ = 1), t = look / number of looks: q/4 a look
for a cap of 20, 0.00875 each of the shipped q = 0.035. The shares sum to q, so
however many looks an adaptive run takes, the chance that a clean cell is ever
confirmed a regression stays at most q (a union bound over the looks; 2.4% of
a clean cell's paths at q = 0.035, as the looks overlap).

The exact alternative (`EXACT`, off as shipped; why beside it): each look tests
at the level solved from the looks' joint distribution (`nominal_levels`: the z
of two looks correlate as the square root of their information's ratio), so
that the chance a clean cell first crosses at a look is that look's share and
the chance it ever crosses is q itself. The looks overlap, so each then tests at
more than its share: 0.00875, 0.0115, 0.0147 and 0.0181 at a cap of 20 (the
last twice the share), 0.0133 at the twelfth look of a cap of 60.

Why linear and q = 0.035 (issue 41 item 4): a clean check's false alarms sit
at q, and the goal is 5% with margin, so q is designed at 3.5%. Pocock's shape
(α(t) = q·ln(1 + (e − 1)·t), shipped before) spends most early, which a cell
at the cap, a −10% slowdown's look, pays for; at q = 0.035 it left the last
look 0.0060 and the in-memory collection's −10% cells were found in 78% (81.8%
at q = 0.05). The linear shape keeps the last look at 0.00875, as much as
Pocock's at q = 0.05 (0.0086): measured on 1,000 clean checks at 25% between
boots (bench/accuracy/check_boots.py, seed 24) false alarms 2.9% [2.0, 4.1]
against 4.9% before, −20% found 96.75% of 400 against 95.25%, the in-memory
−10% cells 85.1%. The first look at 5 runs keeps 0.00875, enough to confirm a
large slowdown (O'Brien–Fleming would spend 0.00009 there).

The level is spent by information, not by look number (`level_at(nb, nc)`):
t = the effective count n_eff = 2·nb·nc/(nb + nc) placed on the schedule
(5 -> 1/4, 10 -> 2/4, linear between looks, for a cap of 20), and a look
spends α(t_now) − α(t_previous), where the previous look's counts are the
schedule's: each side's count capped at the look before the larger side's.
With equal sides on the schedule that is the level of look k, as before. A
side that cannot grow (a fixed base bundle under `iowatch run --against`)
makes n_eff grow slowly (5 and 20 a side: 8): by look number the second
look's level was spent three times, at 10, 15 and 20, and a clean 40-cell
check raised a false alarm 9.5% of the time (issue 24); by information each
look spends only what its information added, so the shares still sum to at
most q. The previous counts come from the schedule, not from a record of the
looks taken, so a verdict stays a function of the data alone: the adaptive
loop, `iowatch compare` on its bundle afterwards and the server's stored
verdict agree.

Stopping for "no change" (the slowdown that matters is ruled out) or at the
cap never raises the false-alarm rate.

Futility (issue 41 item 3), off as shipped (FUTILE 0; why beside it): a cell
may also stop before the cap when, on its
current trend, no decision is in reach by the cap (`futile`): the chance that
its CI at the cap fits inside +- the minimum effect ("no change"), that it
confirms a slowdown beyond the minimum effect at the cap's level, and that it
confirms a gain, are each below FUTILE. The projection is the textbook
conditional power under the current trend (Lan, Simon and Halperin's stochastic
curtailment, as in Jennison and Turnbull ch. 10): at the cap the difference is
the mean of what is measured and what is to come, so it is normal around
today's difference with variance se_cap² (1 - t), t = se_cap² / se² the
information already in hand. A clean cell whose noise keeps its CI at the cap
wider than the minimum effect cannot end "no change" and, trending near zero,
cannot be confirmed: it ran every clean check to the cap (a clean 40-cell check
booted each variant 20 times at a cap of 20). Stopping early only drops
looks, so it never raises the false-alarm rate; what it costs in power is
measured by bench/accuracy/futility.py. The cap's information assumes both
sides grow to the cap, which overstates it for a fixed base (`run
--against`): that errs toward measuring on.

The family's futility (issue 41 item 3, on as shipped: FAMILY_FUTILE 0.3): a
variant boots while any of its cells is wanted, so a per-cell rule stops a
check only when the last of its 40 cells gives up. `family_futile` stops every
still-wanted cell of a comparison at once when the decisions they may still
reach by the cap (each cell's `decision_chances`, summed: the decisions
measuring on is expected to bring) are fewer than a bound. A lone slowed cell
keeps its own chance, and so the sum, high; it is the same projection, read
for the family. The bound is at most CHANCE a deciding cell (`family_bound`),
and a test on boot means never stops (`decision_chances`' boots). What it buys
and costs: bench/accuracy/CHECK-STOP.md.

The promising zone (`EXTEND`, off as shipped): a cell still unsure at its cap
measures on toward EXTEND times the cap (`reach`) when a confirmed decision
is in reach there on its trend. Every look's level is then spent over the
reach's schedule from the first look, so q still bounds a clean cell however
the zone is entered. Measured, it trades boots for power as a larger cap
does, a little more cheaply, and reaches neither issue 41 goal it was tried
for (docs/verdicts.md, "A promising zone past the cap").
"""
from __future__ import annotations

import functools
import math
import os
from collections.abc import Sequence

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr, ndtri

FIRST = 5        # repetitions a side at the first look, and the default of a judged matrix
STEP = 5         # repetitions added a side when a cell is still unsure
MIN_REPS = 2     # fewer a side and the t-test has no variance to stand on
# Futility: below this chance of each decision by the cap, a cell stops (futile).
# 0 turns it off, as shipped: at 5% it cut the repetitions a side from about 11
# to 6 but a variant's boots only from 20 to 16, and cost -20% slowdowns at 25%
# between boots (92% found against 95% without, bench/accuracy/check_boots.py
# seed 26), a goal issue 41 holds. bench/accuracy/futility.py measures it at CHANCE.
FUTILE = 0.0
CHANCE = 0.05    # the chance futility was designed and measured at
# The family's rule (family_futile): every still-wanted cell of a comparison stops
# when the decisions they may still reach by the cap sum to fewer than this; 0
# turns it off. On as shipped: at 25% between boots it took a clean check from 20
# to 14.3 boots a variant, false alarms 3.5% (3.0% without), -20% found 96.0%
# (96.5% without): bench/accuracy/CHECK-STOP.md.
FAMILY_BOUND = 0.3  # the bound it was designed and measured at
# IOWATCH_FAMILY_FUTILITY=0 turns it off in a process and the commands it starts,
# as IOWATCH_HOLD_ONE_BOOT does the one-boot hold (iowatch.stats.boots): for a
# measurement of what the rule costs and for the tests of the adaptive loop's
# growth (tests/runner/test_adaptive.py), whose scattered bases no cap could
# decide; never for a verdict anyone reads.
FAMILY_FUTILE = 0.0 if os.environ.get("IOWATCH_FAMILY_FUTILITY", "1") == "0" else FAMILY_BOUND
FUTILE_FROM = FIRST  # repetitions a side (effective) before a cell may stop for futility
# The looks' levels: each look's share of q (a union bound over the looks), as
# shipped, or True, the exact levels of the looks' joint distribution
# (nominal_levels). Off as shipped: at q = 0.035 the exact levels raised a clean
# 40-cell check's false alarms from 3.0% to 5.0% [3.5, 7.0] at 25% between
# boots (the union bound's slack is what held the design rate against boot
# noise and small samples), and at q = 0.025, where they hold the rate, they
# found -10% and -20% about as the shipped rule does, and no check booted less
# (docs/verdicts.md, "Exact levels over the looks"). bench/accuracy/futility.py
# --levels measures both.
EXACT = False
# The promising zone (off as shipped: EXTEND 1). A cell may measure past its cap,
# to EXTEND times it, when at the cap it is still unsure and a confirmed
# decision is in reach by then on its current trend (decision_chances to the
# extended cap: its chances of a confirmed slowdown and gain summed, at least
# PROMISING), as Mehta and Pocock's promising zone extends a trial that is
# short of its answer. The levels of every look are then spent over the
# extended schedule from the first look (so q bounds a clean cell's false
# alarms whether or not it extends: stopping at the planned cap only drops
# looks), and the family's futility projects to the planned cap before it (a
# clean check stops as early as it did). What it buys and costs:
# bench/accuracy/futility.py --extend.
EXTEND = 1
PROMISING = 0.5
# What the family's futility projects in the zone: "planned", every chance to the
# cap; "reach", "no change" to the cap and the confirmed decisions to the reach.
ZONE_PROJECTION = "planned"
Z_95 = 1.959963984540054  # the 95% CI's two-sided normal quantile


# The spending functions: linear for the deciding cells (their decisions come
# late); Pocock's for the canaries (a platform that moved must be caught at the
# first look, before the deciding cells confirm anything: iowatch.judging.policy).
LINEAR, POCOCK = "linear", "pocock"


def alpha_spent(t: float, q: float, shape: str = LINEAR) -> float:
    """The share of q usable by information fraction t: q·t (linear) or
    q·ln(1 + (e − 1)·t) (Pocock-type)."""
    t = min(max(t, 0.0), 1.0)
    if shape == POCOCK:
        return q * math.log(1 + (math.e - 1) * t)
    if shape != LINEAR:
        raise ValueError(f"spending {shape!r} is not {LINEAR!r} or {POCOCK!r}")
    return q * t


def effective_n(nb: int, nc: int) -> float:
    """The equal count a side that gives the same standard error of the difference."""
    return 2 * nb * nc / (nb + nc) if nb and nc else 0.0


def look_points(cap: int, *, first: int = FIRST, step: int = STEP) -> list[int]:
    """The repetitions a side of each look up to the cap: [5, 10, 15, 20]."""
    return [*range(first, cap, step), cap]


def looks(cap: int, *, first: int = FIRST, step: int = STEP) -> int:
    """How many looks the schedule up to the cap has: 4 for 5, 10, 15 and 20."""
    return len(look_points(cap, first=first, step=step))


def look_index(n: float, *, cap: int, first: int = FIRST, step: int = STEP) -> int:
    """Which look (1-based) n repetitions a side belong to: 1..5 -> 1, 6..10 -> 2, ..."""
    if n <= first:
        return 1
    return min(looks(cap, first=first, step=step), 1 + math.ceil((n - first - 1e-9) / step))


def look_level(n: float, q: float, *, cap: int, first: int = FIRST,
               step: int = STEP, shape: str = LINEAR) -> float:
    """The nominal level a test at n repetitions a side may use: look k of the
    schedule's K, at information k/K, with the looks before it on the schedule."""
    total = looks(cap, first=first, step=step)
    k = look_index(n, first=first, step=step, cap=cap)
    if not EXACT:
        return alpha_spent(k / total, q, shape) - alpha_spent((k - 1) / total, q, shape)
    return nominal_levels(tuple(j / total for j in range(1, k + 1)), q, shape)[-1]


def information(n: float, *, cap: int, first: int = FIRST, step: int = STEP) -> float:
    """The information fraction of n repetitions a side (or an effective count):
    look k of K at its point, linear between points, the first look's below it."""
    points = look_points(cap, first=first, step=step)
    total = len(points)
    if n <= points[0]:
        return 1 / total
    if n >= points[-1]:
        return 1.0
    k = next(i for i, p in enumerate(points) if p >= n)  # points[k - 1] < n <= points[k]
    lo, hi = points[k - 1], points[k]
    return (k + (n - lo) / (hi - lo)) / total


def level_at(nb: int, nc: int, q: float, *, cap: int, first: int = FIRST,
             step: int = STEP, shape: str = LINEAR) -> float:
    """The nominal level a test of nb against nc repetitions may use. Its look
    spends what its information adds since the schedule's looks before it
    (each side's count capped at each earlier look's point), and the earlier
    looks are those of the schedule, at their information. Equal sides on the
    schedule get look_level's; a fixed side spends only what the growing side adds."""
    points = look_points(cap, first=first, step=step)
    k = look_index(max(nb, nc), first=first, step=step, cap=cap)
    now = information(effective_n(nb, nc), first=first, step=step, cap=cap)
    before = [information(effective_n(min(nb, p), min(nc, p)), first=first, step=step, cap=cap)
              for p in points[:k - 1]]
    times = [t for i, t in enumerate(before) if t > (before[i - 1] if i else 0.0)]
    if times and now <= times[-1]:
        return 0.0  # no information added since the last look: nothing to spend
    if not EXACT:
        last = times[-1] if times else 0.0
        return max(alpha_spent(now, q, shape) - alpha_spent(last, q, shape), 0.0)
    return nominal_levels((*times, now), q, shape)[-1]


GRID = 801  # points of the recursion's grid a look (nominal_levels); 0.5% of a level or better


@functools.lru_cache(maxsize=4096)
def nominal_levels(times: tuple[float, ...], q: float, shape: str = LINEAR) -> tuple[float, ...]:
    """The one-sided nominal levels of looks at the increasing information
    fractions `times`, exact for a statistic with independent increments (the
    z of look j and of look k correlate as sqrt(t_j / t_k)): the chance that a
    clean cell first crosses at look k is alpha_spent(t_k) - alpha_spent(t_k-1),
    so the chance that it ever crosses is alpha_spent(t_K), at most q.

    The Armitage-McPherson-Rowe recursion (Jennison and Turnbull 2000, ch. 19),
    on the score scale S_k = Z_k sqrt(t_k): the density of S_k on the
    continuation region (below the boundary b_k) is the one before convolved
    with the increment's normal, integrated by Simpson's rule on GRID points
    from 8 standard deviations below; b_k is solved so that the chance of
    crossing at look k is its share. No Python library carries it (R's
    ldbounds and gsDesign do); scipy's multivariate normal gives the same levels
    (0.00875, 0.01148, 0.01467, 0.01807 for four looks at q = 0.035) but by
    quasi-Monte Carlo, slowly and not bit for bit twice."""
    levels, grid, density, last = [], None, None, 0.0
    for k, t in enumerate(times):
        share = alpha_spent(t, q, shape) - alpha_spent(last, q, shape)
        if share <= 0:
            raise ValueError(f"information fractions must increase: {times}")
        if density is None:
            b = math.sqrt(t) * float(-ndtri(share))
        else:
            sd = math.sqrt(t - last)  # the increment's, since the look before
            weight = density * _simpson(grid)
            crossing = lambda b: float(weight @ ndtr((grid - b) / sd)) - share  # noqa: E731
            b = brentq(crossing, grid[0] - 10 * sd, grid[-1] + 10 * sd, xtol=1e-10)
        levels.append(float(ndtr(-b / math.sqrt(t))))
        if k + 1 < len(times):
            new = np.linspace(-8 * math.sqrt(times[k + 1]), b, GRID)
            if density is None:
                density = np.exp(-new ** 2 / (2 * t)) / math.sqrt(2 * math.pi * t)
            else:
                kernel = np.exp(-((new[:, None] - grid[None, :]) / sd) ** 2 / 2) / (sd * math.sqrt(2 * math.pi))
                density = kernel @ weight
            grid = new
        last = t
    return tuple(levels)


def _simpson(x: np.ndarray) -> np.ndarray:
    """Simpson's rule weights on an even grid of an odd number of points."""
    w = np.ones(len(x))
    w[1:-1:2], w[2:-1:2] = 4, 2
    return w * (x[1] - x[0]) / 3


def reach(cap: int) -> int:
    """The most repetitions a side a cell of this cap may take in the promising
    zone (EXTEND times the cap); the levels of its looks are spent over it."""
    return int(round(cap * max(EXTEND, 1)))


def next_target(n: int, *, cap: int, first: int = FIRST, step: int = STEP) -> int:
    """The repetitions a side of the next look after n (the cap at most)."""
    if n < first:
        return first
    return min(cap, first + step * (1 + (n - first) // step))


def decision_chances(d: float, se: float, n_eff: float, *, worse_sign: float, delta: float,
                     cap: int, q: float, family: int = 1, boots: int | None = None,
                     schedule: int | None = None) -> tuple[float, float, float] | None:
    """The chances, on the current trend, that a cell measured to `n_eff`
    (effective repetitions a side) with the difference `d` (test scale,
    candidate - base) at standard error `se` ends at the cap as "no change"
    (the cap's 95% CI inside +- `delta`), as a confirmed slowdown and as a
    confirmed gain (beyond `delta` and past the cap's level over the
    `family`'s size: what Benjamini-Hochberg asks of a lone discovery).
    `worse_sign` is +1 when a rise is worse, -1 when a fall is. None when the
    cell may not stop for futility: at or past the cap, before the first look
    (a variance from fewer than FUTILE_FROM repetitions a side is too rough to
    give up on), and without noise (se 0: its verdict is decided).

    `boots`: the smaller side's boots, when the test is on boot means (two
    repetitions a boot or more): None, such a cell may not stop for futility.
    The rules were designed and measured on the shipped check, one repetition
    a boot. On `check adaptive` at 2 a boot (test_paths' draw, seed 44, 10%
    between boots) the family's rule took -20% found from 96.3% to 94.0%
    [92.4, 95.3], and still 94.0% when held off until 5 boots a side
    (bench/accuracy/family_draws.py, CHECK-STOP.md): what it costs there is
    not understood, so it is off there.

    `schedule`: the cap whose look schedule spends the levels (the promising
    zone's reach, `reach`), when it is not `cap` itself."""
    if n_eff >= cap or n_eff < FUTILE_FROM - 1e-9 or not se > 0 or not math.isfinite(d):
        return None
    if boots is not None:
        return None
    se_cap = se * math.sqrt(n_eff / cap)
    spread = se_cap * math.sqrt(1 - n_eff / cap)  # the cap's difference around d
    edge = delta - Z_95 * se_cap  # "no change" needs |d_cap| below it
    p_same = 0.0 if edge <= 0 else float(ndtr((edge - d) / spread) - ndtr((-edge - d) / spread))
    level = look_level(cap, q, cap=schedule or cap) / max(family, 1)
    confirm = max(delta, -float(ndtri(level)) * se_cap)
    worse = worse_sign * d
    p_worse = 1 - float(ndtr((confirm - worse) / spread))
    p_better = 1 - float(ndtr((confirm + worse) / spread))
    return p_same, p_worse, p_better


def futile(d: float, se: float, n_eff: float, *, worse_sign: float, delta: float,
           cap: int, q: float, family: int = 1, chance: float | None = None) -> bool:
    """Whether one cell can stop on its own: each of its decision_chances is
    below `chance` (FUTILE). False where decision_chances is None."""
    chance = FUTILE if chance is None else chance
    if chance <= 0:
        return False
    chances = decision_chances(d, se, n_eff, worse_sign=worse_sign, delta=delta, cap=cap,
                               q=q, family=family)
    return chances is not None and max(chances) < chance


def family_bound(size: int, bound: float | None = None) -> float:
    """The family's bound for a comparison of `size` deciding cells: `bound`
    (FAMILY_FUTILE), but at most CHANCE a cell. One cell is then held to the
    per-cell rule's chance (its three chances summed, stricter than each), and
    the bound reaches FAMILY_BOUND at 6 cells. At 0.3 for every size a study
    of one or three deciding cells lost 3 to 3.5 points of -20% found
    (99.8% to 96.8%, 99.5% to 96.0%: bench/accuracy/family_draws.py)."""
    bound = FAMILY_FUTILE if bound is None else bound
    return min(bound, CHANCE * max(size, 1)) if bound > 0 else 0.0


def family_futile(chances: Sequence[tuple[float, float, float] | None],
                  bound: float | None = None) -> bool:
    """Whether every cell still wanted in a family (each one's decision_chances)
    stops at once: the decisions still to come by the cap, expected, sum to
    less than `bound` (FAMILY_FUTILE, FAMILY_BOUND as shipped; 0 turns it off).

    Why the family and not each cell: a variant boots while any of its cells
    is wanted, so a per-cell rule stops a check only when the least hopeless of
    its 40 cells gives up, and among 40 clean cells one usually trends at 2 se
    (the per-cell rule at 5% left 16 boots a variant of 20). A lone slowed cell
    keeps its own chance near 1 and so the family's sum above the bound; 40
    clean cells of small chances fall below it together. The sum is the
    expected number of decisions that measuring on would bring; its bound is
    how few a boot of every cell is worth. A cell that may not stop for
    futility (None: before the first look, no noise) keeps the family going."""
    bound = FAMILY_FUTILE if bound is None else bound
    if bound <= 0 or not chances or any(c is None for c in chances):
        return False
    return sum(sum(c) for c in chances) < bound
