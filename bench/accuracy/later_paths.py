"""The bisect's ends and the nightly's change points, measured on the same model
as the check's paths (issue 24 item 5; simulate.run_paths holds the check,
`5 a side` and `run --against`).

Both go through the product's own code on bundle-shaped sides: the cells are
MATRIX_CELLS devices of one study whose deciding metric is f2fs-dio-write's
write bandwidth (higher is better, 5% minimum effect, cap 20), so
`iowatch.judging.compare_sides` judges them with that study's policy.

- **bisect ends**: what `iowatch bisect` does before its first step
  (bisect/search.py): both ends measured, 5 repetitions of every cell a
  measurement (one boot), compared; while no cell is a regression and the
  comparison still wants runs (judging.more_runs), both ends are measured
  again, every cell, up to the cap. A clean pair of ends that ends with a
  regression is a false alarm (a bisect of nothing); a slowed cell is found
  when the regression the bisect follows (the largest) is that cell.
- **change points**: a nightly of HISTORY kernels, 5 repetitions a kernel
  (one run, one boot), on every cell; in a slowed night one cell is slower
  from kernel STEP_AT on. judging.confirm_change_points finds the candidates
  (e-divisive and the selection test over the 40 histories) and confirms each
  by compare_sides of its segments' repetitions. A clean night with a
  confirmed regression anywhere is a false alarm; a slowed night is found
  when the slowed cell has a confirmed regression within a kernel of the step.

The draws are simulate's: each cell a lognormal pool (CV 10%) and its exact
slowdowns with their noise kept, independent or boot-clustered (simulate.Boots:
each boot multiplies its repetitions by one lognormal offset; here a boot is
a measurement of 5 repetitions, as the bisect and the nightly run them).
"""
from __future__ import annotations

import itertools
import statistics
import uuid

import numpy as np

from iowatch import resources
from iowatch.cells import CellKey
from iowatch.side_data import Side
from iowatch.judging import compare_sides, confirm_change_points, more_runs, min_effect
from iowatch.stats import FIRST, History
from iowatch.stats.sequential import looks
from iowatch.studies import load_studies

import simulate

STUDY, GROUP, METRIC = "f2fs-dio-write", "seqw", "write.bw_kib_s"
HISTORY, STEP_AT = 30, 20


def _measure(machine: simulate.SideBoots, pools: list[np.ndarray], key, n: int = FIRST) -> dict:
    """One measurement (one boot, `key`, of n repetitions of every cell) as a
    bundle-shaped manifest; the machine (simulate.SideBoots) says what the boot
    does to each cell: with boot-clustered draws each cell's repetitions of the
    boot share its offsets, with recorded cells they are one recorded boot."""
    cells = []
    for i, pool in enumerate(pools):
        cells.append({"study": STUDY, "device": f"d{i}", "filesystem": "f2fs", "status": "passed",
                      "repetitions": [{"samples": [{"metric": METRIC, "group": GROUP, "job": None,
                                                    "value": float(v)}]}
                                      for v in machine.values(i, pool, n, key)]})
    return {"run_id": str(uuid.uuid4()), "host": {"name": "h"}, "kernel": {"release": "k"},
            "devices": [{"name": f"d{i}", "class": "sdcard"} for i in range(len(pools))],
            "cells": cells}


def _machines(d: simulate.Draw, rng, boots: simulate.Boots):
    return simulate.SideBoots(boots, rng, d.cells), simulate.SideBoots(boots, rng, d.cells)


def _history(d: simulate.Draw, rng, boots: simulate.Boots) -> list[Side]:
    """The host's record (iowatch.judging.boots): other kernels, each measured
    in simulate.HISTORY_BOOTS boots of simulate.HISTORY_RUNS repetitions."""
    from iowatch.judging.boots import HISTORY_KERNELS
    machine = simulate.SideBoots(boots, rng, d.cells)
    return [Side(f"k{k}", "", [_measure(machine, d.base_pool, ("history", k, b), simulate.HISTORY_RUNS)
                               for b in range(simulate.HISTORY_BOOTS)])
            for k in range(HISTORY_KERNELS)]


def bisect_ends(d: simulate.Draw, rng, boots: simulate.Boots, studies) -> tuple[int | None, float]:
    """(the device index the bisect would follow or None, repetitions a side)."""
    good_m, bad_m = _machines(d, rng, boots)
    good, bad = [_measure(good_m, d.base_pool, 0)], [_measure(bad_m, d.cand_pool, 0)]
    cap = studies[STUDY].max_runs
    for attempt in itertools.count(1):
        cmp = compare_sides(Side("good", "", good), Side("bad", "", bad), studies=studies)
        if cmp.regressions:
            worst = max(cmp.regressions, key=lambda v: abs(v.change_pct or 0.0))
            return int(worst.key.device[1:]), FIRST * len(good)
        if attempt > looks(cap) - 1 or not more_runs(cmp):
            return None, FIRST * len(good)
        good.append(_measure(good_m, d.base_pool, attempt))
        bad.append(_measure(bad_m, d.cand_pool, attempt))


