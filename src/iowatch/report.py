"""Reports of a comparison: text (for a mailing-list reply), JSON, JUnit XML, Markdown.

Rendering only: the verdicts come from iowatch.stats through
iowatch.side_data, so every format says the same thing.
"""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import asdict

from iowatch import figures, reproduce
from iowatch.side_data import Side
from iowatch.judging import (NOISY_TIMES, Comparison, max_runs, min_effect, platform_findings,
                             platform_words)
from iowatch.vocabulary import DEFAULT_CAP, ci_name
from iowatch.metrics import METRICS
from iowatch.stats import CellVerdict
from iowatch.stats.confounders import shown
from iowatch.stats.sequential import FIRST, STEP, look_points
from iowatch.vocabulary.outcomes import (CELL_OUTCOMES, Outcome, boots_words, noisy_matrix_words,
                                         verdict_label, verdict_line)

FORMATS = ("text", "json", "junit", "markdown")


def _p(v: float | None) -> str:
    return figures.p_value(v, missing="n/a (n = 1)")


def _mean_sd(stats, unit: str) -> str:
    """"mean 300 ± 3 MiB/s (n=5)"; a single value as it is."""
    (m, s), unit = figures.amount((stats.mean, stats.sd), unit, decide_on=(stats.mean,))
    if stats.n == 1:
        return f"{m} {unit} (n=1)".replace("  ", " ")
    return f"{figures.statistic('mean')} {m} ± {s} {unit} (n={stats.n})".replace("  ", " ")


def _counts(cmp: Comparison) -> dict[str, int]:
    out = dict.fromkeys(CELL_OUTCOMES, 0)
    for v in cmp.verdicts:
        out[v.outcome] += 1
    return out


def _side_lines(role: str, side: Side) -> list[str]:
    lines = [f"{role}: {side.title}"]
    sources = {"published": "the study's seed post (published numbers)"}
    lines.append(f"  source: {sources.get(side.source, side.source)}; "
                 f"{len(side.runs)} run{'s' if len(side.runs) != 1 else ''}"
                 + (": " + ", ".join(str(r['run_id']) for r in side.runs if r.get("run_id"))
                    if any(r.get("run_id") for r in side.runs) else ""))
    return lines


def _profile(cell: dict) -> str:
    params = cell.get("params") or {}
    if params.get("published"):
        return "published"
    return params.get("profile") or "?"


def _cell_header(cmp: Comparison, v: CellVerdict) -> list[str]:
    k = v.key
    ctx = cmp.context.get(k.location)
    cell = ctx.candidate_cell if ctx else {}
    fs = k.filesystem
    if cell.get("mkfs_options") is not None or cell.get("mount_options") is not None:
        fs += f" (mkfs {cell.get('mkfs_options') or 'defaults'}; mount {cell.get('mount_options') or 'defaults'})"
    model = f", {ctx.device_model}" if ctx and ctx.device_model else ""
    return [f"  device class {k.device_class}: {k.device}{model}",
            f"  filesystem {fs}; host {k.host}; profile {_profile(cell)}"]


