"""Verdicts in words that cannot be read two ways (never LKP's ambiguous "-71.2% improvement").

A sentence says what moved, which way, by how much, from what to what, in the
metric's unit (the numbers written by iowatch.figures, the statistic named),
and what that means given the metric's direction.
"""
from __future__ import annotations

import math

from iowatch import figures
from iowatch.vocabulary.outcomes import NOISY_TIMES, outcome_label, reach, worse_side
from iowatch.metrics import HIGHER, INFO, METRICS

# Suffix of a metric name -> how a maintainer says it ({d} is the I/O direction).
_PHRASES = {
    "bw_kib_s": "{d} bandwidth",
    "bw_min_kib_s": "slowest {d} job's bandwidth",
    "bw_max_kib_s": "fastest {d} job's bandwidth",
    "iops": "{d} IOPS",
    "runtime_min_ms": "shortest {d} job runtime",
    "runtime_max_ms": "longest {d} job runtime",
    "io_kib": "{d} I/O done",
    "ios": "{d} requests",
    "files_per_s": "file create rate",
    "time_ms": "{d} time",
    "nat_flush_ms": "NAT flush time",
    "sys_s": "system CPU time",
    "user_s": "user CPU time",
    "fs_to_raw": "filesystem/raw ratio",
}


def metric_phrase(metric: str | None) -> str:
    if not metric:
        return "the value"
    if metric == "wall_s":
        return "wall-clock time"
    head, _, tail = metric.rpartition(".")
    prefix = "device " if head.startswith("device") else ""
    d = tail.split("_", 1)[0] if head == "device" else head
    for suffix, phrase in _PHRASES.items():
        if tail == suffix or (head == "device" and tail.endswith("_" + suffix)):
            return prefix + phrase.format(d=d).replace(" f2fs", "").strip()
    m = METRICS.get(metric)
    words = metric.replace(".", " ").replace("_", " ")
    return m.description if m and len(m.description) < 50 else words


def ci_name(v) -> str:
    """What a verdict-shaped object's printed interval is: "95% CI", or, when
    ci_low/ci_high are the family-adjusted interval, "99.88% CI, family-adjusted
    over 40 cells"."""
    m, level = getattr(v, "ci_family", None), getattr(v, "ci_level", None)
    if not m or level is None:
        return "95% CI"
    return f"{100 * level:.4g}% CI, family-adjusted over {m} cell{'s' if m != 1 else ''}"


def rerun_words(needs_runs: int | None, cap: int | None,
                ci: tuple[float | None, float | None]) -> str | None:
    """What rerunning an undecided cell takes: about N more runs a side when
    that stays within the cap (the stats give no estimate past it), else that
    the cap cannot decide it at this noise, with the CI's half-width; None
    when neither is known. Every page, report and sentence says it so."""
    if needs_runs:
        return f"needs about {needs_runs} more runs a side"
    if cap and ci[0] is not None and ci[1] is not None:
        return (f"not decidable within the cap ({cap}) at this noise: "
                f"CI \u00b1{abs(ci[1] - ci[0]) / 2:.1f}%")
    return None