def night_over_night(d: simulate.Draw, rng, boots: simulate.Boots, studies, nights: int,
                     record: bool) -> tuple[list[bool], str]:
    """Which cells a nightly's comparison with the previous night confirms as
    regressions, and the state it ends in (the web app's "previous-run" comparison): each night `nights`
    boots of FIRST repetitions (iowatch.nightly.DEFAULT_BOOTS in the virtual
    lab; one on a lab host booted into the head), one look; with `record` the
    host's history of other kernels booted more than once."""
    history = _history(d, rng, boots) if record else None
    before, after = _machines(d, rng, boots)
    cmp = compare_sides(Side("previous night", "", [_measure(before, d.base_pool, b) for b in range(nights)]),
                        Side("this night", "", [_measure(after, d.cand_pool, b) for b in range(nights)]),
                        studies=studies, history=history)
    regressed = {int(v.key.device[1:]) for v in cmp.regressions}
    return [i in regressed for i in range(len(d.cells))], cmp.state


def nightly(d: simulate.Draw, rng, boots: simulate.Boots, studies) -> set[tuple[int, int]]:
    """{(device index, kernel index)} of the confirmed regressions of one night's histories."""
    machine = simulate.SideBoots(boots, rng, d.cells)
    runs = [_measure(machine, d.base_pool if k < STEP_AT else d.cand_pool, k) for k in range(HISTORY)]
    histories = []
    for i in range(len(d.cells)):
        per_kernel = [[r["samples"][0]["value"] for r in run["cells"][i]["repetitions"]]
                      for run in runs]
        histories.append(History(CellKey(STUDY, "h", "sdcard", f"d{i}", "f2fs", GROUP, METRIC),
                                 [statistics.median(v) for v in per_kernel],
                                 min_effect(studies[STUDY]),
                                 repetitions=[len(v) for v in per_kernel]))

    def sides(key, before, after):
        return Side("before", "", [runs[k] for k in before]), Side("after", "", [runs[k] for k in after])
    confirmed = confirm_change_points(histories, sides, studies=studies)
    return {(int(k.device[1:]), cp.point.index) for k, cps in confirmed.items() for cp in cps
            if cp.verdict.outcome == "regression"}


# The nightly's comparison with the previous night (night_over_night): the
# virtual lab boots a night's kernel iowatch.nightly.DEFAULT_BOOTS times; a lab
# host booted into the head is one boot a night, judged with the host's record.
NIGHTLY_VLAB = "nightly, 2 boots a night"
NIGHTLY_LAB = "nightly, 1 boot a night" + simulate.RECORD
PATHS = ("bisect ends", "change points")


def run(real, trials: int, seed: int, boots: simulate.Boots, *, size: int = simulate.MATRIX_CELLS,
        conditions=tuple(simulate.EXACT), paths=PATHS) -> dict[str, dict]:
    """{path: {"fa": false alarms per clean draw, "no-change": clean draws that
    ended so (the nightly's), condition: share found, "runs": ...}}."""
    from iowatch.nightly import DEFAULT_BOOTS
    studies = load_studies(resources.studies_dir())
    rng = np.random.default_rng(seed)
    out = {path: {"clean": 0, "fa": 0, "runs": float(FIRST), "n": 0, "no-change": 0} for path in paths}
    if "bisect ends" in out:
        out["bisect ends"]["runs"] = 0.0
    for condition in ("aa", *conditions):
        for _ in range(trials):
            # The pools are drawn as one check's; the slowed cell is d.slowed.
            d = simulate.draw_matrix(real, rng, None if condition == "aa" else condition, size)
            results = []  # (path, found the slowed cell, an unchanged cell flagged, ended no change)
            if "bisect ends" in out:
                followed, reps = bisect_ends(d, rng, boots, studies)
                out["bisect ends"]["runs"] += reps
                results.append(("bisect ends", followed is not None and followed == d.slowed,
                                followed is not None and followed != d.slowed, False))
            if "change points" in out:
                found = nightly(d, rng, boots, studies)
                results.append(("change points",
                                any(i == d.slowed and abs(k - STEP_AT) <= 1 for i, k in found),
                                any(i != d.slowed for i, _ in found), False))
            for path, nights, record in ((NIGHTLY_VLAB, DEFAULT_BOOTS, False), (NIGHTLY_LAB, 1, True)):
                if path in out:
                    flagged, state = night_over_night(d, rng, boots, studies, nights, record)
                    results.append((path, d.slowed is not None and flagged[d.slowed],
                                    any(f for i, f in enumerate(flagged) if i != d.slowed),
                                    state == "no-change"))
            for path, hit, alarm, quiet in results:
                t = out[path]
                t["n"] += 1
                if condition == "aa":
                    t["clean"] += 1
                    t["fa"] += alarm or hit
                    t["no-change"] += quiet
                else:
                    n, k = t.get(condition, (0, 0))
                    t[condition] = (n + 1, k + hit)
    return out


