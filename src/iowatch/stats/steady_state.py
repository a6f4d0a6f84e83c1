"""When preconditioning rounds have brought an SSD to a steady state.

The rule is the SNIA Solid State Storage Performance Test Specification's
(PTS, "steady state" in its definitions): over a measurement window of the
last `window` rounds (the PTS uses 5),
  - the data excursion, max - min of the rounds' IOPS, is within
    excursion_pct_max (the PTS: 20%) of the window's mean, and
  - the slope excursion, how far the least-squares line moves across the
    window (|slope| x (window - 1)), is within slope_pct_max (the PTS: 10%)
    of the window's mean.
Pure: the runner (iowatch.precondition) measures a round, asks, and stops at
the first round whose window meets both, or at its rounds_max.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from scipy import stats

PTS_WINDOW = 5
PTS_SLOPE_PCT = 10.0
PTS_EXCURSION_PCT = 20.0


@dataclass(frozen=True)
class SteadyState:
    held: bool
    rounds: int  # rounds measured
    window: int
    mean: float | None  # of the last window's IOPS (None: fewer rounds than a window)
    slope: float | None  # IOPS per round, least squares over the last window
    slope_excursion_pct: float | None
    data_excursion_pct: float | None
    reason: str

    def to_dict(self) -> dict:
        return asdict(self)


def steady_state(iops: list[float], window: int = PTS_WINDOW, slope_pct_max: float = PTS_SLOPE_PCT,
                 excursion_pct_max: float = PTS_EXCURSION_PCT) -> SteadyState:
    """Whether the last `window` rounds of `iops` meet the PTS's steady-state rule."""
    if window < 2:
        raise ValueError(f"window is {window}: a slope needs at least 2 rounds")
    if len(iops) < window:
        return SteadyState(False, len(iops), window, None, None, None, None,
                           f"{len(iops)} of the {window} rounds a window needs")
    last = [float(x) for x in iops[-window:]]
    mean = sum(last) / window
    if mean <= 0:
        return SteadyState(False, len(iops), window, mean, None, None, None,
                           "the window's mean IOPS is not positive")
    slope = float(stats.linregress(range(window), last).slope)
    slope_pct = 100 * abs(slope) * (window - 1) / mean
    data_pct = 100 * (max(last) - min(last)) / mean
    held = slope_pct <= slope_pct_max and data_pct <= excursion_pct_max
    if held:
        reason = (f"steady: over the last {window} rounds the fit moves {slope_pct:.1f}% "
                  f"(at most {slope_pct_max:g}%) and the data {data_pct:.1f}% (at most {excursion_pct_max:g}%) "
                  "of their mean")
    else:
        parts = []
        if slope_pct > slope_pct_max:
            parts.append(f"the fit moves {slope_pct:.1f}% of the mean (more than {slope_pct_max:g}%)")
        if data_pct > excursion_pct_max:
            parts.append(f"the data range is {data_pct:.1f}% of the mean (more than {excursion_pct_max:g}%)")
        reason = f"not steady over the last {window} rounds: " + " and ".join(parts)
    return SteadyState(held, len(iops), window, round(mean, 3), round(slope, 3),
                       round(slope_pct, 3), round(data_pct, 3), reason)
