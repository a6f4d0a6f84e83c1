"""The statistics that turn samples into verdicts: pure functions, no Django, no I/O.

The CLI, the web app and the bisect call the same code (CONVENTIONS.md), so a
page, a report and a Jenkins job always show the same verdict.

- compare / compare_matrix: A/B of one cell or a whole matrix (DESIGN.md §4).
- change_points / confirmed_change_points: e-divisive means over a history.
- confounders: differences between two runs that can explain a change.
- next_step: the sequential rule that says when to stop adding repetitions.
"""
from iowatch.stats.changepoints import (ChangePoint, ConfirmedChangePoint, change_points,
                                        confirmed_change_points)
from iowatch.stats.confounders import Confounder, confounders
from iowatch.stats.sequential import next_step
from iowatch.stats.verdict import (OUTCOMES, CellInput, CellKey, CellVerdict, SideStats, Verdict,
                                   benjamini_hochberg, cliffs_delta, compare, compare_matrix,
                                   mann_whitney_p)

__all__ = [
    "OUTCOMES", "CellInput", "CellKey", "CellVerdict", "ChangePoint", "ConfirmedChangePoint",
    "Confounder", "SideStats", "Verdict", "benjamini_hochberg", "change_points", "cliffs_delta",
    "compare", "compare_matrix", "confirmed_change_points", "confounders", "mann_whitney_p",
    "next_step",
]
