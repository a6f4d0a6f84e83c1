"""Published results as a claim check: does the lab measure what the post said?

A study file (jobs/studies/*.yml) lists the post's result sets under
`published:`; import-published stores each as a published run whose label is
the set's label. The claims and their outcomes are iowatch.judging.claims', the same
code as `iowatch reproduce`'s text report: published_claims makes them (two
sets of one device class that follow each other in the file, per metric both
report), judge_claim judges each on the lab's comparison. What this module
adds is where the lab's runs come from: the store. A measured run stands for
a side when its label (`iowatch run --label`, or the post's label that
`iowatch reproduce` gives each variant) or its kernel release is the side's
label or kernel; per host, the before runs are judged against the after runs
by iowatch.judging.compare_sides, and judge_claim reads that comparison.
"""
from __future__ import annotations

import statistics
from collections import defaultdict
from urllib.parse import urlencode

from django.db.models import Exists, OuterRef, Q, Subquery
from django.urls import reverse

from iowatch_web.dashboard.freshness import cached
from iowatch import figures
from iowatch.claims import seeds
from iowatch.judging import claims as claim_judge, compare_sides, deciding
from iowatch.side_data import Side
from iowatch.vocabulary import DEFAULT_MIN_EFFECT
from iowatch.judging.sides import SideQuery
from iowatch.metrics import METRICS
from iowatch_web.results.models import Cell, Host, Kernel, Run, Sample, Study
from iowatch_web.store.values import sample_values
from iowatch_web.store.sides import (RUN_FACTS, boot_history, judged_runs, judging_studies, manifests,
                                     one_host)

# A side of a lab check is the runs of one host SideQuery chooses (at most its
# MAX_SIDE_RUNS, the newest), of at most MAX_LAB_RUNS runs
# read for a study.
MAX_LAB_RUNS = 2000
RULE = ("A claim is one metric between two result sets of the post that follow each other on "
        "one device class (the earlier set is the before side). A lab run stands for a side "
        "when its label (iowatch run --label; iowatch reproduce gives each variant the post's "
        "label) or its kernel release is the side's label or kernel. On each host with runs of "
        "both sides, iowatch judges the before runs against the after runs (the same judging as "
        "every verdict here, with the study's minimum effect of {min:g}%) on the lab's device of "
        "the claim's class with the study's first filesystem, and the claim judge of iowatch "
        "reproduce gives the outcome. " + " ".join(
            f"{claim_judge.OUTCOMES[o].capitalize()}: {rule}."
            for o, rule in claim_judge.OUTCOME_RULES.items())
        + " A claim judged on several devices is reproduced only where each reproduced it.")


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


def _claim(claim: claim_judge.Claim, by_set: dict[tuple[str, str], dict], judged: set, whys: dict,
           run_labels: dict[str, str]) -> dict:
    """The page's fields of one of claim_judge.published_claims' claims."""
    metric = claim.metric
    unit = METRICS[metric].unit if metric in METRICS else claim.unit
    sides = {}
    for role, entry in (("before", claim.before), ("after", claim.after)):
        result = entry.result(claim.group, metric)
        # The table's unit, as the lab's numbers are (import-published stores the same).
        value = result.sample()["value"]
        stored = by_set.get((entry.label, entry.device_class), {})
        sides[role] = {"label": entry.label, "run_label": run_labels.get(entry.label, entry.label),
                       "kernel": entry.kernel, "run_id": stored.get("run_id"),
                       "value": value, "as_published": result.as_published,
                       "setup": entry.setup or ""}
    # Both sides in one unit, as every page shows a before and an after (iowatch.figures).
    texts, shown_unit = figures.amount((sides["before"]["value"], sides["after"]["value"]), unit)
    for role, text in zip(("before", "after"), texts):
        sides[role]["text"] = f"{text} {shown_unit}".strip()
    runs = (sides["before"]["run_id"], sides["after"]["run_id"])
    return {"group": claim.group, "metric": metric, "unit": unit,
            "direction": METRICS[metric].direction if metric in METRICS else "",
            "deciding": (claim.group, metric) in judged, "device_class": claim.device_class,
            # Why it decides, as the study says (judging.policy.too_noisy).
            "decides_why": whys.get((claim.group, metric), ""),
            **sides, "change_pct": claim.change_pct, "change": figures.change(claim.change_pct),
            "published_compare_url": _compare_url(*runs) if all(runs) else "",
            "lab": [], "missing": [], "claim": claim}


def _medians(before: float | None, after: float | None, unit: str) -> dict:
    """The lab's before and after numbers in one readable unit."""
    (b, a), shown_unit = figures.amount((before, after), unit)
    return {"before_text": b, "after_text": a, "unit": shown_unit}


def _compare_url(base: str, candidate: str) -> str:
    return reverse("dashboard:compare") + "?" + urlencode({"base": base, "candidate": candidate})


