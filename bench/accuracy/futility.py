"""What futility stopping buys and costs (issue 41 item 3): `iowatch check` as it
boots (bench/accuracy/check_boots.py, the shipped path: one repetition a boot),
with and without stopping a cell whose decisions are all out of reach by the
cap (iowatch.stats.sequential.futile), and with the family's rule (every
still-wanted cell of a comparison stops when the decisions they may reach by
the cap sum to fewer than a bound: sequential.family_futile), at 0, 10, 25 and 40% of each cell's
variance between boots, on the lognormal CV 10% model and on the real
collections. Each row: the clean checks' end states and false alarms, the
exact slowdowns found, the repetitions a side per cell, and the variant's
boots (its busiest cell's: a boot runs every cell still wanted), over all
checks and over the clean ones (issue 41 item 3's goal: 8); and, in the
slowed checks, how often an unchanged cell was confirmed beside the slowed
one (issue 41 item 6: a true discovery loosens Benjamini-Hochberg for the
rest of its family). Figures in brackets are 95% Wilson intervals.

    .venv/bin/python bench/accuracy/futility.py --trials 200
    .venv/bin/python bench/accuracy/futility.py --trials 200 --collections model \
        --shares 0.25 0.4 --conditions slow20 --bounds 0.2 0.3 0.5
    .venv/bin/python bench/accuracy/futility.py --trials 400 --seed 42 --collections model \
        --shares 0.25 0.4 --conditions slow20 slow10 --rules family --levels union exact \
        --fdr 0.025 --cells 3 --cap 40
    .venv/bin/python bench/accuracy/futility.py --trials 600 --seed 42 --collections model \
        --shares 0.25 0.4 --conditions slow20 slow10 --rules family --cells 40 \
        --extend 1 2 --projection reach

--extend measures the promising zone (sequential.EXTEND, off as shipped): a
cell unsure at the cap measures on toward EXTEND times it while a confirmed
decision is in reach there.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).parent))

from scipy.stats import binomtest  # noqa: E402

import check_boots  # noqa: E402
import simulate  # noqa: E402
from iowatch.stats import sequential  # noqa: E402
from iowatch.vocabulary import DEFAULT_CAP  # noqa: E402

COLLECTIONS = ("model", "real-samples-in-memory.json", "real-samples-vlab.json")
SHARES = (0.0, 0.10, 0.25, 0.40)


def wilson(k: float, n: int) -> str:
    """k of n as a percentage with its 95% Wilson interval."""
    if not n:
        return "-"
    lo, hi = binomtest(round(k), n).proportion_ci(method="wilson")
    return f"{100 * k / n:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def cells(name: str):
    if name == "model":
        return simulate.exact_slowdowns(simulate.lognormal_cells(0.10))
    return simulate.load(simulate.SAMPLES.with_name(name))


def row(t: check_boots.CheckTally) -> str:
    found = "  ".join(f"{c} {wilson(t.slowed[c][1], t.slowed[c][0])}" for c in simulate.EXACT
                      if c in t.slowed)
    beside = "  ".join(f"{c} {wilson(t.beside.get(c, 0), t.slowed[c][0])}"
                       for c in simulate.EXACT if c in t.slowed)
    return (f"no change {wilson(t.states['no-change'], t.clean)}  false alarms "
            f"{wilson(t.false_alarm, t.clean)}  {found}  runs a side {t.runs / t.checks:.1f}  "
            f"boots a variant {t.variant_boots / t.checks:.1f} (clean checks "
            f"{t.clean_boots / max(t.clean, 1):.1f})\n"
            f"  an unchanged cell confirmed beside the slowed one: {beside}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=200)
    p.add_argument("--seed", type=int, default=41)
    p.add_argument("--collections", nargs="*", default=list(COLLECTIONS))
    p.add_argument("--shares", type=float, nargs="*", default=list(SHARES))
    p.add_argument("--conditions", nargs="*", default=list(simulate.EXACT))
    p.add_argument("--bounds", type=float, nargs="*", default=[sequential.FAMILY_BOUND],
                   help="the family's rule at these bounds (sequential.FAMILY_FUTILE)")
    p.add_argument("--rules", nargs="*", default=["cell", "family", "cap"],
                   help="which rows: cell (futile at CHANCE), family (--bounds), cap (neither)")
    p.add_argument("--cells", type=int, default=simulate.MATRIX_CELLS,
                   help="deciding cells a check (default %(default)s; the shipped check-quick "
                        "matrix has 11 on the virtual lab, 14 with an NVMe device, and a "
                        "one-study check of three device classes 3)")
    p.add_argument("--cap", type=int, default=DEFAULT_CAP,
                   help="repetitions a side at most (a study's max_runs; default %(default)s)")
    p.add_argument("--levels", nargs="*", default=["union"], choices=["union", "exact"],
                   help="the looks' levels: union (each look's share of q, as shipped) or exact "
                        "(sequential.nominal_levels from the looks' joint distribution)")
    p.add_argument("--fdr", type=float, default=check_boots.FDR,
                   help="the false-discovery rate q the check is judged at (default %(default)s)")
    p.add_argument("--extend", type=float, nargs="*", default=[sequential.EXTEND],
                   help="the promising zone's reach as a multiple of the cap (sequential.EXTEND; "
                        "1, as shipped, is off)")
    p.add_argument("--promising", type=float, default=sequential.PROMISING,
                   help="a cell unsure at the cap measures on toward the reach when its chances "
                        "of a confirmed decision by then sum to at least this "
                        "(sequential.PROMISING, default %(default)s)")
    p.add_argument("--projection", choices=["planned", "reach"], default=sequential.ZONE_PROJECTION,
                   help="in the zone, the family's futility projects every chance to the cap "
                        "(planned) or its confirmed decisions to the reach (sequential.ZONE_PROJECTION)")
    args = p.parse_args()
    shipped = sequential.FUTILE, sequential.FAMILY_FUTILE
    rules = {"cell": [(f"futility at {sequential.CHANCE:.0%}", sequential.CHANCE, 0.0)],
             "family": [(f"the family's futility below {b:g} decisions"
                         + (" (as shipped)" if shipped == (0.0, b) else ""), 0.0, b)
                        for b in args.bounds],
             "cap": [("to the cap (as shipped)" if shipped == (0.0, 0.0) else "to the cap",
                      0.0, 0.0)]}
    exact, zone = sequential.EXACT, (sequential.EXTEND, sequential.PROMISING, sequential.ZONE_PROJECTION)
    check_boots.FDR = args.fdr
    sequential.PROMISING, sequential.ZONE_PROJECTION = args.promising, args.projection
    for sequential.EXTEND in args.extend:
        _rows(args, rules)
    sequential.FUTILE, sequential.FAMILY_FUTILE, sequential.EXACT = *shipped, exact
    sequential.EXTEND, sequential.PROMISING, sequential.ZONE_PROJECTION = zone


def _rows(args: argparse.Namespace, rules: dict) -> None:
    """The table's rows at the promising zone's reach set now (sequential.EXTEND)."""
    zone = (f", reach x{sequential.EXTEND:g} when promising ({sequential.PROMISING:g}; "
            f"projected to the {sequential.ZONE_PROJECTION})" if sequential.EXTEND > 1 else "")
    for name in args.collections:
        real = cells(name)
        for share in args.shares:
            for levels in args.levels:
                for label, chance, bound in (r for key in args.rules for r in rules[key]):
                    sequential.FUTILE, sequential.FAMILY_FUTILE = chance, bound
                    sequential.EXACT = levels == "exact"
                    t0 = time.monotonic()
                    out = check_boots.run(real, args.trials, args.seed, share,
                                          paths=(check_boots.SHIPPED,),
                                          conditions=tuple(args.conditions), size=args.cells,
                                          cap=args.cap)
                    print(f"{name}, {args.cells} cells, cap {args.cap}{zone}, q {args.fdr:g}, "
                          f"{share:.0%} between boots, {levels} levels, "
                          f"{label} ({time.monotonic() - t0:.0f} s):\n"
                          f"  {row(out[check_boots.SHIPPED])}", flush=True)


if __name__ == "__main__":
    main()
