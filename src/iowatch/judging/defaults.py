"""The policy's defaults, written once: what a study file that does not say takes.

Plain data with no imports, so the statistics (iowatch.stats), the study
loader (iowatch.studies) and the store's models read the same number.
"""

# The smallest change that counts, in % of the base (a study's `min_effect_pct`):
# a confirmed change smaller than this is not a regression, and a slowdown
# ruled out beyond it is "no change" (docs/verdicts.md).
DEFAULT_MIN_EFFECT = 5.0