def _cell_lines(cmp: Comparison, verdicts, current, out: list[str], judged: bool):
    for v in verdicts:
        k = v.key
        if k.location != current:
            current = k.location
            study = cmp.studies.get(k.study)
            out.append("")
            if study:
                out.append(f"study {k.study}: {study.title}"
                           + (f" (seed {study.seed})" if study.seed else ""))
                ctx = cmp.context.get(current)
                profile = _profile(ctx.candidate_cell) if ctx else None
                scaling = study.scaling(profile) if profile else None
                if scaling:
                    out.append(f"  profile {profile}: {scaling}")
            else:
                out.append(f"study {k.study}")
            out += _cell_header(cmp, v)
        unit = METRICS[k.metric].unit
        ci = "n/a" if v.size_only else figures.ci(v.ci_low, v.ci_high)
        if not judged:  # one line: shown, never a verdict
            (b, c), shown_unit = figures.amount((v.base.mean, v.candidate.mean), unit)
            out.append(f"    {k.group} {k.metric}: {figures.change(v.change_pct)} (95% CI {ci}), {b} -> {c} "
                       f"{shown_unit} ({figures.statistic('mean', 2)}) "
                       f"[{v.base.n} vs {v.candidate.n} runs]".replace("  ", " "))
            continue
        adj = "" if v.p_adjusted is None else f", adjusted {_p(v.p_adjusted)} against level {v.level:.2g}"
        head = f"    {k.group} {k.metric}: {verdict_label(v).upper()}"
        out += [head,
                f"      base {_mean_sd(v.base, unit)}; candidate {_mean_sd(v.candidate, unit)}",
                f"      change {figures.change(v.change_pct)}, {ci_name(v)} {ci}, t-test p {_p(v.p_value)}{adj}, "
                f"Cliff's delta {v.cliffs_delta:+.2f}",
                *([f"      minimum detectable effect at {v.base.n} vs {v.candidate.n} runs: "
                   f"{v.mde_pct:g}% (confirmed 80% of the time; the minimum effect is "
                   f"{v.min_effect_pct:g}%); equivalence bound {v.bound_pct:g}% (a slowdown "
                   f"beyond it ruled out at 80% confidence)"]
                  if v.mde_pct is not None and v.bound_pct is not None else []),
                *([f"      tested on boot means: {v.boots[0]} vs {v.boots[1]} boots; within a boot "
                   f"sd {v.within_boot_sd_pct:.1f}%"
                   + (f", {v.between_boot_share:.0%} of the variance between boots"
                      if v.between_boot_share is not None else "")]
                  if v.boots else []),
                *([f"      judged within rounds: the platform drifted by {v.drift_pct:+.0f}% "
                   f"between rounds {v.drift_rounds[0]} and {v.drift_rounds[1]}"]
                  if v.blocked else []),
                f"      {v.words}."]
    return current


def _canary_lines(cmp: Comparison) -> list[str]:
    """The canaries' cells: what each measured, and whether the platform moved."""
    if not cmp.canaries:
        return []
    out = ["", "canaries (the platform, never the patch: a move confirmed beyond a canary's "
               "minimum effect makes the verdict unsure):"]
    for v in cmp.canaries:
        k, unit = v.key, METRICS[v.key.metric].unit
        moved = platform_findings(v)
        ci = "n/a" if v.size_only else figures.ci(v.ci_low, v.ci_high)
        rounds = "" if v.drift_pct is None else (
            f"; rounds {v.drift_rounds[0]} and {v.drift_rounds[1]} apart by {figures.change(v.drift_pct)}"
            + (f" (F-test p {_p(v.drift_p)})" if v.drift_p is not None else ""))
        out += [f"  {k.study} on {k.device} {k.filesystem} [{k.group}] {k.metric}: "
                + ("MOVED" if moved else "no move confirmed"),
                f"    base {_mean_sd(v.base, unit)}; candidate {_mean_sd(v.candidate, unit)}",
                f"    change {figures.change(v.change_pct)}, 95% CI {ci}{rounds}; minimum effect "
                f"{v.min_effect_pct:g}%",
                *[f"    {d.words}" for d in moved]]
    return out


def _looks(caps: list[int]) -> str:
    """The look schedule in words: "5, 10, 15 and 20", or up to each cap."""
    caps = caps or [DEFAULT_CAP]
    if len(caps) == 1:
        *before, last = look_points(caps[0])
        return f"{', '.join(map(str, before))} and {last}" if before else str(last)
    return f"every {STEP} from {FIRST} up to the study's cap ({', '.join(map(str, caps))})"


