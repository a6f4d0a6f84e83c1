"""Published results as a claim check: does the lab measure what the post said?

A study file (jobs/studies/*.yml) lists the post's result sets under
`published:`; import-published stores each as a published run whose label is
the set's label. Two sets of one device class that follow each other in the
file make a claim per metric both report: "from BEFORE to AFTER, METRIC moved
by X%". The lab checks a claim with its own runs of that study: a measured
run stands for a side when its label (`iowatch run --label`) or its kernel
release is the side's label or kernel. Per host, the before runs and the
after runs are judged by iowatch.judging (compare_sides, as every verdict is),
and each device's verdict is set beside the claim:

- reproduced: the lab's verdict is the change the post reports (regression,
  improvement, or no change, by the study's direction and minimum effect);
- not reproduced: the lab measured no change, or the opposite change;
- unsure: the lab's verdict is suspected or unsure (too few runs to tell);
- not comparable: no lab run of a side, another device class, or a metric
  that does not decide in the study (shown, never judged).
"""
from __future__ import annotations

import statistics
from collections import defaultdict
from urllib.parse import urlencode

from django.db.models import Exists, OuterRef, Q, Subquery
from django.urls import reverse

from iowatch_web.dashboard.freshness import cached
from iowatch.comparison import Side
from iowatch.judging import compare_sides, deciding
from iowatch.metrics import HIGHER, METRICS
from iowatch_web.results.models import Cell, Host, Kernel, Run, Sample, Study
from iowatch_web.retention.values import sample_values
from iowatch_web.results.sides import judging_studies, manifests

VERDICTS = {"reproduced": "reproduced", "not-reproduced": "not reproduced",
            "unsure": "unsure, rerun", "not-comparable": "not comparable"}
# A side of a lab check pools at most this many runs of one host (the newest),
# of at most MAX_LAB_RUNS runs read for a study.
MAX_SIDE_RUNS = 50
MAX_LAB_RUNS = 2000
RULE = ("A claim is one metric between two result sets of the post on one device class (the "
        "earlier set is the before side). A lab run stands for a side when its label "
        "(iowatch run --label) or its kernel release is the side's label or kernel. On each "
        "host with runs of both sides, iowatch judges the before runs against the after runs "
        "(the same judging as every verdict here, with the study's minimum effect of {min:g}%). "
        "Reproduced: the lab's verdict is the change the post reports. Not reproduced: the lab "
        "measured no change or the opposite. Unsure: the lab's verdict is suspected or unsure; "
        "rerun. Not comparable: no lab run of a side, another device class, or a metric that "
        "does not decide in this study.")


def number(value: float | None) -> str:
    """A value as a maintainer reads it: thousands grouped, three significant digits below 100."""
    if value is None:
        return ""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def percent(value: float | None) -> str:
    return "" if value is None else f"{value:+,.1f}%"


def _expected(metric: str, change_pct: float | None, min_effect: float) -> str:
    """The outcome the post's change stands for, as the lab's verdict would say it."""
    if change_pct is None or abs(change_pct) < min_effect:
        return "no-change"
    better = (change_pct > 0) == (METRICS[metric].direction == HIGHER)
    return "improvement" if better else "regression"


def claim_check(study: Study) -> dict:
    """The claims of one study with the lab's verdicts, made again when the
    store changes (dashboard.freshness) or the study file does."""
    files = judging_studies()
    path = files[study.slug].path if study.slug in files else None
    mtime = path.stat().st_mtime_ns if path is not None and path.exists() else 0
    return cached("claims", (study.slug, study.pk), lambda: _claim_check(study), also=str(mtime))


