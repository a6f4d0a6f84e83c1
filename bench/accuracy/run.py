"""bench/accuracy: how often iowatch's verdict is right, on real samples, beside the anchors' rules.

Prints, for each file of real samples (by default
tests/fixtures/accuracy/real-samples-in-memory.json, the loop images in memory so
that the noise is the kernel's and the CPU's, and real-samples-calibrated.json,
images on the VM's disk beside a QEMU guest, both with throttles calibrated by
feedback to cut the calibrated cells by 10, 20 and 50%; real-samples-vlab.json,
boots of one built kernel in the virtual lab slowed by QEMU block throttling
(bench/accuracy/collect_vlab.py); then the
older real-samples.json and real-samples-quiet.json, whose throttles were set at
(1 - s) x the median and cut 24-76%; that directory's README and
bench/accuracy/collect.py say how each was made):

1. the real cells: repetitions, mean and coefficient of variation, and the
   slowdown each throttle achieved;
2. for one cell and for a 40-cell check, per rule: false alarms on a clean
   patch (per check and per clean cell), the share of slowed cells found under
   the 10, 20 and 50% throttles, and the repetitions a side used; iowatch at a
   fixed 5 a side (confirmed; suspected or confirmed) and adaptive (5 to 20 a
   side), LKP, Perfherder, mmtests and fsperf on the same draws
   (bench/accuracy/simulate.py says how checks are drawn); then the same
   detection by the slowdown the slowed cell really got (5-15%, 15-25%, 25-40%,
   40% or more), and per slowed cell for iowatch adaptive;
3. the same for a model of the noise the issue names (lognormal, CV 10%, and
   5%), where the slowdown is exactly the nominal one;
4. the goals, met or not, by the throttles' labels and by the achieved sizes,
   for all the file's cells and again for a check drawn only from its cells at
   CV <= 15% (the noise the issue's goals are set for), where it has such cells;
5. the speed of compare_matrix on 1,000 cells.

    .venv/bin/python bench/accuracy/run.py              # 400 checks per condition
    .venv/bin/python bench/accuracy/run.py --trials 100 # quicker, wider error
    .venv/bin/python bench/accuracy/run.py --samples --caps 30 40   # the model only, larger caps
    .venv/bin/python bench/accuracy/run.py --paths --trials 200     # every path, boots (issue 24)
    .venv/bin/python bench/accuracy/run.py --paths --drift 2        # ... and a check whose machine
                                                                    # doubles its speed from round 2
    .venv/bin/python bench/accuracy/run.py --path-table --trials 200 --jobs 2   # issue 41 item 4's
        # table: every path at 0-40% between boots, synthetic and recorded boots (path_table.py)
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).parent))

import check_boots  # noqa: E402
import later_paths  # noqa: E402
import path_table  # noqa: E402
import simulate  # noqa: E402
from iowatch.stats import CellInput, CellKey, compare_matrix  # noqa: E402
from iowatch.vocabulary import DEFAULT_CAP as CAP, FDR, DEFAULT_MIN_EFFECT as MIN_EFFECT

QUIET_CV = 0.15  # "noise at a CV of about 10%": the cells the goals speak of
COLUMNS = ("false alarm per check", "clean cells flagged", "slow10", "slow20", "slow50", "runs a side")


def _pct(v) -> str:
    return "   -  " if v is None else f"{100 * v:5.1f}%"


def table(title: str, out: dict) -> dict[str, dict]:
    print(f"\n{title}")
    print(f"  {'rule':<54} {'FA/check':>8} {'FA/cell':>8} {'-10%':>7} {'-20%':>7} {'-50%':>7} {'runs/side':>9}")
    rows = {}
    by_cell = out.pop("_by_cell", None)
    by_size = out.pop("_by_size", None)
    for rule, by_condition in out.items():
        aa = by_condition["aa"].row()
        found = {c: by_condition[c].row()["detected"] if c in by_condition else None
                 for c in simulate.CONDITIONS}
        runs = np.mean([t.row()["runs a side"] for t in by_condition.values()])
        rows[rule] = {"fa_check": aa["false alarm per check"], "fa_cell": aa["clean cells flagged"],
                      **found, "runs": runs}
        print(f"  {rule:<54} {_pct(aa['false alarm per check']):>8} {_pct(aa['clean cells flagged']):>8} "
              f"{_pct(found['slow10']):>7} {_pct(found['slow20']):>7} {_pct(found['slow50']):>7} "
              f"{runs:9.1f}")
    if by_size:
        bins = [name for _, _, name in simulate.SIZE_BINS]
        print("  by the slowdown the slowed cell really got (share found; checks in brackets):")
        print(f"  {'rule':<54} " + " ".join(f"{b:>15}" for b in bins))
        for rule, tallies in by_size.items():
            cells = [f"{_pct(tallies[b].row()['detected'])} ({tallies[b].slowed:>4})" if b in tallies
                     else "-" for b in bins]
            print(f"  {rule:<54} " + " ".join(f"{c:>15}" for c in cells))
            rows.setdefault(rule, {})["by_size"] = {b: tallies[b].row()["detected"] for b in tallies}
    if by_cell:
        print("  iowatch adaptive, by the slowed cell and the slowdown its throttle achieved:")
        for (name, achieved), t in by_cell.items():
            print(f"    {name + f' {achieved:+.1f}%':<66} confirmed {_pct(t.row()['detected'])} of "
                  f"{t.slowed}, {t.runs / max(t.checks, 1):4.1f} runs a side on that cell")
    return rows


def goals(rows: dict[str, dict], where: str) -> None:
    adaptive = next(v for k, v in rows.items() if k.startswith("iowatch adaptive"))
    fixed = rows["iowatch, 5 a side: suspected or confirmed"]
    anchors = {k: v for k, v in rows.items() if not k.startswith("iowatch") and "fa_check" in v}
    checks = [
        ("adaptive: false alarm on a clean patch <= 5% of checks", adaptive["fa_check"], 0.05, "<="),
        ("adaptive: -20% confirmed >= 95%", adaptive["slow20"], 0.95, ">="),
        ("adaptive: -10% confirmed >= 80%", adaptive["slow10"], 0.80, ">="),
        ("5 a side: -20% suspected or confirmed >= 90%", fixed["slow20"], 0.90, ">="),
        ("5 a side: clean cells flagged <= 2%", fixed["fa_cell"], 0.02, "<="),
    ]
    print(f"  goals ({where}):")
    for name, value, goal, how in checks:
        if value is None:
            print(f"    {name}: no data")
            continue
        ok = value <= goal if how == "<=" else value >= goal
        print(f"    {'met ' if ok else 'MISS'} {name}: {100 * value:.1f}%")
    for name, b, goal, sized in (
            ("adaptive: a real 15-25% slowdown confirmed >= 95%", "15-25%", 0.95, adaptive.get("by_size", {})),
            ("adaptive: a real 5-15% slowdown confirmed >= 80%", "5-15%", 0.80, adaptive.get("by_size", {})),
            ("5 a side: a real 15-25% slowdown suspected or confirmed >= 90%", "15-25%", 0.90,
             fixed.get("by_size", {}))):
        value = sized.get(b)
        print(f"    {'no data' if value is None else ('met ' if value >= goal else 'MISS')} {name}"
              + ("" if value is None else f": {100 * value:.1f}%"))
    for size in ("slow10", "slow20", "slow50") if anchors else ():
        best = max((v[size] or 0, k) for k, v in anchors.items())
        ours = adaptive[size]
        if ours is not None:
            print(f"    {size}: iowatch adaptive {100 * ours:.1f}% with {100 * adaptive['fa_check']:.1f}% "
                  f"false alarms per check; best anchor {best[1]} {100 * best[0]:.1f}% with "
                  f"{100 * anchors[best[1]]['fa_check']:.1f}%")


def paths_table(real, trials: int, seed: int, boots, title: str, paths=simulate.PATHS,
                anchors: bool = True) -> None:
    """Every path of the product on the same draws (issue 24): clean checks by
    how they end, false alarms per clean check, exact slowdowns confirmed, runs
    a side; the anchors on the same repetitions at 5, 10 and 20 a side."""
    out = simulate.run_paths(real, trials, seed, boots, paths=paths, anchors=anchors)
    print(f"\n{title}; {boots.name}")
    print(f"  {'path or rule':<58} {'no chg':>6} {'unsure':>6} {'susp.':>6} {'regr.':>6} "
          f"{'FA/chk':>6} {'-10%':>6} {'-20%':>6} {'-50%':>6} {'runs':>5}")
    for rule, t in out.items():
        states = [f"{_pct(t.share(s)):>6}" if rule in paths else f"{'':>6}"
                  for s in ("no-change", "unsure", "suspected", "regression")]
        found = [f"{_pct(t.detected(c)):>6}" for c in simulate.EXACT]
        print(f"  {rule:<58} {' '.join(states)} {_pct(t.fa):>6} {' '.join(found)} "
              f"{t.runs / max(t.checks, 1):5.1f}")


def speed() -> float:
    rng = np.random.default_rng(0)
    cells = [CellInput(CellKey("s", "h", "ssd", "d", "xfs", "g", f"m{i}"), rng.normal(100, 5, 10),
                       rng.normal(100, 5, 10), "higher", MIN_EFFECT) for i in range(1000)]
    compare_matrix(cells[:10], fdr=FDR, cap=CAP)
    t0 = time.perf_counter()
    compare_matrix(cells, fdr=FDR, cap=CAP)
    return time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trials", type=int, default=400, help="checks drawn per condition (default 400)")
    p.add_argument("--samples", nargs="*", default=[str(simulate.SAMPLES.with_name(name)) for name in (
        "real-samples-in-memory.json", "real-samples-vlab.json", "real-samples-calibrated.json",
        "real-samples.json", "real-samples-quiet.json")],
        help="real-sample files (default: the in-memory, the virtual lab's, the calibrated, the "
             "loaded and the quiet collection)")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--paths", action="store_true",
                   help="only the paths table (issue 24): check adaptive, 5 a side and run "
                        "--against a fixed 5-run base, on independent and boot-clustered draws of "
                        "the CV 10%% model with exact slowdowns that keep their noise")
    p.add_argument("--drift", type=float, default=2.0,
                   help="with --paths: the machine's speed from a check's third round on, in "
                        "the drift table (default 2: twice as fast)")
    p.add_argument("--shares", type=float, nargs="*", default=[0.10, 0.25],
                   help="with --paths: the between-boot shares of variance to draw (default 0.10 0.25)")
    p.add_argument("--reps-per-boot", type=int, default=2,
                   help="with --paths: repetitions of one boot in boot-clustered draws (default 2)")
    p.add_argument("--caps", type=int, nargs="*", default=[],
                   help="also run the noise model with these caps of the adaptive loop (default "
                        "none: the cap iowatch uses, 20), to see what a goal would need")
    p.add_argument("--path-table", action="store_true",
                   help="only issue 41 item 4's table: every path's false alarms, 'no change' and "
                        "exact -20/-10%% found with 95%% intervals, goals and anchors, at 0, 10, 25 and "
                        "40%% between boots, on synthetic and recorded boots (path_table.py)")
    p.add_argument("--table-shares", dest="shares_table", type=float, nargs="*",
                   default=list(path_table.SHARES),
                   help="with --path-table: the between-boot shares (default 0 0.10 0.25 0.40)")
    p.add_argument("--boots", default=str(simulate.BOOTS),
                   help="with --path-table: the recorded boots (default %(default)s)")
    p.add_argument("--jobs", type=int, default=1,
                   help="with --path-table: processes to measure the blocks in (default 1)")
    p.add_argument("--kinds", nargs="*", default=list(path_table.KINDS), choices=path_table.KINDS,
                   help="with --path-table: the kinds of draw (default all)")
    args = p.parse_args()
    t0 = time.monotonic()
    if args.path_table:
        simulate.BOOTS = Path(args.boots)
        path_table.main(args.trials, args.seed, args.jobs, kinds=args.kinds, shares=args.shares_table)
        return
    if args.paths:
        model = simulate.exact_slowdowns(simulate.lognormal_cells(0.10))
        print(f"== paths: {simulate.MATRIX_CELLS}-cell checks of the lognormal CV 10% model, exact "
              f"slowdowns with their noise kept, {args.trials} checks a condition; run --against: "
              f"a fixed base of {simulate.AGAINST_BASE}; shares are of clean checks")
        for share in (0.0, *args.shares):
            paths_table(model, args.trials, args.seed, simulate.Boots(share, args.reps_per_boot),
                        "40-cell checks")
        # Issue 24 item 1: the check as it boots (round 0 in two boots a side, a boot a round).
        for share in (0.0, *args.shares):
            check_boots.table(check_boots.run(model, args.trials, args.seed, share),
                              f"the check as it boots, 40 cells; {share:.0%} between boots")
        # Issue 24 item 2: the machine speeds up from the third round on; the check
        # with its rounds pooled, and with them given to the verdict as blocks.
        for share in (0.0, *args.shares):
            paths_table(model, args.trials, args.seed,
                        simulate.Boots(share, args.reps_per_boot, drift=args.drift),
                        "40-cell checks, rounds pooled or blocked", paths=simulate.DRIFT_PATHS,
                        anchors=False)
        for share in (0.0, *args.shares):
            boots = simulate.Boots(share, later_paths.FIRST)
            later_paths.table(later_paths.run(model, args.trials, args.seed, boots),
                              f"the bisect's ends and a nightly's change points, 40 cells; "
                              f"{boots.name}")
            later_paths.culprit_table(later_paths.culprits(args.trials, args.seed, boots),
                                      f"the bisect's culprit, {later_paths.RANGE} commits; "
                                      f"{boots.name}")
        print(f"(bench wall time {time.monotonic() - t0:.0f} s)")
        return
    for n, samples in enumerate(args.samples):
        real = simulate.load(Path(samples))
        print(f"== 1. real cells ({samples})")
        for c in real:
            cv = c.aa.std(ddof=1) / c.aa.mean()
            slow = ", ".join(f"{k} {c.achieved.get(k, float('nan')):+.1f}% (n={len(v)})"
                             for k, v in sorted(c.slowed.items()))
            print(f"  {c.name:<58} n={len(c.aa):<3} mean {c.aa.mean():12,.1f}  CV {100 * cv:5.1f}%"
                  + (f"  throttled: {slow}" if slow else "  (not throttled)"))
        print("  FA = false alarm (a clean cell flagged a regression); -10/-20/-50% = the share of "
              "throttled cells flagged, by the throttle's nominal size (achieved sizes above)")
        print(f"\n== 2. real samples ({Path(samples).name})")
        table("one cell", simulate.run(real, args.trials, args.seed + 10 * n, size=1))
        rows = table(f"{simulate.MATRIX_CELLS}-cell check (one slowed cell)",
                     simulate.run(real, args.trials, args.seed + 10 * n + 1))
        goals(rows, Path(samples).name)
        # The goals are for noise at a CV of about 10%: the same checks drawn
        # only from the real cells that are that quiet, when the file has such cells
        # and one of them was slowed.
        quiet = [c for c in real if c.aa.std(ddof=1) / c.aa.mean() <= QUIET_CV]
        if len(quiet) >= 2 and any(c.slowed for c in quiet):
            print(f"\n  real cells at CV <= {QUIET_CV:.0%}: " + ", ".join(c.name for c in quiet))
            rows = table(f"{simulate.MATRIX_CELLS}-cell check of the cells at CV <= {QUIET_CV:.0%} "
                         f"(one slowed cell)",
                         simulate.run(quiet, args.trials, args.seed + 10 * n + 2))
            goals(rows, f"{Path(samples).name}, cells at CV <= {QUIET_CV:.0%}")
        print()

    print("\n== 3. the noise model of the issue (lognormal, exact slowdowns)")
    for cv in (0.10, 0.05):
        model = simulate.lognormal_cells(cv)
        rows = table(f"{simulate.MATRIX_CELLS}-cell check, CV {cv:.0%}",
                     simulate.run(model, args.trials, args.seed + 2, anchors=True))
        goals(rows, f"lognormal CV {cv:.0%}")
        for cap in args.caps:
            # The model's pool grows with the cap, so a larger cap draws new values, not repeats.
            model = simulate.lognormal_cells(cv, n=max(30, 2 * cap))
            rows = table(f"{simulate.MATRIX_CELLS}-cell check, CV {cv:.0%}, cap {cap} a side",
                         simulate.run(model, args.trials, args.seed + 2, anchors=False, cap=cap))
            goals(rows, f"lognormal CV {cv:.0%}, cap {cap}")

    print(f"\n== 4. speed: compare_matrix of 1,000 cells x 10 runs a side: {speed():.3f} s")
    print(f"(bench wall time {time.monotonic() - t0:.0f} s, {args.trials} checks per condition)")


if __name__ == "__main__":
    main()