def render_text(cmp: Comparison) -> str:
    out = [f"iowatch compare: {cmp.base.spec} -> {cmp.candidate.spec}", ""]
    out += _side_lines("base", cmp.base) + _side_lines("candidate", cmp.candidate)
    out += ["", f"verdict: {_state_words(cmp)}"]
    boots = boots_words(cmp.boots_a_side, cmp.recorded_boots)
    if boots:
        out.append(f"boots: {boots}")
    noisy = noisy_matrix_words(cmp.verdicts)
    if noisy:
        out.append(noisy)
    platform = platform_words(cmp)
    if platform and platform not in out[-1]:
        out.append(f"platform: {platform}")
    _cell_lines(cmp, cmp.verdicts, None, out, judged=True)
    for f in cmp.failed:
        out += ["", f"study {f.study}: {f.device_class} {f.device} {f.filesystem}: FAILED on the "
                    f"{f.side} side ({f.status}): no performance result"]
    c = _counts(cmp)
    out += ["", f"deciding cells: {c['regression']} regression(s), {c['suspected']} suspected, "
                f"{c['improvement']} improvement(s), {c['inconclusive']} unsure, "
                f"{c['slower']} slower but not confirmed, "
                f"{c['no-change']} without change, {len(cmp.failed)} failed "
                f"({len(cmp.verdicts)} cells in one family; one-sided t-tests on log values, "
                f"Benjamini-Hochberg at a false-discovery rate of {cmp.fdr:g} spent over looks at "
                f"{_looks(cmp.caps)} runs a side; minimum effect and cap per study)"]
    runs = sorted({(v.base.n, v.candidate.n) for v in cmp.verdicts})
    if runs:
        out.append("  runs a side per cell: " + ", ".join(f"{b} vs {c}" for b, c in runs))
    if any(v.size_only for v in cmp.verdicts):
        out.append("  cells with one sample on a side (published numbers) are judged by size only")
    out += _canary_lines(cmp)
    if cmp.diagnostics:
        out += ["", "diagnostics (the study's other metrics: shown, never a verdict):"]
        out += _too_noisy_lines(cmp)
        _cell_lines(cmp, cmp.diagnostics, None, out, judged=False)
    out += ["", "confounders (differences between the sides that can explain a change):"]
    out += [f"  {x.name}: {' -> '.join(shown(x))} ({x.why})" for x in cmp.confounders] or \
        ["  none recorded"]
    out += ["", "reproduce:"]
    if cmp.base.source == "published" or cmp.candidate.source == "published":
        slugs = sorted({v.key.study for v in cmp.verdicts + cmp.diagnostics})
        out += [f"  iowatch run jobs/studies/{s}.yml --profile full --target HOST "
                f"(booted into the measured kernel)" for s in slugs]
    elif cmp.base.runs and cmp.candidate.runs:
        # What a person types, not the guest-internal commands the bundles carry.
        base, candidate = cmp.base.runs[0], cmp.candidate.runs[0]
        host = candidate.get("host") or {}
        out += reproduce.lines(reproduce.end_of_manifest(base), reproduce.end_of_manifest(candidate),
                               matrix=candidate.get("matrix"), host=host.get("name"),
                               host_kind=host.get("kind"),
                               reps=max((v.candidate.n for v in cmp.verdicts), default=None))
    return "\n".join(out) + "\n"


def _state_words(cmp: Comparison) -> str:
    """The verdict's words (the policy's verdict line: "size only, not
    confirmed" on one sample a side); a state made unsure by a drifted
    platform says so."""
    if cmp.platform and cmp.state == "unsure" and not cmp.unsure:
        return "UNSURE: " + platform_words(cmp)
    words, _ = verdict_line(cmp.state, ((v.outcome, v.size_only, v.change_pct)
                                        for v in cmp.verdicts), len(cmp.failed))
    return words


# A comparison's state as its report's verdict line (the dashboard's compare page too).
STATE_WORDS = {o.state: o.verdict for o in Outcome if o.state}


def _side_json(side: Side) -> dict:
    return {"spec": side.spec, "source": side.source, "kernel": side.title,
            "runs": [r.get("run_id") for r in side.runs]}


def _boot_variance_json(v: CellVerdict) -> dict | None:
    """The recorded variance between boots a one-boot side's test added (issue 41)."""
    bv = v.boot_variance
    return None if bv is None else {"sd_pct": bv.sd_pct, "df": bv.df, "boots": bv.boots,
                                    "kernels": bv.kernels}


def _too_noisy_lines(cmp: Comparison) -> list[str]:
    """Each deciding metric shown among the diagnostics because it is too noisy
    for its study (judging.policy.too_noisy), with what would make it decide."""
    out = []
    for k, width in sorted(cmp.too_noisy.items()):
        study = cmp.studies.get(k.study)
        out.append(f"  {k.cell_id} [{k.group}] {k.metric} decides in {k.study}, but is too noisy "
                   f"for its {min_effect(study):g}% minimum effect: at the cap of {max_runs(study)} a "
                   f"side its 95% CI would be about ±{width:.0f}% (over {NOISY_TIMES} minimum effects), "
                   f"so it is shown, not judged; the study's metric decides on a 'why:' (what the "
                   f"post decided on)")
    return out