def _published_sides(study: Study, spec) -> list[dict]:
    """The post's result sets as stored (published runs), in the study file's order."""
    order = {(e.label, e.device_class): i for i, e in enumerate(spec.published)} if spec else {}
    entries = {(e.label, e.device_class): e for e in spec.published} if spec else {}
    sides: dict[int, dict] = {}
    for run_pk, run_id, label, release, device_class, group, metric, value in (
            Sample.objects.filter(cell__study=study, cell__run__published=True, job__isnull=True)
            .order_by("cell__run__received_at", "cell__run_id", "id")
            .values_list("cell__run_id", "cell__run__run_id", "cell__run__label",
                         "cell__run__kernel__release", "cell__device__device_class",
                         "group", "metric_id", "value")):
        if run_pk not in sides:
            entry = entries.get((label, device_class))
            sides[run_pk] = {
                "run_id": str(run_id), "label": label, "kernel": release,
                "device_class": device_class or "", "values": {},
                "as_published": {(r.group, r.metric): r.as_published
                                 for r in (entry.results if entry else ())},
                "setup": (entry.setup if entry else "") or ""}
        sides[run_pk]["values"][group, metric] = value
    return sorted(sides.values(), key=lambda s: order.get((s["label"], s["device_class"]), 1 << 30))


def _claims(sides: list[dict], spec, min_effect: float) -> list[dict]:
    """A claim per metric both sets report, for each two sets of a class that follow each other."""
    judged = deciding(spec)
    by_class: dict[str, list[dict]] = defaultdict(list)
    for s in sides:
        by_class[s["device_class"]].append(s)
    claims = []
    for device_class, ordered in by_class.items():
        for before, after in zip(ordered, ordered[1:]):
            for group, metric in sorted(set(before["values"]) & set(after["values"])):
                b, a = before["values"][group, metric], after["values"][group, metric]
                change = (a - b) / b * 100 if b else None
                claims.append({
                    "group": group, "metric": metric, "unit": METRICS[metric].unit,
                    "direction": METRICS[metric].direction,
                    "deciding": (group, metric) in judged, "device_class": device_class,
                    "before": _side_ref(before, group, metric),
                    "after": _side_ref(after, group, metric),
                    "change_pct": change, "change": percent(change),
                    "expected": _expected(metric, change, min_effect),
                    "published_compare_url": _compare_url(before["run_id"], after["run_id"]),
                    "lab": []})
    return claims


def _side_ref(side: dict, group: str, metric: str) -> dict:
    value = side["values"][group, metric]
    return {"label": side["label"], "kernel": side["kernel"], "run_id": side["run_id"],
            "value": value, "text": f"{number(value)} {METRICS[metric].unit}",
            "as_published": side["as_published"].get((group, metric), ""),
            "setup": side["setup"]}


def _compare_url(base: str, candidate: str) -> str:
    return reverse("dashboard:compare") + "?" + urlencode({"base": base, "candidate": candidate})


def _lab_runs(study: Study, sides: list[dict]) -> list[Run]:
    """The measured runs of the study that stand for a published side: by label
    (the run_label index) and by kernel release, as two indexed reads."""
    labels = {s["label"] for s in sides}
    releases = {s["kernel"] for s in sides}
    if not labels:
        return []
    of_study = Exists(Cell.objects.filter(run=OuterRef("pk"), study=study, status="passed"))
    kernels = list(Kernel.objects.filter(release__in=releases).values_list("pk", flat=True))
    found = {}
    for which in (Q(label__in=labels), Q(kernel_id__in=kernels)):
        for run in (Run.objects.filter(which, of_study, published=False)
                    .select_related("host", "kernel__series")
                    .order_by("-received_at", "-id")[:MAX_LAB_RUNS]):
            found[run.pk] = run
    return sorted(found.values(), key=lambda r: (r.received_at, r.pk), reverse=True)


def _stands_for(run: Run, side: dict, other: dict) -> bool:
    """By label, or by kernel release when the two sides' kernels differ."""
    if run.label == side["label"]:
        return True
    return side["kernel"] != other["kernel"] and run.kernel.release == side["kernel"] \
        and run.label != other["label"]


