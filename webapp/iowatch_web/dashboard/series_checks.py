"""One series checked more than once (issue 44 item 10): two machines check
the same patches on bases of their own (each makes its debian-base commit), or
one series is checked again on another host. The series page lists such checks
as one group, named by the series' name and its patches' hashes, and says
where they disagree: "patch 1: regression in the check on v6.12 (lab-1), no
change in the check on c12fff06 (lab-2)". The states are the stored decisions
of each patch against its parent (attention.comparison_states)."""
from __future__ import annotations

from collections import defaultdict

from iowatch_web.dashboard.attention import compare_url, comparison_states
from iowatch_web.regressions.models import StoredComparison
from iowatch_web.results.models import Patch


def identity(series_ids) -> dict[int, tuple]:
    """Each series' identity: its name and its patches' hashes (sha256 of the
    patch text as applied), or their subjects where a patch came without one."""
    patches = defaultdict(list)
    for series_id, index, sha256, subject in (Patch.objects.filter(series_id__in=list(series_ids))
                                              .order_by("index").values_list("series_id", "index",
                                                                             "sha256", "subject")):
        patches[series_id].append((index, sha256 or subject))
    return {s: tuple(patches.get(s, ())) for s in series_ids}


def grouped(checks: list[dict]) -> list[dict]:
    """attention.checks' rows, those of one series (name and patches) together,
    in the order of each group's newest check, with their disagreements."""
    ids = identity([c["series"].pk for c in checks])
    groups: dict[tuple, list[dict]] = {}
    for c in checks:
        groups.setdefault((c["series"].name, ids[c["series"].pk]), []).append(c)
    return [{"name": name, "checks": members,
             "disagreements": disagreements([c["series"] for c in members]) if len(members) > 1 else []}
            for (name, _), members in groups.items()]


def _check_name(series, host: str) -> str:
    base = (series.base or "no base")[:12]
    return f"the check on {base} ({host})"


def disagreements(series: list) -> list[dict]:
    """Per patch index, the checks' stored states when they differ."""
    by_id = {s.pk: s for s in series}
    rows = list(StoredComparison.objects.filter(reason="parent", candidate_kernel__series__in=series)
                .values("id", "host__name", "base_kernel_id", "candidate_kernel_id",
                        "candidate_kernel__series_id", "candidate_kernel__patch_index"))
    states = comparison_states([r["id"] for r in rows])
    subjects = dict(Patch.objects.filter(series__in=series).values_list("index", "subject"))
    per_patch = defaultdict(list)
    for r in sorted(rows, key=lambda r: (r["candidate_kernel__patch_index"], r["id"])):
        state = states[r["id"]]
        per_patch[r["candidate_kernel__patch_index"]].append({
            "check": _check_name(by_id[r["candidate_kernel__series_id"]], r["host__name"]),
            "state": state["state"], "label": state["label"],
            "compare_url": compare_url(r["base_kernel_id"], r["candidate_kernel_id"])})
    return [{"patch": index, "subject": subjects.get(index, ""), "checks": found}
            for index, found in sorted(per_patch.items())
            if len({f["state"] for f in found}) > 1]


def other_checks(series) -> dict:
    """The series page's note: the other checks of the same series (name and
    patches) and the patches they disagree on with this one."""
    from iowatch_web.results.models import PatchSeries

    same_name = list(PatchSeries.objects.filter(name=series.name).exclude(pk=series.pk))
    ids = identity([series.pk] + [s.pk for s in same_name])
    others = [s for s in same_name if ids[s.pk] == ids[series.pk]]
    return {"other_checks": others,
            "disagreements": disagreements([series, *others]) if others else []}
