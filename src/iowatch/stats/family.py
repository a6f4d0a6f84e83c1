"""'Slower, not confirmed' decided at the family level (issue 41 item 2, the lead's rule).

A claim of direction is a discovery: among a comparison's deciding cells it is
made by Benjamini-Hochberg at the study's false-discovery rate (the rate the
confirmations use, passed in: never a default) over each cell's one-sided p
for "slower" (H0: no slowdown). A selected cell not confirmed beyond the
minimum effect is "slower by less than X%, not confirmed", X the far end of its
false-coverage-rate adjusted interval (Benjamini & Yekutieli 2005: level
1 - R*q/m for R selected of m cells). A cell that is not selected and not
confirmed is read off its interval at the family level, 1 - max(R, 1)*q/m:
"no change within X%" when it holds zero, "unsure" in any edge where it does
not (a non-selected p is above max(R, 1)*q/m, so its interval at that level
holds zero on the slower side; the edge is a guard, never expected).

The per-cell rule it replaces (a cell's unadjusted 95% CI wholly slower) was
measured in this worktree: cells still running at the cap are those that
looked slower at every look, and only about 40% of clean 40-cell checks ended
"no change" (goal >= 90%; docs/verdicts.md).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from iowatch.vocabulary.wording import ci_name


@dataclass(frozen=True)
class SlowerFamily:
    """The family's decision on "slower": `selected` cells (keys of the p-values
    given), R of them, out of `m` deciding cells (untested members counted), at
    false-discovery rate `q`."""
    selected: frozenset
    m: int
    q: float

    @property
    def r(self) -> int:
        return len(self.selected)

    def alpha(self, key) -> float:
        """1 - the level of a cell's family-adjusted interval: R*q/m for a selected
        cell (its false-coverage-rate interval), max(R, 1)*q/m for any other."""
        r = self.r if key in self.selected else max(self.r, 1)
        return min(r * self.q / max(self.m, 1), 1.0)

    def words(self, key) -> str:
        """How a report marks the interval: "99.88% CI, family-adjusted over 40 cells"."""
        return ci_name(_Marked(self.m, 1 - self.alpha(key)))


@dataclass(frozen=True)
class _Marked:
    ci_family: int
    ci_level: float


def slower_family(p_slower: Mapping, q: float, m: int | None = None) -> SlowerFamily:
    """Benjamini-Hochberg (step-up) at `q` over the one-sided p-values for
    "slower" of a family's deciding cells ({key: p}); `m` counts untested members
    too (each as p = 1). `q` is the study's rate: required, so that no caller can
    fall back on a default."""
    if not 0 < q < 1:
        raise ValueError(f"the false-discovery rate must be in (0, 1), not {q!r}")
    m = max(len(p_slower), m or 0)
    ranked = sorted(p_slower.items(), key=lambda kv: kv[1])
    r = 0
    for k, (_, p) in enumerate(ranked, start=1):
        if p <= k * q / m:
            r = k
    return SlowerFamily(frozenset(key for key, _ in ranked[:r]), m, q)