def _lab_runs(study: Study, claims: list[dict]) -> list[Run]:
    """The measured runs of the study that stand for a claim's side: by label
    (the run_label index) and by kernel release, as two indexed reads."""
    labels = {c[role][key] for c in claims for role in ("before", "after")
              for key in ("label", "run_label")}
    releases = {c[role]["kernel"] for c in claims for role in ("before", "after")}
    if not labels:
        return []
    of_study = Exists(Cell.objects.filter(run=OuterRef("pk"), study=study, status="passed"))
    kernels = list(Kernel.objects.filter(release__in=releases).values_list("pk", flat=True))
    found = {}
    for which in (Q(label__in=labels), Q(kernel_id__in=kernels)):
        # The runs a side may pool (the store's SideQuery.admits), the newest read.
        for run in (judged_runs(Run.objects.filter(which, of_study, published=False))
                    .select_related("host", "kernel__series")
                    .order_by("-at", "-id")[:MAX_LAB_RUNS]):
            found[run.pk] = run
    return sorted(found.values(), key=lambda r: (r.at, r.pk))


def _stands_for(run: Run, side: dict, other: dict) -> bool:
    """By label (the post's, or the one iowatch reproduce gives the variant
    standing for it), or by kernel release when the two sides' kernels differ."""
    if run.label in (side["label"], side["run_label"]):
        return True
    return side["kernel"] != other["kernel"] and run.kernel.release == side["kernel"] \
        and run.label not in (other["label"], other["run_label"])


def _judge(claims: list[dict], runs: list[Run], spec) -> None:
    """Per claim and host: the lab's before runs against its after runs (each
    side the runs SideQuery chooses of those standing for it: runs oldest
    first), judged by claim_judge.judge_claim on compare_sides' comparison.
    Every run's manifest is read once, in one batch of queries for all hosts."""
    plans = []
    for claim in claims:
        before, after = claim["before"], claim["after"]
        per_host: dict[str, dict[str, list[Run]]] = defaultdict(lambda: {"before": [], "after": []})
        for run in runs:
            for role, side, other in (("before", before, after), ("after", after, before)):
                if _stands_for(run, side, other):
                    per_host[run.host.name][role].append(run)
        for host, found in per_host.items():
            for role in found:
                found[role] = SideQuery(claim[role]["label"], role).choose(found[role], **RUN_FACTS)
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
    planned = {id(claim) for claim, _, _ in plans}
    for claim in claims:
        if id(claim) not in planned:  # no host ran both sides: the judge has nothing to read
            why = "; ".join(claim["missing"]) or (
                f"no lab run labelled {claim['before']['label']!r} or {claim['after']['label']!r}, "
                f"nor of kernel {claim['before']['kernel']!r} or {claim['after']['kernel']!r}")
            claim["missing"] = [j.why for j in
                                claim_judge.judge_claim(claim["claim"], None, spec, why)]
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
                studies=studies,
                history=boot_history(one_host(found["before"] + found["after"])))
        modelled = seeds.modelled_devices([read[r.pk] for r in found["before"] + found["after"]])
        for judged in claim_judge.judge_claim(claim["claim"], done[key], spec, modelled=modelled):
            if judged.lab is None:
                claim["missing"].append(f"{host}: {judged.why}")
            else:
                claim["lab"].append(_lab_row(claim, judged, host, found))


def _lab_row(claim: dict, judged: claim_judge.Judged, host: str, found: dict) -> dict:
    lab = judged.lab
    # The lab's numbers are of the metric it measured (ext4's read IOPS for the
    # post's ext4/raw ratio), in that metric's unit, never the claim's.
    metric = lab.metric or claim["metric"]
    unit = METRICS[metric].unit if metric in METRICS else claim["unit"]
    return {"host": host, "device": lab.device, "device_class": claim["device_class"],
            "metric": metric, "metric_unit": unit,
            "filesystem": lab.filesystem, "outcome": lab.verdict,
            "before_n": lab.before_n, "after_n": lab.after_n,
            "before": lab.before, "after": lab.after,
            "statistic": figures.statistic(lab.statistic, 2),
            **_medians(lab.before, lab.after, unit),
            "change_pct": lab.change_pct, "change": figures.change(lab.change_pct),
            "ci_low": lab.ci_low, "ci_high": lab.ci_high,
            "ci": figures.ci(lab.ci_low, lab.ci_high, missing=""),
            "words": lab.words, "runs": (len(found["before"]), len(found["after"])),
            "compare_url": _compare_url(claim["before"]["run_label"], claim["after"]["run_label"]),
            "verdict": judged.outcome, "verdict_label": claim_judge.OUTCOMES[judged.outcome],
            "why": judged.why, "hardware": judged.hardware, "judged": judged}


