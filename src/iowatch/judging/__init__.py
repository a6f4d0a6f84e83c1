"""The judging policy: the one package that decides what iowatch says about a change
(docs/architecture.md, "The verdict policy"; the why and the figures: docs/verdicts.md).

Every verdict, bisect step and change point is decided here, on the pure
statistics of iowatch.stats; pages, reports and exports only read what it
decided. A newcomer reads it in this order:

- `defaults`: what a study file or a caller may leave out, written once (the
  minimum effect and the false-discovery rate).
- `outcomes`: the vocabulary. One enum of the outcomes with their labels,
  the comparison state each makes, rank, colour class and KCIDB status.
- `policy`: the study's minimum effect and cap, and the decision of one
  comparison: `compare_sides` pairs two sides' cells and judges the deciding
  ones as one family; `Comparison.state`, the canary's `platform_words`,
  `decision_of` (the decision as the store keeps it), and `more_runs`, the
  repetitions the next look wants.
- `sides`: which stored runs make a side (`SideQuery`: its exclusions,
  `admits`, and `choose`), one rule for the store, the dashboard, the HTTP
  API's client and the claim check.
- `bisect`: `judge_step`, a bisect step against both ends, and `culprit`, the
  first bad commit the judged steps point at.
- `changepoints`: `history_of` (one series, with its study's minimum effect),
  `confirm_change_points`, the e-divisive candidates confirmed by the
  A/B of the repetitions either side, and `opening_steps`, those that open
  a regression.
- `worst`: which cell is worst (`worst_order`: a confirmed regression
  before a suspected one, then the slowdown in minimum effects), the one
  order of the bisects, the pages and the mail.
- `next_measurement`: what a judgement asks to be measured next (the cells
  with their ratio partners and canaries, the repetitions, the rounds
  allowed, a bisect step's plan), one answer for check, run --against and
  the bisect.
- `claims`: the claim verdict, a post's published change against the lab's
  comparison (`judge_claim`), with its words (reproduced, not reproduced,
  opposite, not reproducible here, not comparable; in size, smaller, larger).
- `adaptive`: `adapt`, the one loop that measures until the policy is sure
  (check, run --against and the bisect each give it judge, wanted, measure).

`from iowatch.judging import X` gives every name of these modules.
"""
from __future__ import annotations

import importlib

_WHERE = {
    "CELL_OUTCOMES": "outcomes", "CONFIDENT_STATES": "outcomes", "PATCH_STATES": "outcomes",
    "Outcome": "outcomes", "outcome_label": "outcomes", "verdict_line": "outcomes",
    "NOTHING_TO_COMPARE": "outcomes", "NOISY_TIMES": "outcomes",
    "noisy_matrix_words": "outcomes", "reach": "outcomes", "too_noisy": "outcomes",
    "verdict_label": "outcomes", "worse_side": "outcomes", "boots_words": "outcomes",
    "SlowerFamily": "family", "slower_family": "family", "ci_name": "family",
    "DEFAULT_MIN_EFFECT": "defaults", "FDR": "defaults", "Comparison": "policy",
    "FailedCell": "policy", "PlatformDrift": "policy", "RunsWanted": "policy",
    "column_states": "policy", "compare_sides": "policy", "decision_of": "policy",
    "deciding": "policy", "failed_cells": "policy", "max_runs": "policy",
    "min_effect": "policy", "more_runs": "policy", "platform_findings": "policy",
    "platform_words": "policy", "state_of": "policy", "watched": "policy",
    "StepVerdict": "bisect", "judge_step": "bisect", "Culprit": "bisect", "Observation": "bisect",
    "culprit": "bisect", "steps_left": "bisect", "NAME_AT": "bisect",
    "ConfirmedChangePoint": "changepoints", "confirm_change_points": "changepoints",
    "deciding_metrics": "changepoints", "segment_kernels": "changepoints",
    "history_of": "changepoints", "opening_steps": "changepoints",
    "SAME_STEP_KERNELS": "changepoints",
    "severity": "worst", "worst_order": "worst", "verdict_order": "worst",
    "MAX_SIDE_RUNS": "sides", "SideNotFound": "sides", "SideQuery": "sides",
    "Adapted": "adaptive", "adapt": "adaptive",
    "NextMeasurement": "next_measurement", "Wanted": "next_measurement",
    "rounds_allowed": "next_measurement",
    "Claim": "claims", "Judged": "claims", "judge_claim": "claims", "claim_outcome": "claims",
    "published_claims": "claims", "size_of": "claims",
    "ratio_partner": "next_measurement", "with_partners": "next_measurement",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    # Loaded on first use (PEP 562), as iowatch.stats is: the vocabulary
    # (outcomes) is plain data that iowatch.stats' wording reads while the
    # policy's modules are still importing iowatch.stats.
    if name not in _WHERE:
        raise AttributeError(f"module 'iowatch.judging' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"iowatch.judging.{_WHERE[name]}"), name)
    globals()[name] = value
    return value