def sentence(metric: str | None, direction: str, base_mean: float, cand_mean: float,
             change_pct: float | None, outcome: str, *, size_only: bool, min_effect_pct: float,
             needs_runs: int | None, hidden_pct: float | None = None,
             runs: tuple[int, int] | None = None, budget_spent: bool = False,
             bound_pct: float | None = None, statistic: str | None = None,
             ci: tuple[float | None, float | None] = (None, None),
             ci_words: str | None = None, cap: int | None = None,
             stopped_before: int | None = None, one_boot: bool = False) -> str:
    """`statistic` names what base_mean and cand_mean are ("geometric mean",
    "mean"), said after them; None for single values. `ci` is the change's 95%
    CI: "no change" and its X are read off it (issue 41); `ci_words` names it when
    it is not the cell's own 95% CI ("99.88% CI, family-adjusted over 40 cells").
    `cap`: an unsure cell's cap, for rerun_words. `stopped_before`: the cap the
    cell stopped before because no decision was in reach by it
    (iowatch.stats.sequential.futile); its budget is spent all the same.
    `one_boot`: a change the test confirmed, held because a side is one boot
    and nothing recorded the cell's variance between boots (issue 41 item 1)."""
    unit = METRICS[metric].unit if metric in METRICS else ""
    (b, c), unit = figures.amount((base_mean, cand_mean), unit)
    what = metric_phrase(metric)
    unit_text = (f" {unit}" if unit else "") + (f" ({figures.statistic(statistic, 2)})"
                                                if statistic else "")
    if change_pct is None:
        moved = f"{what} went from {b} to {c}{unit_text}"
    elif change_pct == 0 or math.isclose(base_mean, cand_mean):
        moved = f"{what} stayed at {b}{unit_text}"
    else:
        verb = "rose" if change_pct > 0 else "fell"
        moved = f"{what} {verb} {figures.change(change_pct, signed=False)}, from {b} to {c}{unit_text}"
    better = "higher is better" if direction == HIGHER else "lower is better"
    slowdown = "a fall" if direction == HIGHER else "a rise"
    if direction == INFO:
        meaning = "information only, not judged"
    elif outcome == "regression":
        meaning = f"a regression ({better})"
    elif outcome == "improvement":
        meaning = f"an improvement ({better})"
    elif outcome in ("no-change", "slower") and reach(outcome, ci, direction,
                                                       min_effect_pct) is not None:
        # The CI reaches beyond the minimum effect: say what it holds, in its words.
        x = reach(outcome, ci, direction, min_effect_pct)
        label = outcome_label(outcome, ci, direction, min_effect_pct)
        named = ci_words or "95% CI"
        if outcome == "slower":
            meaning = (f"{label} ({named} {figures.ci(*ci)}: slower at the family's "
                       f"false-discovery rate, but not confirmed beyond the minimum effect of "
                       f"{min_effect_pct:g}%; not a regression and not \"no change\"")
        elif worse_side(ci, direction)[1] < 0:  # wholly on the better side
            meaning = (f"{label} ({named} {figures.ci(*ci)}: better, so no slowdown; a gain "
                       f"beyond the minimum effect of {min_effect_pct:g}% is not confirmed")
        else:
            meaning = (f"{label} ({named} {figures.ci(*ci)}; the minimum effect is "
                       f"{min_effect_pct:g}%: a change of up to {x:g}% either way is not ruled out")
        if x > NOISY_TIMES * min_effect_pct:
            meaning += (f"; over {NOISY_TIMES}x the minimum effect: the study cannot decide "
                        "this cell at this noise")
        meaning += f"; {_spent(runs, stopped_before)})" if budget_spent else ")"
    elif outcome == "no-change":
        if change_pct is not None and not size_only and abs(change_pct) > min_effect_pct \
                and (change_pct > 0) == (direction == HIGHER):
            # "No change" is about slowdowns: a cell that moved the better way by more
            # than the minimum effect, unconfirmed, has ruled out a slowdown, not a gain.
            gain = "a rise" if direction == HIGHER else "a fall"
            meaning = (f"no slowdown that matters (the minimum effect is {min_effect_pct:g}%); "
                       f"{gain} of {figures.change(change_pct, signed=False)} is not confirmed")
        else:
            meaning = f"no change that matters (the minimum effect is {min_effect_pct:g}%)"
        if hidden_pct is not None and not size_only:
            meaning += (f"; rules out {slowdown} of more than {figures.change(max(hidden_pct, 0), signed=False)} "
                        "(80% confidence)")
    else:
        meaning = _undecided(outcome, one_boot, budget_spent, runs, stopped_before, slowdown,
                             hidden_pct, needs_runs, cap, ci)
    if size_only and direction != INFO:
        meaning += "; one sample on a side, judged by size only"
    elif runs and direction != INFO:
        meaning += f" [{runs[0]} vs {runs[1]} runs]"
    return f"{moved}: {meaning}"


def _undecided(outcome: str, one_boot: bool, budget_spent: bool, runs, stopped_before,
               slowdown: str, hidden_pct, needs_runs, cap, ci) -> str:
    """What a suspected or unsure cell means, and what would decide it."""
    if one_boot:
        return (("suspected" if outcome == "suspected" else "unsure") + ": one boot a side, "
                "boot again to confirm (no variance between boots is recorded for this cell "
                "on this host)")
    meaning = "a suspected regression, not confirmed" if outcome == "suspected" else "unsure"
    if budget_spent:
        meaning += (f"; {_spent(runs, stopped_before)} and "
                    f"{slowdown} of up to {figures.change(max(hidden_pct or 0, 0), signed=False)} is not ruled out")
    elif said := rerun_words(needs_runs, cap, ci):
        meaning += (": rerun, " if needs_runs else ": ") + said
    return meaning


def _spent(runs: tuple[int, int] | None, cap: int | None) -> str:
    """Why no more runs come: the budget spent at the cap, or stopped before it."""
    n = min(runs) if runs else "?"
    if cap is None:
        return f"the budget of {n} runs a side is spent"
    return (f"stopped at {n} runs a side: no decision is in reach by the cap of {cap} "
            "at this noise")
