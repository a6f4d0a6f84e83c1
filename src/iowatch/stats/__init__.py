"""The statistics that turn samples into verdicts: pure functions, no Django, no I/O.

The CLI, the web app and the bisect reach them through one judging policy
(iowatch.judging), so a page, a report and a Jenkins job show the same verdict.

- compare / compare_matrix: A/B of one cell or a family of cells (DESIGN.md §4).
- look_level / next_target: the look schedule of adaptive repetitions.
- change_points / confirmed_change_points: e-divisive means over a history.
- confounders: differences between two runs that can explain a change.
"""
from iowatch.stats.changepoints import (ChangePoint, ConfirmedChangePoint, change_points,
                                        confirmed_change_points)
from iowatch.stats.confounders import Confounder, confounders
from iowatch.stats.sequential import DEFAULT_CAP, FIRST, STEP, look_level, next_target
from iowatch.stats.verdict import (FDR, OUTCOMES, UNSURE, CellInput, CellKey, CellVerdict,
                                   SideStats, Verdict, benjamini_hochberg, cliffs_delta, compare,
                                   compare_matrix, mann_whitney_p)

__all__ = [
    "DEFAULT_CAP", "FDR", "FIRST", "OUTCOMES", "STEP", "UNSURE", "CellInput", "CellKey",
    "CellVerdict", "ChangePoint", "ConfirmedChangePoint", "Confounder", "SideStats", "Verdict",
    "benjamini_hochberg", "change_points", "cliffs_delta", "compare", "compare_matrix",
    "confirmed_change_points", "confounders", "look_level", "mann_whitney_p", "next_target",
]
