"""A ratio study's filesystem-to-raw ratio (`ratio.fs_to_raw`), one value per
repetition pair: the one definition, used by the runner when it writes a bundle
and by whoever judges a bundle written before it (iowatch.claims.seeds, the kept
reproductions' import).

A study with `workload.ratio` (ext4-dio-randread: ext4's read IOPS over the raw
device's) runs the same workload on the filesystem and on the raw device, as two
cells of one run (one boot). Repetition i of the filesystem cell is paired with
repetition i of the raw cell of the same run and device, and the pair gives one
ratio, recorded as a sample of the filesystem cell's repetition i. Why pairs:
a ratio over the raw cell's median gives every repetition of a run one shared
denominator, so the run's values are not n measurements of the ratio but one
raw figure repeated; with pairs each repetition carries its own, and the judge
counts n values a side. A repetition without a partner (a round that re-ran
only the filesystem cell, a failed repetition) has no ratio.
"""
from __future__ import annotations

from iowatch.samples import Sample
from iowatch.studies import Ratio, Study

METRIC = "ratio.fs_to_raw"


def _by_index(cell: dict, ratio: Ratio) -> dict[int, float]:
    """Repetition index -> the ratio's metric in its group, of passed repetitions."""
    out = {}
    for rep in cell.get("repetitions") or []:
        if rep.get("status", "passed") != "passed":
            continue
        values = [s["value"] for s in rep["samples"] if s["metric"] == ratio.metric
                  and s["group"] == ratio.group and s.get("job") is None]
        if values:
            out[rep["index"]] = values[0]
    return out


def add_to_cell(fs_cell: dict, raw_cell: dict, ratio: Ratio) -> int:
    """Replace the filesystem cell's ratio samples with one per repetition pair;
    returns how many pairs gave one."""
    raw = _by_index(raw_cell, ratio)
    mine = _by_index(fs_cell, ratio)
    made = 0
    for rep in fs_cell.get("repetitions") or []:
        rep["samples"] = [s for s in rep["samples"] if s["metric"] != METRIC]
        index = rep.get("index")
        if index in mine and raw.get(index, 0) > 0:
            rep["samples"].append(Sample.of(METRIC, mine[index] / raw[index], ratio.group).to_dict())
            made += 1
    return made


def derive(doc: dict, studies: dict[str, Study]) -> dict:
    """A bundle manifest with every ratio made again by this module's rule, in
    place (a bundle recorded under an older rule is judged by this one)."""
    cells = {(c.get("study"), c.get("device"), c.get("filesystem")): c for c in doc.get("cells") or []}
    for (slug, device, fs), cell in cells.items():
        study = studies.get(slug)
        ratio = study.spec.ratio if study is not None else None
        if ratio is None or fs != ratio.filesystem:
            continue
        raw = cells.get((slug, device, ratio.against))
        if raw is None:
            for rep in cell.get("repetitions") or []:  # no partner in this run: no ratio
                rep["samples"] = [s for s in rep["samples"] if s["metric"] != METRIC]
        else:
            add_to_cell(cell, raw, ratio)
    return doc
