"""The compare page (/compare and its JSON, /dashboard/api/compare): two sides
judged by iowatch.judging, as `iowatch compare` judges them, and what the page
shows of the judgement. One module for the page, read top down:

- the sides: which stored runs a side names (`side_runs`, by the one side
  rule, SideQuery), and the sides the page refuses: a name of several kernels
  (SeveralKernels), both sides the same runs (SameSides), a query parameter it
  does not take (UnknownParameter); the kernels the pickers offer.
- the judgement: `compare` and `judge_sides`, the policy's comparison as the
  page's dict (its cells worst first, the summary's counts, the failed cells,
  the text report, the platform canary, the boots a side).
- what the page shows: its headline (the policy's verdict line, claiming no
  more than the sides carry), a page of the filtered cells, the charts, each
  cell's numbers in a readable unit.

The outcomes and their words stay the vocabulary's, the decision the
policy's; this module only reads them. The answer is computed once, and off
the request when it is large, by compare_work.py (the verdict worker's queue).
"""
from __future__ import annotations

from collections import Counter

from django.core.paginator import Page, Paginator
from django.db.models import Max

from iowatch.figures import amount
from iowatch.judging import compare_sides, platform_words
from iowatch.judging.sides import SideNotFound, SideQuery
from iowatch.metrics import METRICS
from iowatch.report import render_text
from iowatch.vocabulary import (UNDECIDED_OUTCOMES, Outcome, boots_words, ci_name,
                                noisy_matrix_words, rerun_words, verdict_label, verdict_line)
from iowatch_web.dashboard.freshness import cached
from iowatch_web.dashboard.queries import kernel_label, studies
from iowatch_web.results.models import Kernel, Run
from iowatch_web.store.sides import boot_history, one_host, runs_side, stored_runs

# The pickers offer the kernels of the newest runs, this many.
PICKER_KERNELS = 200
# A compare shows its deciding cells this many at a time, and this many of its
# diagnostics (largest change first) and lines of its text report: a compare of
# two 100,000-cell runs made a page and a JSON answer of every cell (issue 28).
CELLS_PER_PAGE = 100
DIAGNOSTICS_SHOWN = 100
REPORT_LINES = 400


# --- the sides ---------------------------------------------------------------

def side_runs(spec: str, role: str) -> list[Run]:
    """The runs of one side: kernel:ID (the links of the series and regression
    pages), or what `iowatch compare` takes, by the rule every side follows."""
    query = SideQuery(spec, role)
    runs = stored_runs(query)
    if not runs:
        raise query.not_found("the store")
    return runs


# What /compare and its JSON take in the query: the sides, the page and the filters.
SIDE_PARAMS = ("base", "candidate", "page")
COMPARE_FILTERS = ("study", "device_class", "filesystem", "metric")


class UnknownParameter(SideNotFound):
    """A query parameter the compare does not take (a filter misspelt or of another page)."""

    def __init__(self, names: list[str]):
        super().__init__(f"unknown query parameter{'s' if len(names) > 1 else ''} "
                         f"{', '.join(repr(n) for n in names)}: a compare takes "
                         f"{', '.join(SIDE_PARAMS + COMPARE_FILTERS)}")


def check_query(query) -> None:
    """Raise UnknownParameter for a parameter outside SIDE_PARAMS and the filters
    (it was ignored, so a filter misspelt showed every cell as if filtered)."""
    unknown = sorted(set(query) - set(SIDE_PARAMS) - set(COMPARE_FILTERS))
    if unknown:
        raise UnknownParameter(unknown)


class SameSides(SideNotFound):
    """Both sides name the same runs: there is nothing to compare."""


class SeveralKernels(SideNotFound):
    """A side's name matches the runs of more than one kernel (a series' base
    and patches share a release): which one was meant is the user's to say."""

    def __init__(self, role: str, spec: str, kernels: list):
        self.role = role
        self.candidates = [{"spec": f"kernel:{k.pk}", "kernel": _described(k)} for k in kernels]
        super().__init__(
            f"{role} {spec!r} matches {len(kernels)} kernels; a side is one kernel, so pick "
            "one: " + "; ".join(f"{c['spec']} ({c['kernel']})" for c in self.candidates))


def _described(kernel) -> str:
    words = kernel_label(kernel.release, kernel.git_commit)
    if kernel.series_id:
        position = f"patch {kernel.patch_index}" if kernel.patch_index else "base"
        words += f", {position} of the series {kernel.series.name!r}"
    return words


def kernel_choices() -> dict:
    """The kernels a side can be picked from, newest run first: each as the
    spec the form takes (kernel:ID) and in words (release, commit, patch)."""
    return cached("kernel-choices", PICKER_KERNELS, lambda: {"kernels": [
        {"spec": f"kernel:{k.pk}", "kernel": _described(k)}
        for k in (Kernel.objects.annotate(last=Max("runs__received_at")).filter(last__isnull=False)
                  .select_related("series").order_by("-last", "-id")[:PICKER_KERNELS])]})


