"""The judging policy: the one package that decides what iowatch says about a change
(docs/architecture.md, "The verdict policy"; the why and the figures: docs/verdicts.md).

Every verdict, bisect step and change point is decided here, on the pure
statistics of iowatch.stats; pages, reports and exports only read what it
decided. Its words and defaults are the plain data below both
(iowatch.vocabulary: the outcomes with their labels, ranks, gates and KCIDB
statuses; the minimum effect, the false-discovery rate and the cap a study
file may leave out). A newcomer reads it in this order:

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

`from iowatch.judging import X` gives every public name of these modules.
"""
from __future__ import annotations

from iowatch.judging.adaptive import Adapted, adapt
from iowatch.judging.bisect import StepVerdict, judge_step
from iowatch.judging.boots import HISTORY_KERNELS, HISTORY_RUNS, boot_variances, one_boot
from iowatch.judging.changepoints import (SAME_STEP_KERNELS, ConfirmedChangePoint,
                                          confirm_change_points, deciding_metrics, history_of,
                                          opening_steps, segment_kernels)
from iowatch.judging.claims import (Claim, Judged, claim_outcome, judge_claim, published_claims,
                                    size_of)
from iowatch.judging.next_measurement import (NextMeasurement, Wanted, next_measurement,
                                              ratio_partner, rounds_allowed, with_partners)
from iowatch.judging.policy import (NOISY_TIMES, Comparison, FailedCell, PlatformDrift, RunsWanted,
                                    column_states, compare_sides, decision_of, deciding,
                                    failed_cells, max_runs, min_effect, more_runs,
                                    platform_findings, platform_words, state_of, too_noisy,
                                    watched)
from iowatch.judging.sides import MAX_SIDE_RUNS, SideNotFound, SideQuery
from iowatch.judging.worst import severity, verdict_order, worse_pct, worst_order

__all__ = ["Adapted", "Claim", "Comparison", "ConfirmedChangePoint", "FailedCell",
           "HISTORY_KERNELS", "HISTORY_RUNS", "Judged", "MAX_SIDE_RUNS", "NOISY_TIMES", "NextMeasurement",
           "PlatformDrift", "RunsWanted", "SAME_STEP_KERNELS", "SideNotFound", "SideQuery",
           "StepVerdict", "Wanted", "adapt", "boot_variances", "claim_outcome", "column_states",
           "compare_sides", "confirm_change_points", "decision_of", "deciding", "deciding_metrics",
           "failed_cells", "history_of", "judge_claim", "judge_step", "max_runs", "min_effect",
           "more_runs", "next_measurement", "one_boot", "opening_steps", "platform_findings",
           "platform_words", "published_claims", "ratio_partner", "rounds_allowed",
           "segment_kernels", "severity", "size_of", "state_of", "too_noisy", "verdict_order", "watched",
           "with_partners", "worse_pct", "worst_order"]
