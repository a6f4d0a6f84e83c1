"""What the compare page shows of a judged comparison (iowatch.judging's, never
its own): the counts of the deciding cells' outcomes, the cells worst first,
their numbers in a readable unit, and which cells share a chart."""
from __future__ import annotations

from collections import Counter

from iowatch.vocabulary.outcomes import Outcome
from iowatch.figures import amount

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