def one_kernel(spec: str, role: str) -> list:
    """The runs `spec` picks ([] when none: compare says so); raise
    SeveralKernels when they span several kernels. A label may name the
    published numbers of several posts on purpose (each study's "before"),
    so a side of published numbers only that a label picked passes; measured
    runs of several kernels under one label are refused like a release."""
    try:
        runs = side_runs(spec, role)
    except SideNotFound:
        return []
    kernels = {r.kernel_id: r.kernel for r in runs}
    if len(kernels) > 1 and not all(r.label == spec and r.published for r in runs):
        raise SeveralKernels(role, spec, sorted(kernels.values(), key=lambda k: (
            k.series_id or 0, k.patch_index or 0, k.pk)))
    return runs


def two_sides(base: str, candidate: str) -> None:
    """Refuse sides the compare cannot judge: a name of several kernels
    (SeveralKernels), or the same runs on both sides (SameSides)."""
    base_runs, candidate_runs = one_kernel(base, "base"), one_kernel(candidate, "candidate")
    if base_runs and {r.pk for r in base_runs} == {r.pk for r in candidate_runs}:
        kernel = _described(base_runs[0].kernel)
        raise SameSides(f"base {base!r} and candidate {candidate!r} are the same "
                        f"{len(base_runs)} run{'s' if len(base_runs) > 1 else ''} of {kernel}: "
                        "a side compared with itself says nothing; pick another kernel for one side")


# --- the judgement ------------------------------------------------------------

def compare(base_spec: str, candidate_spec: str) -> dict:
    """Judge two sides from their stored samples, now (the pages ask
    compare_work.answer, which keeps the answer and computes it once)."""
    return judge_sides(base_spec, side_runs(base_spec, "base"),
                       candidate_spec, side_runs(candidate_spec, "candidate"))


def judge_sides(base_spec: str, base_runs: list[Run], candidate_spec: str,
                candidate_runs: list[Run]) -> dict:
    """What the compare page and its JSON show of two sides' runs."""
    base = runs_side(base_spec, base_runs)
    candidate = runs_side(candidate_spec, candidate_runs)
    # The deciding cells as every other path judges them (iowatch.judging);
    # the other metrics beside them as diagnostics, never a verdict.
    result = compare_sides(base, candidate, studies=studies(),
                           history=boot_history(one_host([*base_runs, *candidate_runs])))
    kernels = {r.kernel_id for r in base_runs} | {r.kernel_id for r in candidate_runs}
    cells = worst_first([_cell_row(v, deciding=True) for v in result.verdicts])
    diagnostics = worst_first([_cell_row(v, deciding=False) for v in result.diagnostics])
    return {"base": {"spec": base_spec, "title": base.title,
                     "runs": [str(r.run_id) for r in base_runs]},
            "candidate": {"spec": candidate_spec, "title": candidate.title,
                          "runs": [str(r.run_id) for r in candidate_runs]},
            "cells": cells, "diagnostics": diagnostics, "state": result.state,
            "summary": summary(cells, result.failed),
            "failed": [vars(f) for f in result.failed], "report": render_text(result),
            "platform": {"drifted": bool(result.platform), "words": platform_words(result)},
            "noisy": noisy_matrix_words(result.verdicts),
            # One kernel on both sides (an A/A of its runs): the headline says so.
            "same_kernel": str(base_runs[0].kernel) if len(kernels) == 1 else None,
            "boots": boots_words(result.boots_a_side, result.recorded_boots),
            "confounders": [{"name": c.name, "base": str(c.base), "candidate": str(c.candidate),
                             "why": c.why} for c in result.confounders]}


def _cell_row(v, *, deciding: bool) -> dict:
    k = v.key
    return {
        "study": k.study, "device_class": k.device_class, "device": k.device,
        "filesystem": k.filesystem, "group": k.group, "metric": k.metric,
        "unit": METRICS[k.metric].unit, "direction": METRICS[k.metric].direction,
        "deciding": deciding,
        "base": {"n": v.base.n, "mean": v.base.mean, "median": v.base.median, "sd": v.base.sd},
        "candidate": {"n": v.candidate.n, "mean": v.candidate.mean,
                      "median": v.candidate.median, "sd": v.candidate.sd},
        "change_pct": v.change_pct, "ci_low": v.ci_low, "ci_high": v.ci_high,
        # The interval is the family-adjusted one of a "slower" or "no change within X%"
        # cell (issue 41): marked as such beside it.
        "ci_name": ci_name(v) if v.ci_family else None,
        "p_value": v.p_value, "p_adjusted": v.p_adjusted, "p_worse_family": v.p_worse_family,
        "mde_pct": v.mde_pct if deciding else None, "bound_pct": v.bound_pct if deciding else None,
        "outcome": v.outcome if deciding else "diagnostic", "needs_runs": v.needs_runs,
        "rerun": rerun_words(v.needs_runs, v.cap, (v.ci_low, v.ci_high))
        if deciding and v.outcome in UNDECIDED_OUTCOMES and not v.budget_spent else None,
        "label": verdict_label(v) if deciding else Outcome.DIAGNOSTIC.label,
        "size_only": v.size_only, "words": v.words,
        "shown": shown(v.base, v.candidate, METRICS[k.metric].unit)}


