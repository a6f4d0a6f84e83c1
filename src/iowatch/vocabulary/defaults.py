"""The policy's defaults, written once: what a study file that does not say
takes for its minimum effect, its false-discovery rate and its cap.

The statistics (iowatch.stats) take all three as required arguments and
assume none; the study loader (iowatch.studies), the policy (iowatch.judging)
and the store's models read them here. Plain data with no imports.
"""

# The smallest change that counts, in % of the base (a study's `min_effect_pct`):
# a confirmed change smaller than this is not a regression, and a slowdown
# ruled out beyond it is "no change" (docs/verdicts.md).
DEFAULT_MIN_EFFECT = 5.0

# The false-discovery rate of one comparison's family of deciding cells
# (Benjamini-Hochberg; the looks of a sequential comparison share it). A clean
# check's false alarms sit at it, and the goal is 5% a check: it is designed at
# 3.5% for the margin (issue 41 item 4; iowatch.stats.sequential says what it costs).
FDR = 0.035

# The canaries' family (iowatch.judging.policy): a missed platform move lets a
# drift pass for the kernels' change, a false one only makes a verdict unsure, so
# they keep the rate and the early-spending Pocock shape the deciding cells had
# before (q 5%: 1.79% at the first look of 5 runs, 0.86% at the last).
CANARY_FDR = 0.05

# The most repetitions a side a cell may take (a study's `max_runs`): the last
# look of the schedule (iowatch.stats.sequential).
DEFAULT_CAP = 20