def _sum_up(claim: dict) -> None:
    """The claim's outcome from its lab rows (claim_judge.claim_outcome); not
    comparable, and why, without one."""
    rows = [r["judged"] for r in claim["lab"]]
    claim["verdict"] = claim_judge.claim_outcome(rows)
    claim["verdict_label"] = claim_judge.OUTCOMES[claim["verdict"]]
    if claim["verdict"] == claim_judge.NOT_COMPARABLE:
        claim["why"] = "; ".join(dict.fromkeys([r["why"] for r in claim["lab"]] + claim["missing"]))
        return
    claim["why"] = "; ".join(f"{claim_judge.OUTCOMES[o]} on " + "; ".join(
        f"{r['host']} {r['device']} ({r['why']})" for r in claim["lab"] if r["verdict"] == o)
        for o in claim_judge.OUTCOMES if any(r["verdict"] == o for r in claim["lab"]))
    reasons = dict.fromkeys(r["hardware"] for r in claim["lab"] if r["hardware"])
    if reasons:
        claim["why"] += "; not reproducible in the virtual lab: " + "; ".join(reasons)


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
    # Raw samples, or retention's summaries of an older run (store/values.py).
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
                                   "text": figures.with_unit(statistics.median(vs),
                                                             METRICS[metric].unit
                                                             if metric in METRICS else ""),
                                   "n": len(vs)})
    return out


def _bars(claim: dict, newest: list[dict]) -> list[dict]:
    """The chart's bars: the post's two numbers, the lab's per host and device."""
    # A label is [where, which side]: two lines on the chart's axis.
    bars = [{"label": [f"post ({claim['device_class']})", claim["before"]["label"]],
             "value": claim["before"]["value"], "kind": "published"},
            {"label": [f"post ({claim['device_class']})", claim["after"]["label"]],
             "value": claim["after"]["value"], "kind": "published"}]
    for bar in bars:
        bar.update(metric=claim["metric"], unit=claim["unit"])
    for r in claim["lab"]:
        where = f"{r['host']} {r['device']} ({r['device_class']})"
        bars.append({"label": [where, claim["before"]["label"]], "value": r["before"],
                     "kind": "before", "metric": r["metric"], "unit": r["metric_unit"]})
        bars.append({"label": [where, claim["after"]["label"]], "value": r["after"],
                     "kind": "after", "metric": r["metric"], "unit": r["metric_unit"]})
    if not claim["lab"]:
        for m in newest:
            bars.append({"label": [f"{m['host']} {m['device']} ({m['device_class']})",
                                   f"now: {m['kernel']}"], "value": m["median"], "kind": "newest",
                         "metric": claim["metric"], "unit": claim["unit"]})
    return bars


def _charts(bars: list[dict]) -> list[dict]:
    """The claim's bars as one chart per metric and unit: the post's 0.5 and
    0.99 (a ratio) never share an axis with the lab's IOPS."""
    charts: dict[tuple, dict] = {}
    for bar in bars:
        charts.setdefault((bar["metric"], bar["unit"]), {"metric": bar["metric"], "unit": bar["unit"],
                                                         "bars": []})["bars"].append(bar)
    return list(charts.values())


def _study_info(study: Study, spec) -> dict:
    if spec is None:  # a study in the store whose file is gone: the store keeps its slug only
        return {"slug": study.slug, "title": study.slug, "seed": "", "source": "",
                "question": "", "min_effect_pct": DEFAULT_MIN_EFFECT,
                "device_classes": [], "in_files": False}
    return {"slug": study.slug, "title": spec.title, "seed": spec.seed, "source": spec.source,
            "question": spec.question or "", "min_effect_pct": spec.min_effect_pct,
            "device_classes": list(spec.device_classes), "in_files": True}


def _claim_check(study: Study) -> dict:
    spec = judging_studies().get(study.slug)
    info = _study_info(study, spec)
    sides = _published_sides(study, spec)
    by_set = {(s["label"], s["device_class"]): s for s in sides}
    judged = deciding(spec)
    # A study whose file is gone has no claims: the claims are the file's.
    # A seed's study: the lab's runs of a variant carry one label for its side's labels.
    run_labels = seeds.run_label_of(spec, judging_studies()) if spec else {}
    claims = [_claim(c, by_set, judged, spec.decides_why if spec else {}, run_labels)
              for c in claim_judge.published_claims(spec)] if spec else []
    _judge(claims, _lab_runs(study, claims), spec)
    newest = _newest_medians(study, claims)
    for i, claim in enumerate(claims):
        _sum_up(claim)
        claim["id"] = i
        claim["measured_now"] = newest.get((claim["group"], claim["metric"]), [])
        claim["bars"] = _bars(claim, claim["measured_now"])
        claim["charts"] = _charts(claim["bars"])
        # The judge's objects stay here: the page and its JSON get their fields.
        del claim["claim"]
        for r in claim["lab"]:
            del r["judged"]
    # Deciding claims first, then by class and metric.
    claims.sort(key=lambda c: (not c["deciding"], c["device_class"], c["group"], c["metric"]))
    counts = defaultdict(int)
    for c in claims:
        counts[c["verdict"]] += 1
    return {"study": info, "rule": RULE.format(min=info["min_effect_pct"]),
            "sides": [{k: v for k, v in s.items() if k not in ("values", "as_published")}
                      for s in sides],
            "claims": claims,
            "summary": [{"verdict": v, "label": claim_judge.OUTCOMES[v], "n": counts[v]}
                        for v in claim_judge.OUTCOMES if counts[v]]}


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
                     "text": figures.with_unit(value, METRICS[metric].unit
                                               if metric in METRICS else ""),
                     "as_published": quoted})
        if slug not in study_slugs:
            study_slugs.append(slug)
    return {"rows": rows, "studies": study_slugs}
