"""Two of the policy's defaults, written once: the minimum effect and the
false-discovery rate a study file or a caller that does not say takes.

The cap of repetitions a side (a study's `max_runs`) has its default
elsewhere: iowatch.stats.sequential.DEFAULT_CAP, beside the look schedule it
bounds. Plain data with no imports, so the statistics (iowatch.stats), the
study loader (iowatch.studies) and the store's models read the same number.
"""

# The smallest change that counts, in % of the base (a study's `min_effect_pct`):
# a confirmed change smaller than this is not a regression, and a slowdown
# ruled out beyond it is "no change" (docs/verdicts.md).
DEFAULT_MIN_EFFECT = 5.0

# The false-discovery rate of one comparison's family of deciding cells
# (Benjamini-Hochberg; the looks of a sequential comparison share it).
FDR = 0.05