def _too_noisy_json(cmp: Comparison) -> list[dict]:
    return [{**asdict(k), "width_at_cap_pct": round(width, 1)} for k, width in sorted(cmp.too_noisy.items())]


def _cell_json(v: CellVerdict) -> dict:
    k = v.key
    return {**asdict(k), "unit": METRICS[k.metric].unit, "direction": v.direction,
            "base": asdict(v.base), "candidate": asdict(v.candidate),
            "change_pct": v.change_pct, "ci": {"low": v.ci_low, "high": v.ci_high},
            # The interval's level, and the family's cells when it is family-adjusted (issue 41).
            "ci_level": v.ci_level or 0.95, "ci_family_cells": v.ci_family,
            "p_value": v.p_value, "p_worse": v.p_worse, "p_worse_family": v.p_worse_family,
            "p_adjusted": v.p_adjusted,
            "level": v.level, "cliffs_delta": v.cliffs_delta, "min_effect_pct": v.min_effect_pct,
            "outcome": v.outcome, "needs_runs": v.needs_runs, "hidden_pct": v.hidden_pct,
            "budget_spent": v.budget_spent, "futile": v.futile, "cap": v.cap, "size_only": v.size_only,
            "mde_pct": v.mde_pct, "bound_pct": v.bound_pct, "within_pct": v.within_pct,
            "boots": list(v.boots) if v.boots else None,
            "within_boot_sd_pct": v.within_boot_sd_pct, "between_boot_share": v.between_boot_share,
            "boot_counts": list(v.boot_counts) if v.boot_counts else None, "one_boot": v.one_boot,
            "boot_variance": _boot_variance_json(v),
            "drift_pct": v.drift_pct, "drift_rounds": list(v.drift_rounds) if v.drift_rounds else None,
            "blocked": v.blocked, "drift_p": v.drift_p,
            "drift_ci": list(v.drift_ci) if v.drift_ci else None,
            "label": verdict_label(v), "words": v.words}


def render_json(cmp: Comparison) -> str:
    return json.dumps({"base": _side_json(cmp.base), "candidate": _side_json(cmp.candidate),
                       "fdr": cmp.fdr, "state": cmp.state, "summary": _counts(cmp),
                       "boots_a_side": list(cmp.boots_a_side) if cmp.boots_a_side else None,
                       "cells": [_cell_json(v) for v in cmp.verdicts],
                       "diagnostics": [_cell_json(v) for v in cmp.diagnostics],
                       "too_noisy": _too_noisy_json(cmp),
                       "canaries": [_cell_json(v) for v in cmp.canaries],
                       "platform": {"drifted": bool(cmp.platform), "words": platform_words(cmp),
                                    "findings": [{"study": d.canary.key.study,
                                                  "group": d.canary.key.group,
                                                  "metric": d.canary.key.metric,
                                                  "between": d.between, "change_pct": d.change_pct,
                                                  "ci": list(d.ci) if d.ci else None}
                                                 for d in cmp.platform]},
                       "failed": [asdict(f) for f in cmp.failed],
                       "confounders": [asdict(c) for c in cmp.confounders]}, indent=1) + "\n"


