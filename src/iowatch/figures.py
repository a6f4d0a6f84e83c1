"""How iowatch writes a number: one place for every page, report and the mail.

A value, a change, a confidence interval, a p-value and a statistic's name
are written here and nowhere else, so the dashboard, `iowatch compare`, the
regression's e-mail and its words say one number one way (issue 28):

- value: thousands grouped from 1,000 ("52,900"), whole from 100 ("303"),
  three significant digits below ("4.07", "0.125");
- amount: values in one readable unit, KiB/s (and KiB) as MiB/s when every
  value decided on is at least 10 MiB/s; the same rule on every page;
- change: "+14.3%", "-99.4%"; a rise to twice or more as the ratio, "x144"
  (with the multiplication sign), as "+14,257.9%" reads as nothing;
- ci: "[-35.1%, -31.2%]", both ends in % unless both are ratios ("[x2.1, x3.4]");
- p_value: two significant digits ("0.042"), "< 0.001" below a thousandth
  (never "0.000", and no exponent beside plain decimals);
- STATISTIC: the name of each statistic a figure can be ("median", "mean",
  "geometric mean"), said beside the figure wherever one is shown.

Plain ASCII signs, as the mail and the text reports need; pages show them as
they are. No Django, no I/O.
"""
from __future__ import annotations

from collections.abc import Sequence

# From this rise on a change is shown as a ratio (x2 = +100%).
RATIO_FROM = 2.0
TIMES = "\u00d7"
# KiB/s (KiB) shown as MiB/s from this value on.
MIB_FROM = 10 * 1024
# The names of the statistics a figure is, singular and plural.
STATISTIC = {"median": "medians", "mean": "means", "geometric mean": "geometric means"}


def value(v: float | None, missing: str = "n/a") -> str:
    """One value without its unit."""
    if v is None:
        return missing
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def amount(values: Sequence[float | None], unit: str, *,
           decide_on: Sequence[float | None] | None = None) -> tuple[list[str], str]:
    """Values in a readable unit, all in the same one: KiB/s (KiB) as MiB/s
    when every known value of `decide_on` (default: the values) is at least
    10 MiB/s; a missing value is "n/a"."""
    known = [v for v in (decide_on or values) if v is not None]
    if unit in ("KiB/s", "KiB") and known and all(abs(v) >= MIB_FROM for v in known):
        values, unit = [None if v is None else v / 1024 for v in values], unit.replace("KiB", "MiB")
    return [value(v) for v in values], unit


def with_unit(v: float | None, unit: str) -> str:
    """One value with its unit, in the readable unit of amount()."""
    if v is None:
        return "n/a"
    (shown,), shown_unit = amount((v,), unit)
    return f"{shown} {shown_unit}".strip()


def change(pct: float | None, signed: bool = True, digits: int = 1) -> str:
    """A change in %: "+14.3%" ("14.3%" unsigned, "+14%" with no digits), or
    "x144" from twice on."""
    if pct is None:
        return "n/a"
    ratio = 1 + pct / 100
    if ratio >= RATIO_FROM:
        return f"{TIMES}{value(ratio)}"
    if not signed:
        return f"{abs(pct):,.{digits}f}%"
    return f"{pct:+,.{digits}f}%"


def ci(low: float | None, high: float | None, missing: str = "n/a") -> str:
    """A confidence interval of a change: "[-35.1%, -31.2%]"."""
    if low is None or high is None:
        return missing
    if 1 + low / 100 >= RATIO_FROM:  # both ends ratios; else both in % ("[-82.4%, +144.1%]")
        return f"[{change(low)}, {change(high)}]"
    return f"[{low:+,.1f}%, {high:+,.1f}%]"


def p_value(p: float | None, missing: str = "n/a") -> str:
    """A p-value: "0.042", "0.5", "< 0.001"."""
    if p is None:
        return missing
    if p < 0.001:
        return "< 0.001"
    return f"{p:.2g}"


def statistic(name: str, n: int = 1) -> str:
    """A statistic's name, plural for several ("medians")."""
    return STATISTIC[name] if n != 1 else name
