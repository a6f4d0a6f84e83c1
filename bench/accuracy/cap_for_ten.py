"""The cap an exact -10% (or -20%) costs (issue 41 item 4: exact -10% found >= 80% at 25%
between boots on every deciding cell with CV <= 15%, "with the cap it costs
stated per study"): the shipped check (one repetition a boot, the family's
futility as shipped) of a family of `cells` deciding cells at one CV, one of
them slowed by exactly 10%, at a study cap (max_runs) of 20, 40, 60, ...;
each row prints the -10% cells found with its 95% Wilson interval and the
variant's boots, and the smallest cap of the grid whose figure reaches the
goal. The CVs of the studies' deciding cells on the modelled lab, from the
kept reproductions (within each variant, over its boots), are printed first,
so that a study's cap can be read off its CV and its family's size.
bench/accuracy/CHECK-STOP.md keeps what it printed.

    .venv/bin/python bench/accuracy/cap_for_ten.py --trials 200
    .venv/bin/python bench/accuracy/cap_for_ten.py --trials 200 --condition slow20 \
        --goal 0.95 --share 0.4
"""
from __future__ import annotations

import argparse
import collections
import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).parent))

import check_boots  # noqa: E402
import simulate  # noqa: E402
from futility import wilson  # noqa: E402

GOAL = 0.80
REPRODUCTIONS = ROOT / "tests" / "fixtures" / "reproductions"


def kept_cvs() -> dict[tuple[str, str, str], list[float]]:
    """{(study, cell, metric): the log SD of each variant's repetitions} over the
    kept reproductions' deciding cells: the CV each cell has on the modelled lab."""
    from iowatch import bundle
    from iowatch.judging import deciding
    from iowatch.studies import load_studies
    studies = load_studies(ROOT / "jobs" / "studies")
    values = collections.defaultdict(list)
    for manifest in sorted(REPRODUCTIONS.glob("seed-*/**/bundle.json")):
        variant = re.search(r"(?:variant|guest)-(\d+)", str(manifest.relative_to(REPRODUCTIONS)))
        doc = bundle.load(manifest.parent)
        for cell in doc["cells"]:
            study = studies.get(cell["study"])
            wanted = deciding(study) if study else set()
            for rep in cell["repetitions"]:
                for s in rep["samples"]:
                    if (s["group"], s["metric"]) in wanted and s.get("job") is None and s["value"] > 0:
                        values[(cell["study"], cell["id"], s["metric"], variant.group(1))].append(s["value"])
    out = collections.defaultdict(list)
    for (study, cell, metric, _), v in sorted(values.items()):
        if len(v) >= 3:
            out[(study, cell, metric)].append(float(np.std(np.log(v), ddof=1)))
    return out


def found(cv: float, cells: int, cap: int, trials: int, seed: int, share: float,
          condition: str = "slow10"):
    """(slowed cells found, checks, the slowed variant's mean boots) of `trials` checks."""
    model = simulate.exact_slowdowns(simulate.lognormal_cells(cv))
    rng = np.random.default_rng(seed)
    hits = boots = 0
    for _ in range(trials):
        d = simulate.draw_matrix(model, rng, condition, cells)
        verdicts, _, _, variant = check_boots.judge_check(check_boots.SHIPPED, d, rng, share, cap)
        hits += verdicts[d.slowed].outcome == "regression"
        boots += variant
    return hits, trials, boots / trials


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=200)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--share", type=float, default=0.25)
    p.add_argument("--cvs", type=float, nargs="*", default=[0.05, 0.10, 0.15])
    p.add_argument("--cells", type=int, nargs="*", default=[1, 3, 6, 14])
    p.add_argument("--caps", type=int, nargs="*", default=[20, 40, 60, 100])
    p.add_argument("--condition", default="slow10", choices=list(simulate.EXACT),
                   help="the exact slowdown (slow20 with --goal 0.95 --share 0.4: item 4's "
                        "-20%% >= 95%% at 40%% between boots)")
    p.add_argument("--goal", type=float, default=GOAL)
    args = p.parse_args()
    slow = f"-{simulate.EXACT[args.condition]:.0%}"
    print("the studies' deciding cells on the modelled lab (kept reproductions): "
          "log SD within each variant")
    for (study, cell, metric), sds in kept_cvs().items():
        print(f"  {cell:<38} {metric:<28} " + " ".join(f"{100 * s:5.1f}%" for s in sds))
    print(f"\nexact {slow} found at {args.share:.0%} between boots, {args.trials} checks a row "
          f"(goal {args.goal:.0%})")
    for cv in args.cvs:
        for cells in args.cells:
            reached = None
            for cap in args.caps:
                t0 = time.monotonic()
                hits, n, boots = found(cv, cells, cap, args.trials, args.seed, args.share,
                                       args.condition)
                if reached is None and hits / n >= args.goal:
                    reached = cap
                print(f"  CV {100 * cv:g}%, {cells} cells, cap {cap}: {slow} found {wilson(hits, n)}, "
                      f"{boots:.1f} boots a variant ({time.monotonic() - t0:.0f} s)", flush=True)
            print(f"  CV {100 * cv:g}%, {cells} cells: the goal's cap "
                  + (f"{reached}" if reached else f"above {args.caps[-1]}"), flush=True)


if __name__ == "__main__":
    main()
