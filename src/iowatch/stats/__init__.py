"""The statistics that turn samples into verdicts: pure functions, no Django, no I/O.

The CLI, the web app and the bisect reach them through one judging policy
(iowatch.judging), so a page, a report and a Jenkins job show the same verdict.

- compare / compare_matrix: A/B of one cell or a family of cells (docs/verdicts.md).
- look_level / next_target: the look schedule of adaptive repetitions.
- change_points: e-divisive means over a history; candidates: the change
  points of several histories as one family, through the selection test (the
  A/B of the segments is iowatch.judging.confirm_change_points).
- confounders: differences between two runs that can explain a change.
- oracle: the bisect's culprit model, the probability of each commit being the
  first bad one given the judged steps (imported as iowatch.stats.oracle).

Names are loaded on first use (PEP 562): the look schedule is plain Python,
and `iowatch run` should not pay scipy's import for it (about a second, more
in a guest under TCG).
"""
from __future__ import annotations

import importlib

_WHERE = {
    "ChangePoint": "changepoints", "Candidate": "changepoints",
    "change_points": "changepoints", "candidates": "changepoints",
    "History": "changepoints",
    "Confounder": "confounders", "confounders": "confounders",
    "DEFAULT_CAP": "sequential", "FIRST": "sequential", "STEP": "sequential",
    "look_level": "sequential", "next_target": "sequential",
    "FDR": "verdict", "OUTCOMES": "verdict", "UNSURE": "verdict", "CellInput": "verdict",
    "CellKey": "verdict", "CellVerdict": "verdict", "SideStats": "verdict", "Verdict": "verdict",
    "benjamini_hochberg": "verdict", "cliffs_delta": "verdict", "compare": "verdict",
    "compare_matrix": "verdict", "mann_whitney_p": "verdict", "side_stats": "verdict",
}
__all__ = sorted(_WHERE)

# The function shares its module's name: bound now, so importing the module
# later cannot shadow it (confounders.py is plain Python, no scipy).
from iowatch.stats.confounders import Confounder, confounders  # noqa: E402


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'iowatch.stats' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"iowatch.stats.{_WHERE[name]}"), name)
    globals()[name] = value
    return value