def _judge(claims: list[dict], runs: list[Run], study: Study, spec) -> None:
    """Per claim and host: the lab's before runs against its after runs, judged.
    Every run's manifest is read once, in one batch of queries for all hosts."""
    plans = []
    for claim in claims:
        before, after = claim["before"], claim["after"]
        per_host: dict[str, dict[str, list[Run]]] = defaultdict(lambda: {"before": [], "after": []})
        for run in runs:
            for role, side, other in (("before", before, after), ("after", after, before)):
                if _stands_for(run, side, other) and len(per_host[run.host.name][role]) < MAX_SIDE_RUNS:
                    per_host[run.host.name][role].append(run)
        claim["missing"] = []
        for host, found in sorted(per_host.items()):
            if found["before"] and found["after"]:
                plans.append((claim, host, found))
                continue
            have = "before" if found["before"] else "after"
            lack = after if have == "before" else before
            claim["missing"].append(
                f"{host} has {len(found[have])} run(s) of the {have} side "
                f"({(before if have == 'before' else after)['label']}) but none labelled "
                f"{lack['label']!r} or of kernel {lack['kernel']!r}")
    needed = {r.pk: r for _, _, found in plans for r in found["before"] + found["after"]}
    read = dict(zip(needed, manifests(list(needed.values()), job_samples=False)))
    studies = judging_studies()
    done: dict[tuple, object] = {}
    for claim, host, found in plans:
        key = (host, tuple(r.pk for r in found["before"]), tuple(r.pk for r in found["after"]))
        if key not in done:
            done[key] = compare_sides(
                Side(claim["before"]["label"], "the store", [read[r.pk] for r in found["before"]]),
                Side(claim["after"]["label"], "the store", [read[r.pk] for r in found["after"]]),
                studies=studies)
        result = done[key]
        matched = False
        for v, judged in [(v, True) for v in result.verdicts] + [(v, False) for v in result.diagnostics]:
            k = v.key
            if (k.study, k.group, k.metric) != (study.slug, claim["group"], claim["metric"]):
                continue
            matched = True
            claim["lab"].append(_lab_row(claim, v, judged, host, found))
        if not matched:
            claim["missing"].append(f"{host}'s runs of both sides have no {claim['metric']} "
                                    f"sample in group {claim['group']}")


def _lab_row(claim: dict, v, judged: bool, host: str, found: dict) -> dict:
    k = v.key
    row = {"host": host, "device": k.device, "device_class": k.device_class,
           "filesystem": k.filesystem, "outcome": v.outcome if judged else "diagnostic",
           "before_n": v.base.n, "after_n": v.candidate.n,
           "before_median": v.base.median, "after_median": v.candidate.median,
           "before_text": number(v.base.median), "after_text": number(v.candidate.median),
           "change_pct": v.change_pct, "change": percent(v.change_pct),
           "ci": f"{percent(v.ci_low)} to {percent(v.ci_high)}" if v.ci_low is not None else "",
           "words": v.words, "runs": (len(found["before"]), len(found["after"])),
           "compare_url": _compare_url(claim["before"]["label"], claim["after"]["label"])}
    if k.device_class != claim["device_class"]:
        row["verdict"], row["why"] = "not-comparable", (
            f"measured on {k.device_class or 'an unknown class'}; the post's numbers are from "
            f"{claim['device_class']}")
    elif not judged:
        row["verdict"], row["why"] = "not-comparable", (
            f"{claim['metric']} does not decide in this study: the lab's change is shown, not judged")
    elif v.outcome in ("suspected", "inconclusive"):
        row["verdict"], row["why"] = "unsure", v.words
    elif v.outcome == claim["expected"]:
        row["verdict"], row["why"] = "reproduced", (
            f"the post: {claim['change']}, the lab: {row['change']} ({v.outcome})")
    else:
        row["verdict"], row["why"] = "not-reproduced", (
            f"the post: {claim['change']} ({claim['expected']}), the lab: {row['change']} "
            f"({v.outcome})")
    row["verdict_label"] = VERDICTS[row["verdict"]]
    return row


