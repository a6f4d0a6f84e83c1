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
# (Benjamini-Hochberg; the looks of a sequential comparison share it).
FDR = 0.05

# The most repetitions a side a cell may take (a study's `max_runs`): the last
# look of the schedule (iowatch.stats.sequential).
DEFAULT_CAP = 20
