"""Would the cell's own history of boots buy the check power early (issue 41
items 3 and 4)? The shipped check tests one repetition a boot with Student's
t on the cell's own variance: at the first look, 5 a side, 8 degrees of
freedom. A host that has measured the same cell over many boots before knows
that variance far better. This bench gives every cell the best history there
could be, the model's true variance of one boot's value (the pool's log
variance over 1 - the share between boots) worth `--history` degrees of
freedom, joined to the cell's own as the moderated t joins the family's
(verdict.VariancePrior), and runs the shipped check's loop with it. History
0 is the check as shipped. Lognormal CV 10% model, each pool rescaled to
exactly that CV on the log scale so that the truth is known; figures in
brackets are 95% Wilson intervals; bench/accuracy/CHECK-STOP.md keeps what
it printed.

    .venv/bin/python bench/accuracy/history_prior.py --trials 1000 --cells 3 11 \
        --history 0 30 100 --steps 5 3

It is an upper bound of what the lever can buy: a real history's variance is
an estimate, and a host's noise moves.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).parent))

import check_boots  # noqa: E402
import simulate  # noqa: E402
from futility import row  # noqa: E402
from look_step import set_step  # noqa: E402
from iowatch.stats import sequential, verdict  # noqa: E402

CV = 0.10
SHIPPED = verdict._on_repetitions


def exact_cv_model() -> list:
    """The lognormal model's cells, each pool's logs rescaled to sd exactly
    sqrt(log(1 + CV²)) (its mean kept), with exact slowdowns."""
    sigma = math.sqrt(math.log(1 + CV ** 2))
    cells = []
    for c in simulate.lognormal_cells(CV):
        logs = np.log(c.aa)
        cells.append(replace(c, aa=np.exp(logs.mean() + (logs - logs.mean()) / logs.std(ddof=1)
                                          * sigma)))
    return simulate.exact_slowdowns(cells)


def with_history(df: float, share: float) -> None:
    """The verdict's test on repetitions joins the true variance of one boot's
    value, worth `df` degrees of freedom, to the cell's own (0: as shipped)."""
    if df <= 0:
        verdict._on_repetitions = SHIPPED
        return
    prior = verdict.VariancePrior(df, math.log(1 + CV ** 2) / (1 - share))

    def on_repetitions(xb, xc, boots, recorded):
        se, t_df, sd = verdict._t_scale(xb, xc, prior)
        return float(xc.mean() - xb.mean()), se, t_df, sd, {}
    verdict._on_repetitions = on_repetitions


def measure(model: list, label: str, args, cells: int, share: float) -> None:
    """One row: the shipped check's path on `model`, clean and slowed checks
    (args: trials, seed, conditions), printed after `label`."""
    t0 = time.monotonic()
    out = check_boots.run(model, args.trials, args.seed, share, paths=(check_boots.SHIPPED,),
                          conditions=tuple(args.conditions), size=cells)
    print(f"{label}, {cells} cells, {share:.0%} between boots ({time.monotonic() - t0:.0f} s):"
          f"\n  {row(out[check_boots.SHIPPED])}", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=1000)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--cells", type=int, nargs="*", default=[3, 11])
    p.add_argument("--shares", type=float, nargs="*", default=[0.25, 0.40])
    p.add_argument("--history", type=float, nargs="*", default=[0, 30, 100],
                   help="the history's degrees of freedom (0: the check as shipped)")
    p.add_argument("--steps", type=int, nargs="*", default=[sequential.STEP])
    p.add_argument("--conditions", nargs="*", default=["slow20", "slow10"])
    args = p.parse_args()
    model = exact_cv_model()
    for step in args.steps:
        set_step(step)
        for df in args.history:
            for cells in args.cells:
                for share in args.shares:
                    with_history(df, share)
                    measure(model, f"looks every {step}, history {df:g} df", args, cells, share)
    with_history(0, 0)
    set_step(sequential.STEP)


if __name__ == "__main__":
    main()