# --- what the page shows ------------------------------------------------------

def headline(result: dict) -> tuple[str, str]:
    """(the words, the state the page colours them by) of a compare's result:
    the policy's verdict line, as `iowatch compare` prints it; while the
    platform canary drifted, that it did (report.render_text's first line too);
    led by what makes it no kernel comparison (one kernel on both sides)."""
    if result["cells"] and result.get("platform", {}).get("drifted"):
        words, state = "unsure: " + result["platform"]["words"], result["state"]
    else:
        words, state = verdict_line(result["state"], ((c["outcome"], c["size_only"], c["change_pct"])
                                                      for c in result["cells"]), len(result["failed"]))
    if same := result.get("same_kernel"):
        words = (f"the same kernel on both sides ({same}): an A/A comparison of its runs, so "
                 f"any change is noise, not the kernel; {words}")
    return words, state


# The summary's counts, in the order a maintainer reads them (the words are the outcomes').
SUMMARY = (Outcome.REGRESSION, Outcome.IMPROVEMENT, Outcome.SUSPECTED, Outcome.UNSURE,
           Outcome.SLOWER, Outcome.NO_CHANGE)


def worst_first(rows: list[dict]) -> list[dict]:
    """Rows by outcome (regressions first), then by the size of the change."""
    return sorted(rows, key=lambda r: (Outcome(r["outcome"]).rank, -abs(r["change_pct"] or 0),
                                       r["study"], r["device_class"], r["device"], r["group"],
                                       r["metric"]))


def summary(cells: list[dict], failed: list) -> list[dict]:
    """How many deciding cells came out each way (the failed ones too, when any)."""
    counts = Counter(c["outcome"] for c in cells)
    out = [{"outcome": o.word, "n": counts[o.word],
            "words": o.short if counts[o.word] == 1 else o.plural} for o in SUMMARY]
    if failed:
        out.append({"outcome": Outcome.FAILED.word, "n": len(failed), "words": Outcome.FAILED.short})
    return out


def shown(base, candidate, unit: str) -> dict:
    """Both sides' mean and standard deviation in one readable unit (KiB/s above 10 MiB/s as MiB/s)."""
    (bm, cm, bsd, csd), shown_unit = amount(
        (base.mean, candidate.mean, base.sd or 0.0, candidate.sd or 0.0), unit,
        decide_on=(base.mean, candidate.mean))
    return {"base": bm, "candidate": cm, "base_sd": bsd, "candidate_sd": csd, "unit": shown_unit}


def charts(cells: list[dict]) -> list[dict]:
    """One chart per study and job group (and unit, when a group's deciding metrics
    differ in theirs: one axis never mixes units), drawn in the unit the table
    shows its numbers in (MiB/s rather than KiB/s past 10 MiB/s): `per` is how
    many of the metric's unit make one of the chart's."""
    out: dict[tuple, dict] = {}
    for c in cells:
        key = (c["study"], c["group"], c["unit"])
        out.setdefault(key, {"study": c["study"], "group": c["group"], "unit": c["unit"],
                             "metrics": [], "means": []})
        if c["metric"] not in out[key]["metrics"]:
            out[key]["metrics"].append(c["metric"])
        out[key]["means"] += [c["base"]["mean"], c["candidate"]["mean"]]
    for chart in out.values():
        _, chart["shown_unit"] = amount(tuple(chart.pop("means")), chart["unit"])
        chart["per"] = 1024 if chart["shown_unit"] != chart["unit"] else 1
    return sorted(out.values(), key=lambda g: (g["study"], g["group"], g["unit"]))


def filter_cells(cells: list[dict], filters: dict) -> list[dict]:
    return [c for c in cells if all(not filters.get(f) or c[f] == filters[f] for f in COMPARE_FILTERS)]


def paged(result: dict, filters: dict, page) -> tuple[dict, Page]:
    """A compare's result with one page of its (filtered) deciding cells, the
    first diagnostics and the report's first lines; and that page. The state,
    the summary's counts and the headline stay those of every cell, so each
    page says the same decision."""
    cells = Paginator(filter_cells(result["cells"], filters), CELLS_PER_PAGE).get_page(page)
    report = result["report"].splitlines(keepends=True)
    if len(report) > REPORT_LINES:
        report = report[:REPORT_LINES] + [
            f"... {len(report) - REPORT_LINES} more lines: `iowatch compare --server URL BASE "
            "CANDIDATE` prints the whole report\n"]
    return {**result, "headline": headline(result)[0],
            "cells": list(cells.object_list), "cell_count": cells.paginator.count,
            "page": cells.number, "pages": cells.paginator.num_pages,
            "deciding_count": len(result["cells"]),
            "diagnostics": result["diagnostics"][:DIAGNOSTICS_SHOWN],
            "diagnostic_count": len(result["diagnostics"]), "report": "".join(report)}, cells
