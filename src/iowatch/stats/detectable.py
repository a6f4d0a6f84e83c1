"""The minimum detectable effect of a cell: the smallest true change its noise
lets the test confirm, at its repetitions, with a stated power.

What "no change within X%" says is another number: X is the equivalence
bound, the slowdown the data's 80% one-sided bound cannot rule out
(Verdict.bound_pct). The bound is a statement about the data (it moves with
the observed change: an improved cell rules out every slowdown, bound 0%);
the minimum detectable effect is a statement about the noise and the runs
(a cell that improved by 20% at CV 10% and 5 runs a side could still not
have confirmed a 10% slowdown). Reports give both, each by its own name.

The formula, on the log scale (docs/verdicts.md, "What a cell could detect"):

    MDE_log = (z_{1 - alpha} + z_{power}) * SE

SE the standard error of the difference of the sides' mean log values (of
their boot means when the test was on boot means), alpha the one-sided level
a lone changed cell of the family would be held to (the look's level over the
family's size: Benjamini-Hochberg's first step), power 80%. Normal quantiles,
not Student's: a planning figure, as in every power table; at 5 runs a side
(8 degrees of freedom) it understates by about a tenth. In % of the base, in
the metric's worse direction: a fall of 1 - exp(-MDE_log) for
higher-is-better metrics, a rise of exp(MDE_log) - 1 for lower-is-better;
cells off the log scale (zeros or negative values) use the relative linear
difference, MDE_log itself.
"""
from __future__ import annotations

import math

from scipy.special import ndtri, stdtrit

from iowatch.metrics import HIGHER

MDE_POWER = 0.8


def minimum_detectable_effect(se: float, alpha: float, *, direction: str,
                              log_scale: bool = True, power: float = MDE_POWER) -> float:
    """The smallest slowdown, in % of the base (positive), that a one-sided test
    at `alpha` confirms with probability `power` when the standard error of the
    difference (log scale, or relative when not `log_scale`) is `se`; rounded
    up to a tenth of a %."""
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha {alpha} and power {power} must lie in (0, 1)")
    if se < 0 or not math.isfinite(se):
        raise ValueError(f"standard error {se} must be finite and >= 0")
    d = (float(ndtri(1 - alpha)) + float(ndtri(power))) * se
    if not log_scale:
        pct = d * 100
    elif direction == HIGHER:
        pct = -math.expm1(-d) * 100
    else:
        pct = math.expm1(d) * 100
    return math.ceil(pct * 10 - 1e-9) / 10


def width_at_cap_pct(values, cap: int) -> float | None:
    """The half-width, in % of the base, of a change's two-sided 95% CI at
    `cap` independent runs a side when both sides are as noisy as `values`
    (one side's runs): the narrowest "no change within X%" the cap could
    give at that noise. On the log scale, Student's t with 2 cap - 2 degrees
    of freedom; None with under 3 values or a value <= 0 (off the log scale)."""
    logs = [math.log(v) for v in values if v > 0]
    if len(logs) < 3 or len(logs) != len(values) or cap < 2:
        return None
    mean = sum(logs) / len(logs)
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
    return math.expm1(float(stdtrit(2 * cap - 2, 0.975)) * sd * math.sqrt(2 / cap)) * 100
