"""The plain data at the bottom of the verdict path: what an outcome is called,
how bad it is and what a gate reads of it (outcomes), the defaults a study file
may leave out (defaults), and the sentences a verdict is said in (wording).

Below the statistics (iowatch.stats) and the policy (iowatch.judging), which
both read it; it imports neither, only iowatch.figures and iowatch.metrics.
The policy decides; this says the decision in one set of words everywhere.
"""
from __future__ import annotations

from iowatch.vocabulary.defaults import CANARY_FDR, DEFAULT_CAP, DEFAULT_MIN_EFFECT, FDR
from iowatch.vocabulary.outcomes import (CELL_OUTCOMES, CONFIDENT_STATES, CONFIRMED_OUTCOMES, NOISY_TIMES,
                                         NOTHING_TO_COMPARE, PATCH_STATES, STORED_OUTCOMES,
                                         UNDECIDED, UNDECIDED_OUTCOMES, UNDECIDED_STATES, Gate,
                                         Outcome, boots_words, noisy_matrix_words, outcome_label,
                                         reach, too_noisy, verdict_label, verdict_line,
                                         worse_side)
from iowatch.vocabulary.wording import ci_name, metric_phrase, rerun_words, sentence

__all__ = ["CANARY_FDR", "CELL_OUTCOMES", "CONFIDENT_STATES", "CONFIRMED_OUTCOMES", "DEFAULT_CAP", "DEFAULT_MIN_EFFECT", "FDR",
           "Gate", "NOISY_TIMES", "NOTHING_TO_COMPARE", "Outcome", "PATCH_STATES",
           "STORED_OUTCOMES", "UNDECIDED", "UNDECIDED_OUTCOMES", "UNDECIDED_STATES", "boots_words",
           "ci_name", "metric_phrase", "noisy_matrix_words", "outcome_label", "reach",
           "rerun_words", "sentence", "too_noisy", "verdict_label", "verdict_line", "worse_side"]
