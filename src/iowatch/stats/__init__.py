"""The statistics that turn samples into verdicts: pure functions, no Django, no I/O.

The CLI, the web app and the bisect reach them through one judging policy
(iowatch.judging), so a page, a report and a Jenkins job show the same verdict.
They sit below the policy and above the vocabulary (iowatch.vocabulary): they
import nothing of iowatch.judging, and take a study's cap, false-discovery rate
and minimum effect as required arguments, never a default.

- compare / compare_matrix: A/B of one cell or a family of cells (docs/verdicts.md).
- look_level / next_target: the look schedule of adaptive repetitions.
- slower_family: "slower, not confirmed" decided over a family (family.py).
- change_points: e-divisive means over a history; candidates: the change
  points of several histories as one family, through the selection test (the
  A/B of the segments is iowatch.judging.confirm_change_points).
- confounders: differences between two runs that can explain a change.
- oracle: the bisect's culprit model, the probability of each commit being the
  first bad one given the judged steps (imported as iowatch.stats.oracle).
"""
from __future__ import annotations

from iowatch.stats.changepoints import Candidate, ChangePoint, History, candidates, change_points
from iowatch.stats.confounders import Confounder, confounders
from iowatch.stats.family import SlowerFamily, slower_family
from iowatch.stats.sequential import FIRST, STEP, look_level, next_target
from iowatch.stats.verdict import (CellInput, CellKey, CellVerdict, SideStats, Verdict,
                                   benjamini_hochberg, cliffs_delta, compare, compare_matrix,
                                   mann_whitney_p, side_stats)

__all__ = ["Candidate", "CellInput", "CellKey", "CellVerdict", "ChangePoint", "Confounder",
           "FIRST", "History", "STEP", "SideStats", "SlowerFamily", "Verdict",
           "benjamini_hochberg", "candidates", "change_points", "cliffs_delta", "compare",
           "compare_matrix", "confounders", "look_level", "mann_whitney_p", "next_target",
           "side_stats", "slower_family"]
