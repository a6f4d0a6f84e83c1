"""The shipped check with looks every `step` repetitions a side instead of
every sequential.STEP (5), by the size of the check's family (issue 41 item 3:
a clean check's boots a variant, goal <= 8 at cap 20). The family's futility
as shipped; lognormal CV 10% model; clean and -20% checks on the same seed.
Figures in brackets are 95% Wilson intervals; bench/accuracy/CHECK-STOP.md
keeps what it printed.

    .venv/bin/python bench/accuracy/look_step.py --trials 400 --cells 3 14 40 --steps 5 2 1

The schedule's step is a keyword default of iowatch.stats.sequential's
functions (look_points, next_target, level_at, ...), so a step is tried by
setting those defaults for the process: the verdict, the adaptive loop's
next look and the futility's projection all read the same schedule, as they
would if STEP were changed.
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
from futility import row  # noqa: E402
from iowatch.stats import sequential  # noqa: E402


def set_step(step: int) -> None:
    """Every schedule function of sequential looks every `step` repetitions."""
    for f in vars(sequential).values():
        defaults = getattr(f, "__kwdefaults__", None) if callable(f) else None
        if defaults and "step" in defaults:
            defaults["step"] = step


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=400)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--cells", type=int, nargs="*", default=[3, 14, 40])
    p.add_argument("--steps", type=int, nargs="*", default=[sequential.STEP, 2, 1])
    p.add_argument("--shares", type=float, nargs="*", default=[0.25, 0.40])
    p.add_argument("--bounds", type=float, nargs="*", default=[sequential.FAMILY_FUTILE],
                   help="the family's futility bound (0: to the cap; default as shipped)")
    args = p.parse_args()
    model = simulate.exact_slowdowns(simulate.lognormal_cells(0.10))
    shipped = sequential.FAMILY_FUTILE
    for step, bound in ((s, b) for s in args.steps for b in args.bounds):
        set_step(step)
        sequential.FAMILY_FUTILE = bound
        rule = f"the family's futility below {bound:g}" if bound else "to the cap"
        for cells in args.cells:
            for share in args.shares:
                t0 = time.monotonic()
                out = check_boots.run(model, args.trials, args.seed, share,
                                      paths=(check_boots.SHIPPED,), conditions=("slow20",),
                                      size=cells)
                print(f"looks every {step}, {rule}, {cells} cells, {share:.0%} between boots "
                      f"({time.monotonic() - t0:.0f} s):\n  {row(out[check_boots.SHIPPED])}",
                      flush=True)
    set_step(sequential.STEP)
    sequential.FAMILY_FUTILE = shipped


if __name__ == "__main__":
    main()