def table(out: dict[str, dict], title: str) -> None:
    print(f"\n{title}")
    print(f"  {'path':<16} {'FA/clean':>8} " + " ".join(f"{c:>7}" for c in simulate.EXACT)
          + f" {'runs':>5}")
    for path, t in out.items():
        found = []
        for c in simulate.EXACT:
            n, k = t.get(c, (0, 0))
            found.append(f"{100 * k / n:6.1f}%" if n else f"{'-':>7}")
        runs = t["runs"] / max(t["n"], 1) if path == "bisect ends" else t["runs"]
        print(f"  {path:<16} {100 * t['fa'] / max(t['clean'], 1):7.1f}% " + " ".join(found)
              + f" {runs:5.1f}")


# --- the bisect's culprit --------------------------------------------------------

TEMPLATE = simulate.ROOT / "tests" / "fixtures" / "e2e-check" / "guest-00" / "bundle"
RANGE = 8  # commits after the good one


def bisect_culprit(pools: dict[str, np.ndarray], slowdown: float, boots: simulate.Boots, rng,
                   studies, work) -> tuple[str, int]:
    """One bisect of RANGE commits with the culprit drawn uniformly, run by
    iowatch.bisect.search.search over bundles made from a real guest bundle
    (tests/fixtures/e2e-check guest-00: odirect-vs-readers, its writer and
    readers deciding) whose samples are replaced by draws: the writer slower by
    `slowdown` from the culprit on. Returns (outcome, measurements): "named
    right", "named wrong", "range holds it", "range misses it" or "no bisect"
    (the ends were not confirmed different)."""
    import shutil

    from iowatch import bundle
    from iowatch.bisect.search import NothingToBisect, culprit_of, search
    from iowatch.check import VariantRun
    from iowatch.kernel.build import Variant
    culprit = int(rng.integers(1, RANGE + 1))
    count = [0]

    def measure(index: int, attempt: int) -> VariantRun:
        count[0] += 1
        d = work / f"m{count[0]}"
        shutil.copytree(TEMPLATE, d)
        doc = bundle.load(d)
        doc["run_id"] = str(uuid.uuid4())
        for cell in doc["cells"]:
            offset = {g: float(np.exp(rng.normal(0, float(np.log(p).std(ddof=1))
                                                  * np.sqrt(boots.share / (1 - boots.share)))))
                      if boots.share else 1.0 for g, p in pools.items()}
            for rep in cell["repetitions"]:
                for s in rep["samples"]:
                    if s.get("job") is None and s["group"] in pools:
                        v = float(rng.choice(pools[s["group"]])) * offset[s["group"]]
                        if s["group"] == "writer" and index >= culprit:
                            v *= 1 - slowdown
                        s["value"] = v
        bundle.write_manifest(d, doc)
        v = Variant(index, f"{index:040x}", f"commit {index}", status="built")
        return VariantRun(v, d, status=doc["status"])

    try:
        _, steps, _, _, _ = search(RANGE, measure, studies=studies, say=lambda s: None)
    except NothingToBisect:
        return "no bisect", count[0]
    found = culprit_of(steps, RANGE)
    if found.first_bad is not None:
        return ("named right" if found.first_bad == culprit else "named wrong"), count[0]
    return ("range holds it" if culprit in found.candidates else "range misses it"), count[0]


def culprits(trials: int, seed: int, boots: simulate.Boots, slowdowns=(0.2, 0.5)) -> dict:
    """{slowdown: {outcome: share, "measurements": mean}} over `trials` bisects."""
    import tempfile
    from pathlib import Path
    studies = load_studies(resources.studies_dir())
    rng = np.random.default_rng(seed)
    model = simulate.lognormal_cells(0.10)
    # Each group's pool: the model's CV 10% noise at the template's own level.
    pools = {"writer": model[0].aa / model[0].aa.mean() * 300.0,
             "readers": model[1].aa / model[1].aa.mean() * 19_700.0}
    out = {}
    for s in slowdowns:
        tally: dict = {}
        runs = 0
        for _ in range(trials):
            with tempfile.TemporaryDirectory() as work:
                outcome, n = bisect_culprit(pools, s, boots, rng, studies, Path(work))
            tally[outcome] = tally.get(outcome, 0) + 1
            runs += n
        out[s] = {k: v / trials for k, v in tally.items()} | {"measurements": runs / trials}
    return out


def culprit_table(out: dict, title: str) -> None:
    print(f"\n{title}")
    kinds = ("named right", "named wrong", "range holds it", "range misses it", "no bisect")
    print(f"  {'slowdown':<9} " + " ".join(f"{k:>15}" for k in kinds) + f" {'measured':>9}")
    for s, row in out.items():
        print(f"  {-100 * s:>7.0f}%  " + " ".join(f"{100 * row.get(k, 0):14.1f}%" for k in kinds)
              + f" {row['measurements']:9.1f}")