def render_junit(cmp: Comparison) -> str:
    """One test case per cell; a regression is a failure (Jenkins' junit step)."""
    suites = ET.Element("testsuites")
    suite = ET.SubElement(suites, "testsuite", name=f"iowatch compare {cmp.base.spec} -> {cmp.candidate.spec}",
                          tests=str(len(cmp.verdicts) + len(cmp.failed)),
                          failures=str(len(cmp.regressions)), errors=str(len(cmp.failed)),
                          skipped="0")
    for v in cmp.verdicts:
        k = v.key
        case = ET.SubElement(suite, "testcase", classname=f"{k.study}.{k.device_class}.{k.device}.{k.filesystem}",
                             name=f"{k.group} {k.metric}")
        # A drifted platform: the comparison stands behind no regression (the platform case says why).
        if v.outcome == "regression" and not cmp.platform:
            failure = ET.SubElement(case, "failure", message=v.words, type="regression")
            failure.text = json.dumps(_cell_json(v), indent=1)
        ET.SubElement(case, "system-out").text = f"{v.outcome}: {v.words}"
    for f in cmp.failed:
        case = ET.SubElement(suite, "testcase", classname=f"{f.study}.{f.device_class}.{f.device}.{f.filesystem}",
                             name="cell")
        ET.SubElement(case, "error", message=f"failed on the {f.side} side ({f.status})", type="failed")
    if cmp.canaries:
        # The platform as one case: an error (not a failure) when it drifted, as
        # the comparison could not judge the kernels.
        case = ET.SubElement(suite, "testcase", classname="platform", name="canaries")
        if cmp.platform:
            ET.SubElement(case, "error", message=platform_words(cmp), type="platform-drift")
        ET.SubElement(case, "system-out").text = platform_words(cmp)
        suite.set("tests", str(int(suite.get("tests")) + 1))
        suite.set("errors", str(int(suite.get("errors")) + bool(cmp.platform)))
    if cmp.confounders:
        ET.SubElement(suite, "system-out").text = "\n".join(
            f"confounder {c.name}: {c.base} -> {c.candidate} ({c.why})" for c in cmp.confounders)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(cmp: Comparison) -> str:
    out = [f"## iowatch compare: {_md(cmp.base.spec)} → {_md(cmp.candidate.spec)}", "",
           f"- base: {_md(cmp.base.title)}", f"- candidate: {_md(cmp.candidate.title)}",
           f"- verdict: **{_md(_state_words(cmp))}**",
           *([f"- boots: {_md(boots_words(cmp.boots_a_side, cmp.recorded_boots))}"] if cmp.boots_a_side else []),
           *([f"- {_md(noisy_matrix_words(cmp.verdicts))}"] if noisy_matrix_words(cmp.verdicts)
             else []),
           *([f"- platform: {_md(platform_words(cmp))}"] if cmp.canaries else []), "",
           "| study | device class | device | fs | group | metric | base mean ± sd | candidate mean ± sd "
           "| change | CI | p (adj.) | outcome |", "|" + "---|" * 12]
    for v in cmp.verdicts:
        k, unit = v.key, METRICS[v.key.metric].unit
        ci = figures.ci(v.ci_low, v.ci_high) + (f" ({ci_name(v)})" if v.ci_family else "")
        out.append("| " + " | ".join(_md(x) for x in (
            k.study, k.device_class, k.device, k.filesystem, k.group, k.metric,
            _mean_sd(v.base, unit), _mean_sd(v.candidate, unit), figures.change(v.change_pct), ci,
            _p(v.p_adjusted), f"**{verdict_label(v)}**" if v.outcome == "regression"
            else verdict_label(v))) + " |")
    out += ["", "Minimum detectable effect (the smallest slowdown confirmed 80% of the time) and "
                "equivalence bound (the slowdown not ruled out at 80% confidence) at each "
                "deciding cell's runs: " + "; ".join(
                    f"{_md(v.key.group)} {_md(v.key.metric)} {v.mde_pct:g}% and {v.bound_pct:g}% "
                    f"at {v.base.n} vs {v.candidate.n}" for v in cmp.verdicts
                    if v.mde_pct is not None and v.bound_pct is not None)]
    out += ["", *[f"- {_md(v.words)}" for v in cmp.verdicts if v.outcome != "no-change"]]
    out += [f"- {_md(f.study)} {_md(f.device)} {_md(f.filesystem)}: failed on the {f.side} side"
            for f in cmp.failed]
    if cmp.confounders:
        out += ["", "Confounders:", *[f"- {_md(c.name)}: {_md(c.base)} → {_md(c.candidate)} ({_md(c.why)})"
                                      for c in cmp.confounders]]
    return "\n".join(out) + "\n"


RENDERERS = {"text": render_text, "json": render_json, "junit": render_junit,
             "markdown": render_markdown}
