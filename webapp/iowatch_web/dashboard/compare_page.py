"""What the compare page says beside the verdict iowatch.judging gave: a
headline that claims no more than the sides can carry, and the refusal of a
side whose name matches several kernels (issue 28).

The outcomes, their words and the choice of a side's runs stay the judging
policy's and queries.side_runs'; this only reads them."""
from __future__ import annotations

from django.core.paginator import Page, Paginator
from django.db.models import Max

from iowatch.vocabulary.outcomes import verdict_line
from iowatch_web.dashboard import queries
from iowatch_web.dashboard.freshness import cached
from iowatch_web.results.models import Kernel

# The pickers offer the kernels of the newest runs, this many.
PICKER_KERNELS = 200
# A compare shows its deciding cells this many at a time, and this many of its
# diagnostics (largest change first) and lines of its text report: a compare of
# two 100,000-cell runs made a page and a JSON answer of every cell (issue 28).
CELLS_PER_PAGE = 100
DIAGNOSTICS_SHOWN = 100
REPORT_LINES = 400

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


# What /compare and its JSON take in the query: the sides, the page and the filters.
SIDE_PARAMS = ("base", "candidate", "page")


class UnknownParameter(queries.SideNotFound):
    """A query parameter the compare does not take (a filter misspelt or of another page)."""

    def __init__(self, names: list[str]):
        super().__init__(f"unknown query parameter{'s' if len(names) > 1 else ''} "
                         f"{', '.join(repr(n) for n in names)}: a compare takes "
                         f"{', '.join(SIDE_PARAMS + queries.COMPARE_FILTERS)}")


def check_query(query) -> None:
    """Raise UnknownParameter for a parameter outside SIDE_PARAMS and the filters
    (it was ignored, so a filter misspelt showed every cell as if filtered)."""
    unknown = sorted(set(query) - set(SIDE_PARAMS) - set(queries.COMPARE_FILTERS))
    if unknown:
        raise UnknownParameter(unknown)


class SameSides(queries.SideNotFound):
    """Both sides name the same runs: there is nothing to compare."""


class SeveralKernels(queries.SideNotFound):
    """A side's name matches the runs of more than one kernel (a series' base
    and patches share a release): which one was meant is the user's to say."""

    def __init__(self, role: str, spec: str, kernels: list):
        self.role = role
        self.candidates = [{"spec": f"kernel:{k.pk}", "kernel": _described(k)} for k in kernels]
        super().__init__(
            f"{role} {spec!r} matches {len(kernels)} kernels; a side is one kernel, so pick "
            "one: " + "; ".join(f"{c['spec']} ({c['kernel']})" for c in self.candidates))


def _described(kernel) -> str:
    words = queries.kernel_label(kernel.release, kernel.git_commit)
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
    """The runs `spec` picks ([] when none: queries.compare says so); raise
    SeveralKernels when they span several kernels. A label may name the
    published numbers of several posts on purpose (each study's "before"),
    so a side of published numbers only that a label picked passes; measured
    runs of several kernels under one label are refused like a release."""
    try:
        runs = queries.side_runs(spec, role)
    except queries.SideNotFound:
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


def paged(result: dict, filters: dict, page) -> tuple[dict, Page]:
    """A compare's result with one page of its (filtered) deciding cells, the
    first diagnostics and the report's first lines; and that page. The state,
    the summary's counts and the headline stay those of every cell, so each
    page says the same decision."""
    cells = Paginator(queries.filter_cells(result["cells"], filters), CELLS_PER_PAGE).get_page(page)
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