def _sum_up(claim: dict) -> None:
    """The claim's verdict from its comparable lab rows; not comparable, and why, without one."""
    comparable = [r for r in claim["lab"] if r["verdict"] != "not-comparable"]
    verdicts = {r["verdict"] for r in comparable}
    where = lambda v: "; ".join(f"{r['host']} {r['device']} ({r['why']})"  # noqa: E731
                                for r in comparable if r["verdict"] == v)
    if not comparable:
        why = [r["why"] for r in claim["lab"]] + claim["missing"]
        claim["verdict"] = "not-comparable"
        claim["why"] = "; ".join(dict.fromkeys(why)) or (
            f"no lab run labelled {claim['before']['label']!r} or "
            f"{claim['after']['label']!r}, nor of kernel {claim['before']['kernel']!r} or "
            f"{claim['after']['kernel']!r}")
    elif verdicts == {"reproduced"}:
        claim["verdict"], claim["why"] = "reproduced", f"reproduced on {where('reproduced')}"
    elif "not-reproduced" in verdicts:
        claim["verdict"] = "not-reproduced"
        claim["why"] = f"not reproduced on {where('not-reproduced')}" + (
            f"; reproduced on {where('reproduced')}" if "reproduced" in verdicts else "")
    else:
        claim["verdict"], claim["why"] = "unsure", f"unsure on {where('unsure')}: rerun"
    claim["verdict_label"] = VERDICTS[claim["verdict"]]


def _newest_medians(study: Study, claims: list[dict]) -> dict[tuple, list[dict]]:
    """Per (group, metric): what each host and device measures now (the newest
    kernel measured there), for the chart beside the post's numbers."""
    wanted = {(c["group"], c["metric"]) for c in claims}
    if not wanted:
        return {}
    # Per host, its newest run of the study: a walk down the host's runs, not a
    # scan of every cell of the study.
    newest = (Run.objects.filter(host=OuterRef("pk"), published=False)
              .filter(Exists(Cell.objects.filter(run=OuterRef("pk"), study=study, status="passed")))
              .order_by("-id"))
    kernels = {host_id: kernel_id for host_id, kernel_id in
               Host.objects.exclude(kind="published")
               .annotate(kernel=Subquery(newest.values("kernel_id")[:1]))
               .values_list("id", "kernel") if kernel_id is not None}
    if not kernels:
        return {}
    runs = Q()
    for host_id, kernel_id in kernels.items():
        runs |= Q(run__host_id=host_id, run__kernel_id=kernel_id)
    cells = Cell.objects.filter(runs, study=study, run__published=False, status="passed")
    where = {pk: (host, device or "", device_class or "", release) for
             pk, host, device, device_class, release in cells.values_list(
                 "id", "run__host__name", "device__name", "device__device_class",
                 "run__kernel__release")}
    values = defaultdict(list)
    names = {}
    # Raw samples, or retention's summaries of an older run (retention/values.py).
    for v in sample_values(cells, metrics={m for _, m in wanted}):
        if (v.group, v.metric) not in wanted:
            continue
        host, device, device_class, release = where[v.cell_id]
        values[v.group, v.metric, host, device].append(v.value)
        names[host, device] = (device_class, release)
    out: dict[tuple, list[dict]] = defaultdict(list)
    for (group, metric, host, device), vs in sorted(values.items()):
        device_class, release = names[host, device]
        out[group, metric].append({"host": host, "device": device, "device_class": device_class,
                                   "kernel": release, "median": statistics.median(vs),
                                   "text": number(statistics.median(vs)),
                                   "n": len(vs)})
    return out


