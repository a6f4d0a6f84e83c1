"""The statistics that turn samples into verdicts: pure functions, no Django, no I/O.

The CLI, the web app and the bisect reach them through one judging policy
(iowatch.judging), so a page, a report and a Jenkins job show the same verdict.

- compare / compare_matrix: A/B of one cell or a family of cells (docs/verdicts.md).
- look_level / next_target: the look schedule of adaptive repetitions.
- change_points / confirmed_change_points: e-divisive means over a history;
  confirm_family: the change points of several histories as one family.
- confounders: differences between two runs that can explain a change.
- oracle: the bisect oracle, which end a measured commit resembles (imported
  as iowatch.stats.oracle by the bisect search).

Names are loaded on first use (PEP 562): the look schedule is plain Python,
and `iowatch run` should not pay scipy's import for it (about a second, more
in a guest under TCG).
"""
from __future__ import annotations

import importlib

_WHERE = {
    "ChangePoint": "changepoints", "ConfirmedChangePoint": "changepoints",
    "change_points": "changepoints", "confirmed_change_points": "changepoints",
    "History": "changepoints", "confirm_family": "changepoints",
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
