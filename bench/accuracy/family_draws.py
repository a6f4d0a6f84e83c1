"""The test suite's seeded draws with the family's futility off and on (issue 41
item 3): the shipped check path (one repetition a boot, tests/stats/
test_check_boots.py's seeds) and `check adaptive` at two repetitions a boot
(tests/stats/test_paths.py's seeds), on the lognormal CV 10% model. Each row
prints the clean checks' false alarms and "no change", their repetitions a
side, and the -20% found over as many slowed checks; figures in brackets are
95% Wilson intervals. bench/accuracy/CHECK-STOP.md keeps what it printed.

    .venv/bin/python bench/accuracy/family_draws.py --trials 1000
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).parent))

import check_boots  # noqa: E402
import simulate  # noqa: E402
from futility import wilson  # noqa: E402
from iowatch.stats import sequential  # noqa: E402

# (name, seed of the clean draw, seed of the -20% draw, share between boots, path,
# cells a check): the suite's 40-cell draws, and small families (a study of one
# or three deciding cells), where the family's sum is a few cells' chances.
DRAWS = (
    ("shipped path, 1 a boot", 24, 26, 0.10, "shipped", 40),
    ("shipped path, 1 a boot", 24, 26, 0.25, "shipped", 40),
    ("check adaptive, 2 a boot", 102, 44, 0.10, "two", 40),
    ("check adaptive, 2 a boot", 102, 102, 0.25, "two", 40),
    ("shipped path, 1 a boot", 24, 26, 0.25, "shipped", 3),
    ("shipped path, 1 a boot", 24, 26, 0.25, "shipped", 1),
)


def _tally(model, trials: int, seed: int, share: float, path: str, size: int, conditions: tuple):
    if path == "shipped":
        return check_boots.run(model, trials, seed, share, paths=(check_boots.SHIPPED,),
                               conditions=conditions, size=size)[check_boots.SHIPPED]
    return simulate.run_paths(model, trials, seed, simulate.Boots(share, 2), paths=("check adaptive",),
                              anchors=False, conditions=conditions, size=size)["check adaptive"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--bound", type=float, default=sequential.FAMILY_BOUND)
    ap.add_argument("--rows", type=int, nargs="*", help="which DRAWS (0-based; default all)")
    args = ap.parse_args()
    model = simulate.exact_slowdowns(simulate.lognormal_cells(0.10))
    print(f"{args.trials} clean and {args.trials} -20% checks a row; family futility bound {args.bound}")
    print("| draw | between boots | family | false alarms | \"no change\" | runs a side (clean) "
          "| -20% found |")
    print("|---|---|---|---|---|---|---|")
    for row, (name, clean_seed, slow_seed, share, path, size) in enumerate(DRAWS):
        if args.rows and row not in args.rows:
            continue
        for bound in (0.0, args.bound):
            t0 = time.monotonic()
            sequential.FAMILY_FUTILE = bound
            clean = _tally(model, args.trials, clean_seed, share, path, size, ())
            slow = _tally(model, args.trials, slow_seed, share, path, size, ("slow20",))
            n, found = slow.slowed["slow20"]
            print(f"| {name}, {size} cells, seeds {clean_seed}/{slow_seed} | {share:.0%} | "
                  f"{'off' if bound == 0 else f'< {bound}'} | {wilson(clean.false_alarm, clean.clean)} | "
                  f"{wilson(clean.states['no-change'], clean.clean)} | {clean.runs / clean.checks:.1f} | "
                  f"{wilson(found, n)} |", flush=True)
            print(f"  ({time.monotonic() - t0:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
