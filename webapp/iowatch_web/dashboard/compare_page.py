"""What the compare page says beside the verdict iowatch.judging gave: a
headline that claims no more than the sides can carry, and the refusal of a
side whose name matches several kernels (issue 28).

The outcomes, their words and the choice of a side's runs stay the judging
policy's and queries.side_runs'; this only reads them."""
from __future__ import annotations

from django.core.paginator import Page, Paginator
from django.db.models import Max

from iowatch.judging.outcomes import verdict_line
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
    platform canary drifted, that it did (report.render_text's first line too)."""
    if result["cells"] and result.get("platform", {}).get("drifted"):
        return "unsure: " + result["platform"]["words"], result["state"]
    return verdict_line(result["state"], ((c["outcome"], c["size_only"], c["change_pct"])
                                          for c in result["cells"]), len(result["failed"]))


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


def one_kernel(spec: str, role: str) -> None:
    """Raise SeveralKernels when the runs `spec` picks span several kernels.
    A label may name runs of several kernels on purpose (a post's "before"
    numbers of each study), so a side that only a label picked passes."""
    if spec.startswith("kernel:"):
        return
    try:
        runs = queries.side_runs(spec, role)
    except queries.SideNotFound:
        return  # queries.compare says so
    kernels = {r.kernel_id: r.kernel for r in runs}
    if len(kernels) > 1 and not all(r.label == spec for r in runs):
        raise SeveralKernels(role, spec, sorted(kernels.values(), key=lambda k: (
            k.series_id or 0, k.patch_index or 0, k.pk)))


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