def _bars(claim: dict, newest: list[dict]) -> list[dict]:
    """The chart's bars: the post's two numbers, the lab's per host and device."""
    # A label is [where, which side]: two lines on the chart's axis.
    bars = [{"label": [f"post ({claim['device_class']})", claim["before"]["label"]],
             "value": claim["before"]["value"], "kind": "published"},
            {"label": [f"post ({claim['device_class']})", claim["after"]["label"]],
             "value": claim["after"]["value"], "kind": "published"}]
    for r in claim["lab"]:
        where = f"{r['host']} {r['device']} ({r['device_class']})"
        bars.append({"label": [where, claim["before"]["label"]], "value": r["before_median"],
                     "kind": "before"})
        bars.append({"label": [where, claim["after"]["label"]], "value": r["after_median"],
                     "kind": "after"})
    if not claim["lab"]:
        for m in newest:
            bars.append({"label": [f"{m['host']} {m['device']} ({m['device_class']})",
                                   f"now: {m['kernel']}"], "value": m["median"], "kind": "newest"})
    return bars


def _study_info(study: Study, spec) -> dict:
    if spec is None:  # a study in the store whose file is gone
        return {"slug": study.slug, "title": study.title or study.slug, "seed": study.seed,
                "source": "", "question": "", "min_effect_pct": study.min_effect_pct,
                "device_classes": [], "in_files": False}
    return {"slug": study.slug, "title": spec.title, "seed": spec.seed, "source": spec.source,
            "question": spec.question or "", "min_effect_pct": spec.min_effect_pct,
            "device_classes": list(spec.device_classes), "in_files": True}


def _claim_check(study: Study) -> dict:
    spec = judging_studies().get(study.slug)
    info = _study_info(study, spec)
    sides = _published_sides(study, spec)
    claims = _claims(sides, spec, info["min_effect_pct"])
    _judge(claims, _lab_runs(study, sides), study, spec)
    newest = _newest_medians(study, claims)
    for i, claim in enumerate(claims):
        _sum_up(claim)
        claim["id"] = i
        claim["measured_now"] = newest.get((claim["group"], claim["metric"]), [])
        claim["bars"] = _bars(claim, claim["measured_now"])
        values = [b["value"] for b in claim["bars"] if b["value"] and b["value"] > 0]
        # A log axis when the numbers differ more than tenfold (a 19 KiB/s bar beside 17,480).
        claim["log_scale"] = bool(values) and max(values) > 10 * min(values)
    # Deciding claims first, then by class and metric.
    claims.sort(key=lambda c: (not c["deciding"], c["device_class"], c["group"], c["metric"]))
    counts = defaultdict(int)
    for c in claims:
        counts[c["verdict"]] += 1
    return {"study": info, "rule": RULE.format(min=info["min_effect_pct"]),
            "sides": [{k: v for k, v in s.items() if k not in ("values", "as_published")}
                      for s in sides],
            "claims": claims,
            "summary": [{"verdict": v, "label": VERDICTS[v], "n": counts[v]}
                        for v in VERDICTS if counts[v]]}


def studies_index() -> list[dict]:
    """Every stored study with its file's words and its claims' verdicts."""
    rows = []
    for study in Study.objects.order_by("slug"):
        check = claim_check(study)
        rows.append({**check["study"], "summary": check["summary"],
                     "claims": len(check["claims"]), "sides": len(check["sides"])})
    return rows


def published_values(run: Run) -> dict:
    """A published run's numbers as the post gave them, and the claims they make."""
    files = judging_studies()
    rows = []
    study_slugs = []
    for slug, device_class, group, metric, value in (
            Sample.objects.filter(cell__run=run, job__isnull=True)
            .order_by("cell__key", "group", "metric_id")
            .values_list("cell__study__slug", "cell__device__device_class", "group",
                         "metric_id", "value")):
        entry = next((e for e in (files[slug].published if slug in files else ())
                      if e.label == run.label and e.device_class == device_class), None)
        result = entry.result(group, metric) if entry else None
        quoted = result.as_published if result else ""
        rows.append({"study": slug, "group": group, "metric": metric, "value": value,
                     "text": f"{number(value)} {METRICS[metric].unit}" if metric in METRICS
                     else number(value), "as_published": quoted})
        if slug not in study_slugs:
            study_slugs.append(slug)
    return {"rows": rows, "studies": study_slugs}
